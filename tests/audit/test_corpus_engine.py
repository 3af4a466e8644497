"""The corpus audit's engine: the streaming join of a corpus and its translation (bad input in one
line), local and Ray engines giving the same rows, resume after a kill, crash-consistent outputs,
memory independent of the corpus size.

The phase functions (`toy_*`, tests/corpus_toy.py) are a small stand-in of audit/corpus/documents.py
with its interface (one output row per input row, corpus statistics, scoring), so the engine is tested
on its own; the real checks are exercised by tests/audit/test_corpus_checks.py and the CLI test below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bbsard_audit.audit.corpus import reader
from bbsard_audit.audit.corpus import run as run_module
from bbsard_audit.audit.corpus.run import AUDIT, META, QUEUE, WORK, CorpusOptions, Phases, run_corpus_audit
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.transactions import FAULT_ENV, settle
from conftest import need
from corpus_toy import TESTS, TOY, make_corpus, rows, toy_context, toy_map, toy_reduce, toy_score


# ------------------------------------------------------------------ the reader


def test_join_streams_both_sides_in_source_order_whatever_the_target_order(tmp_path, monkeypatch):
    manifest = make_corpus(tmp_path / "c", n=500)
    corpus = reader.open_corpus(str(manifest))
    assert (corpus.source, str(corpus.pair)) == ("corpus.yaml", "en->nl")
    one = reader.join_batches(corpus, tmp_path / "one", 64)
    monkeypatch.setattr(reader, "PARTITION_BYTES", 4096)  # many partitions: the same batches
    many = reader.join_batches(corpus, tmp_path / "many", 64)
    assert [r for _, r in one] == [64] * 7 + [52] and [r for _, r in many] == [r for _, r in one]
    got = pa.concat_tables(pq.read_table(p) for p, _ in many)
    assert got.schema == reader.INPUT_SCHEMA
    assert got.equals(pa.concat_tables(pq.read_table(p) for p, _ in one))
    assert got["id"].to_pylist() == [f"d{i}" for i in range(500)]
    src = {d["_id"]: d for d in map(json.loads, (tmp_path / "c" / "nl" / "corpus.jsonl").read_text().splitlines())}
    assert all(r["target_text"] == " ".join(filter(None, (src[r["id"]]["title"], src[r["id"]]["text"])))  # title text
               and r["target_title"] == src[r["id"]]["title"] for r in got.to_pylist())
    assert not (tmp_path / "many" / "join").exists()  # the partitions are temporary


def test_csv_folder_is_a_source(tmp_path):
    from bbsard_audit.base.sources.sample import sample_dir

    corpus = reader.open_corpus(str(sample_dir()))
    parts = reader.join_batches(corpus, tmp_path / "in", 1000)
    table = pq.read_table(parts[0][0])
    assert str(corpus.pair) == "fr->nl" and table.num_rows > 0 and table["id"][0].as_py() == "1001"
    assert table["source_text"][0].as_py().startswith("Le bien loué")


def _bad(tmp_path: Path, src_lines: list[str], tgt_lines: list[str] | None = None) -> Path:
    manifest = make_corpus(tmp_path / "c", n=5, shuffle=False)
    if src_lines:
        with open(tmp_path / "c" / "en" / "corpus.jsonl", "a") as f:
            f.write("".join(line + "\n" for line in src_lines))
    if tgt_lines:
        with open(tmp_path / "c" / "nl" / "corpus.jsonl", "a") as f:
            f.write("".join(line + "\n" for line in tgt_lines))
    return manifest


BAD = {
    "not JSON": (['{"_id": "x", "text": "a"'], None, "en/corpus.jsonl, row 6: not a JSON line"),
    "missing _id": (['{"text": "a"}'], None, "en/corpus.jsonl, row 6: missing _id"),
    "missing text": (['{"_id": "x7", "title": "a"}'], None, "en/corpus.jsonl, row 6, id x7: missing text"),
    "duplicate id": (['{"_id": "d2", "text": "again"}'], ['{"_id": "d2", "text": "opnieuw"}'],
                     "en/corpus.jsonl, row 6, id d2: duplicate id (first on line 3)"),
    "source only": (['{"_id": "d9", "text": "a"}'], None, "en/corpus.jsonl, row 6, id d9: id only on the source side"),
    "target only": (None, ['{"_id": "d9", "text": "a"}'], "nl/corpus.jsonl, row 6, id d9: id only on the target side"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_file_line_and_id(tmp_path, case):
    src, tgt, expected = BAD[case]
    manifest = _bad(tmp_path, src or [], tgt)
    with pytest.raises(InputError) as err:
        run_corpus_audit(str(manifest), tmp_path / "out", phases=TOY)
    assert expected in err.value.one_line() and "\n" not in err.value.one_line()
    assert not (tmp_path / "out").exists()  # nothing written, not even the checkpoint folder


def test_bad_input_keeps_an_existing_empty_out_folder(tmp_path):
    manifest = _bad(tmp_path, ['{"_id": "d1"}'])
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError, match="missing text"):
        run_corpus_audit(str(manifest), tmp_path / "out", phases=TOY)
    assert (tmp_path / "out").is_dir() and not any((tmp_path / "out").iterdir())  # the user's folder stays


def test_a_100_mb_document_is_refused_without_being_loaded(tmp_path):
    manifest = _bad(tmp_path, [])
    with open(tmp_path / "c" / "en" / "corpus.jsonl", "ab") as f:
        f.write(b'{"_id": "huge", "text": "' + b"a" * 100_000_000 + b'"}\n')
    tracemalloc.start()
    with pytest.raises(InputError) as err:
        reader.join_batches(reader.open_corpus(str(manifest)), tmp_path / "in", 10)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "en/corpus.jsonl, row 6, id huge: document of over" in err.value.one_line()
    assert "--max-doc-chars 1,000,000" in err.value.one_line() and peak < 30e6
    with pytest.raises(InputError, match=r"row 1, id d0: document of [0-9]+ characters is longer than --max-doc-chars 20"):
        reader.join_batches(reader.open_corpus(str(manifest), max_doc_chars=20), tmp_path / "in", 10)


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    manifest = _bad(tmp_path, ['{"_id": "d1", "text": "dup"}'])
    result = CliRunner().invoke(app, ["audit", "corpus", "--dataset", str(manifest), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "row 6, id d1: duplicate id" in lines[0]
    assert not (tmp_path / "out").exists()


def test_unreachable_ray_address_is_one_line_before_the_corpus_is_read(tmp_path, monkeypatch):
    need("ray")
    manifest = make_corpus(tmp_path / "c", n=5)
    joined = []
    monkeypatch.setattr(run_module, "join_batches", lambda *a, **k: joined.append(a) or [])
    with pytest.raises(InputError) as err:
        run_corpus_audit(str(manifest), tmp_path / "out", CorpusOptions(engine="ray", ray_address="127.0.0.1:9"),
                         phases=TOY)
    assert err.value.one_line().startswith("--ray-address 127.0.0.1:9: cannot reach the Ray cluster")
    assert joined == [] and not (tmp_path / "out").exists()


# ------------------------------------------------------------------ engines, resume, crash


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray (num_cpus=2) for the module: starting it takes seconds."""
    ray = need("ray", "ray not installed (the scale extra, included in test)")
    for module in (sys.modules[__name__], sys.modules[TOY.map_batch.__module__]):  # workers cannot import
        ray.cloudpickle.register_pickle_by_value(module)  # a test module or a tests/ helper
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def test_local_and_ray_engines_give_identical_rows(tmp_path, ray_session):
    manifest = make_corpus(tmp_path / "c", n=900)
    local = run_corpus_audit(str(manifest), tmp_path / "local", CorpusOptions(batch_size=100), phases=TOY)
    on_ray = run_corpus_audit(str(manifest), tmp_path / "ray", CorpusOptions(engine="ray", batch_size=100), phases=TOY)
    assert rows(tmp_path / "local" / AUDIT) == rows(tmp_path / "ray" / AUDIT)
    assert local.n_docs == on_ray.n_docs == 900 and local.n_flagged == on_ray.n_flagged > 0
    assert local.flag_counts == on_ray.flag_counts and set(local.flag_counts) == {"doc_empty", "doc_truncated"}
    meta = json.loads((tmp_path / "ray" / META).read_text())
    assert meta["engine"] == "ray" and meta["dataset"]["source"] == "corpus.yaml" and meta["n_docs"] == 900
    assert not (tmp_path / "local" / WORK).exists() and not (tmp_path / "ray" / WORK).exists()


def slow_map(batch: pa.Table, ctx) -> pa.Table:
    import time

    time.sleep(0.2)  # each part takes long enough for both workers to get some
    return toy_map(batch, ctx)


def test_the_cli_runs_the_real_checks_with_the_same_rows_on_both_engines(tmp_path, ray_session):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app
    from bbsard_audit.base.contracts import corpus_audit

    manifest = make_corpus(tmp_path / "c", n=400)
    outs = {}
    for engine in ("local", "ray"):
        outs[engine] = tmp_path / engine
        result = CliRunner().invoke(app, ["audit", "corpus", "--dataset", str(manifest), "--out", str(outs[engine]),
                                          "--engine", engine, "--batch-size", "64", "--review-budget", "10",
                                          "--control", "5"])
        assert result.exit_code == 0, result.output
        assert "audited 400 documents" in result.output
    frames = {e: corpus_audit.read(o / AUDIT) for e, o in outs.items()}
    assert frames["local"].equals(frames["ray"]) and frames["local"]["flagged"].sum() > 0
    assert "doc_empty" in ";".join(frames["local"]["flags"])
    meta = json.loads((outs["ray"] / META).read_text())
    assert "doc_misaligned: not run (no embedder)" in meta["checks_unavailable"]
    queue = (outs["local"] / QUEUE).read_text()
    assert queue == (outs["ray"] / QUEUE).read_text() and queue.count(",control,") == 5


def test_local_engine_uses_worker_processes(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=400)
    seen = []
    run_corpus_audit(str(manifest), tmp_path / "out", CorpusOptions(batch_size=50, workers=2),
                     phases=Phases(slow_map, lambda m, ctx=None: seen.append(pa.concat_tables(list(m))) or toy_reduce([seen[-1]]),
                                   toy_score, toy_context))
    pids = set(seen[0]["pid"].to_pylist())
    assert len(pids) == 2 and os.getpid() not in pids


def _run_script(manifest: Path, out: Path, fault: str | None, **kw) -> subprocess.CompletedProcess:
    code = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); from corpus_toy import TOY; "
            "from bbsard_audit.audit.corpus.run import CorpusOptions, run_corpus_audit; "
            f"r = run_corpus_audit({str(manifest)!r}, __import__('pathlib').Path({str(out)!r}), "
            f"CorpusOptions(**{kw!r}), phases=TOY, say=print); print('resumed', r.resumed)")
    env = {**os.environ, **({FAULT_ENV: fault} if fault else {})}
    env.pop(FAULT_ENV, None) if not fault else None
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_killed_run_resumes_from_its_finished_batches(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=600)
    whole = run_corpus_audit(str(manifest), tmp_path / "whole", CorpusOptions(batch_size=50, workers=1), phases=TOY)
    killed = _run_script(manifest, tmp_path / "out", "kill:5", batch_size=50, workers=1)
    assert killed.returncode == -9, killed.stderr
    assert len(list((tmp_path / "out" / WORK / "map").glob("*.arrow"))) == 4 and not (tmp_path / "out" / AUDIT).exists()
    again = _run_script(manifest, tmp_path / "out", None, batch_size=50, workers=1)
    assert again.returncode == 0, again.stderr
    assert "resuming: 4 of 12 batches already mapped" in again.stdout and "resumed 4" in again.stdout
    assert rows(tmp_path / "out" / AUDIT) == rows(tmp_path / "whole" / AUDIT) and whole.resumed == 0
    assert not (tmp_path / "out" / WORK).exists()


def test_other_arguments_start_fresh_and_say_so(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=200)
    assert _run_script(manifest, tmp_path / "out", "kill:2", batch_size=50, workers=1).returncode == -9
    said = []
    result = run_corpus_audit(str(manifest), tmp_path / "out", CorpusOptions(batch_size=40, workers=1), phases=TOY,
                              say=said.append)
    assert result.resumed == 0 and said == ["starting fresh: batch_size changed since the interrupted run; "
                                            "its finished batches are discarded"]


def test_a_crash_while_writing_leaves_the_previous_or_the_new_outputs(tmp_path):
    from bbsard_audit.base.io import digest_of

    manifest = make_corpus(tmp_path / "c", n=120)
    out = tmp_path / "out"
    run_corpus_audit(str(manifest), out, CorpusOptions(batch_size=60, workers=1), phases=TOY)
    before = {p.name: p.read_bytes() for p in (out / AUDIT, out / META)}
    nl = tmp_path / "c" / "nl" / "corpus.jsonl"
    nl.write_text(nl.read_text().replace("huurder", "verhuurder"))  # another input: other outputs
    run_corpus_audit(str(manifest), tmp_path / "new", CorpusOptions(batch_size=60, workers=1), phases=TOY)
    new = (tmp_path / "new" / AUDIT).read_bytes()
    outcomes = []
    for n in range(3, 60, 3):  # past the 2 map parts: the fault lands in the output transaction
        killed = _run_script(manifest, out, f"kill:{n}", batch_size=60, workers=1)
        assert killed.returncode in (0, -9), killed.stderr
        settle(out)
        now = {p.name: p.read_bytes() for p in (out / AUDIT, out / META)}
        described = json.loads(now[META])["files"][AUDIT]["sha256"]
        assert described == digest_of(out / AUDIT), f"kill:{n}: the sidecar describes another parquet"
        if now == before:
            outcomes.append("previous")
        else:
            assert now[AUDIT] == new, f"kill:{n} left a mix"
            outcomes.append("new")
            if killed.returncode == 0:
                break
    assert outcomes[0] == "previous" and outcomes[-1] == "new" and len(outcomes) > 2, outcomes


def test_peak_memory_does_not_grow_with_the_corpus(tmp_path, monkeypatch):
    """The join's Python memory at 10x the documents stays within 1.5x (partitions stay ~64 KiB)."""
    monkeypatch.setattr(reader, "PARTITION_BYTES", 64 << 10)
    monkeypatch.setattr(reader, "FLUSH_BYTES", 64 << 10)
    peaks = []
    for n in (2_000, 20_000):
        corpus = reader.open_corpus(str(make_corpus(tmp_path / f"c{n}", n=n)))
        tracemalloc.start()
        reader.join_batches(corpus, tmp_path / f"in{n}", 256)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_progress_shows_documents_per_second_on_a_terminal_and_nothing_in_a_log(tmp_path):
    import io

    from rich.console import Console

    from bbsard_audit.audit.corpus.run import RunProgress

    manifest = make_corpus(tmp_path / "c", n=300)
    shown = {}
    for terminal in (True, False):
        sink = io.StringIO()
        console = Console(file=sink, force_terminal=terminal, width=120)
        run_corpus_audit(str(manifest), tmp_path / f"out{terminal}", CorpusOptions(batch_size=50, workers=1), phases=TOY,
                         progress=RunProgress(console))
        shown[terminal] = sink.getvalue()
    assert "docs/s" in shown[True] and "map" in shown[True] and "300/300" in shown[True]
    assert shown[False] == ""


def test_an_embedder_that_cannot_load_is_one_line_before_the_corpus_is_read(tmp_path, monkeypatch):
    need("sentence_transformers", "the ml extra")
    manifest = make_corpus(tmp_path / "c", n=5)
    joined = []
    monkeypatch.setattr(run_module, "join_batches", lambda *a, **k: joined.append(a) or [])
    with pytest.raises(InputError) as err:
        run_corpus_audit(str(manifest), tmp_path / "out", CorpusOptions(embedder=f"st:{tmp_path / 'no-model'}"),
                         phases=TOY)
    assert err.value.one_line().startswith(f"cannot load sentence-transformers model '{tmp_path / 'no-model'}'")
    assert joined == [] and not (tmp_path / "out").exists()


def test_the_ray_engine_without_the_scale_extra_is_one_line_naming_the_install(tmp_path, monkeypatch):
    """Without Ray, `audit corpus --engine ray` was a 60-line ImportError traceback."""
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is absent
    manifest = make_corpus(tmp_path / "c", n=5)
    result = CliRunner().invoke(app, ["audit", "corpus", "--dataset", str(manifest), "--engine", "ray",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pip install 'bbsard-audit[scale]'" in lines[0], result.output
    assert not (tmp_path / "out").exists()
