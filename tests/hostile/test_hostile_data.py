"""Issue 23, hostile inputs round 4, on the data side: manifests, BEIR sources, ids, qrels, the corpus
reader (titles, resume fingerprint), the corpus run's work folder, question text bounds (NUL, lone
surrogates, size) and JSON line separators. Each test fails on the code before its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from conftest import need
from benchmark_files import jsonl, qrels
from corpus_toy import TESTS, TOY, beir_side, make_corpus, rows
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.audit.corpus.run import AUDIT, WORK, CorpusOptions, Phases, run_corpus_audit
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.transactions import FAULT_ENV

runner = CliRunner()
HERE = Path(__file__).resolve().parent  # a subprocess imports this module's phases from here

PADDED = [("001", "What is the notice period?", "Wat is de opzegtermijn?", "010"),
          ("002", "Who pays for the roof?", "Wie betaalt het dak?", "020")]


def padded_benchmark(root: Path, rows=PADDED) -> Path:
    """An English -> Dutch BEIR benchmark whose ids are all digits with leading zeros."""
    for lang, col in (("en", 1), ("nl", 2)):
        jsonl(root / lang / "queries.jsonl", [{"_id": r[0], "text": r[col]} for r in rows])
        qrels(root / lang / "qrels" / "test.tsv", [(r[0], r[3], 1) for r in rows])
        jsonl(root / lang / "corpus.jsonl", [{"_id": r[3], "title": "", "text": f"{lang} document {r[3]} on rent."}
                                             for r in rows] + [{"_id": "030", "title": "", "text": f"{lang} other."}])
    manifest = root / "padded.yaml"
    manifest.write_text("name: padded\nsource: {path: en, lang: en, format: beir}\n"
                        "target: {path: nl, lang: nl, format: beir}\n", encoding="utf-8")
    return manifest


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------ b. zero-padded ids stay strings

def test_zero_padded_ids_stay_strings_and_a_perfect_run_scores_one(tmp_path):
    manifest = padded_benchmark(tmp_path)
    ds = load_dataset(str(manifest))
    assert [p.id for p in ds.pairs] == ["001", "002"] and ds.pairs[0].article_ids == ("010",)
    assert ds.corpus.ids == ("010", "020", "030")
    runs = tmp_path / "runs"
    runs.mkdir()
    for lang in ("en", "nl"):
        (runs / f"bm25_{lang}.trec").write_text("".join(f"{q} Q0 {d} 1 2.0 bm25_{lang}\n{q} Q0 030 2 1.0 bm25_{lang}\n"
                                                        for q, _, _, d in PADDED), encoding="utf-8")
    res = invoke("eval", "--dataset", manifest, "--split", "test", "--run", f"bm25_en={runs / 'bm25_en.trec'}",
                 "--run", f"bm25_nl={runs / 'bm25_nl.trec'}", "--out", tmp_path / "ev")
    assert res.exit_code == 0, res.output
    metrics = pd.read_csv(tmp_path / "ev" / "metrics.csv")
    full = metrics[metrics.subset == "full"]
    assert len(full) and (full["value"] == 1.0).all(), full[["system", "metric", "value"]]
    # the tool accepts its own corpus audit of the benchmark, and a release keeps the ids as written
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", tmp_path / "corpus", "--workers", "1")
    assert res.exit_code == 0, res.output
    res = invoke("audit", "--dataset", manifest, "--split", "test", "--out", tmp_path / "audit",
                 "--corpus-audit", tmp_path / "corpus" / "corpus_audit.parquet")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "audit" / "audit.csv").read_text(encoding="utf-8").splitlines()[1].startswith("001,")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict,corrected_nl\n001,correct,\n002,legal,Wie betaalt de herstelling van het dak?\n",
                        encoding="utf-8")
    res = invoke("release", "--dataset", manifest, "--verdicts", verdicts, "--audit", tmp_path / "audit" / "audit.csv",
                 "--out", tmp_path / "rel")
    assert res.exit_code == 0, res.output
    released = pd.read_csv(tmp_path / "rel" / "questions_nl_test.csv", dtype=str)
    assert released["id"].tolist() == ["001", "002"] and released["article_ids"].tolist() == ["010", "020"]
    assert (tmp_path / "rel" / "CHANGELOG.csv").read_text(encoding="utf-8").splitlines()[1].startswith("002,")


# ------------------------------------------------------------------ c, d. manifest paths and keys

def _manifest(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_relative_path_is_read_beside_the_manifest_only(tmp_path, monkeypatch):
    padded_benchmark(tmp_path)  # en/ and nl/ in tmp_path, the current folder
    monkeypatch.chdir(tmp_path)
    manifest = _manifest(tmp_path / "sub" / "m.yaml", "name: x\nsource: {path: en, lang: en, format: beir}\n"
                                                      "target: {path: nl, lang: nl, format: beir}\n")
    for command in (["validate"], ["audit", "corpus", "--out", str(tmp_path / "out")]):
        res = invoke(*command, "--dataset", manifest)
        assert res.exit_code == 2 and res.output.strip().splitlines() == [
            f"error: {manifest}: source.path: path does not exist: en (looked for {tmp_path / 'sub' / 'en'}; "
            "a hub dataset id is owner/name)"], res.output
    assert not (tmp_path / "out").exists()


def test_a_missing_local_side_is_not_taken_for_a_hub_id(tmp_path):
    padded_benchmark(tmp_path)
    for path in ("scifact-nl", "./nl-missing", "../elsewhere/nl", str(tmp_path / "absent"), "a/b/c"):
        manifest = _manifest(tmp_path / "m.yaml", f"name: x\nsource: {{path: en, lang: en, format: beir}}\n"
                                                  f"target: {{path: {path!r}, lang: nl, format: beir}}\n")
        res = invoke("validate", "--dataset", manifest)
        assert res.exit_code == 2 and f"target.path: path does not exist: {path} (" in res.output, res.output
        assert "hf:" not in res.output and "ConnectionError" not in res.output


def test_a_side_holding_only_a_corpus_is_a_beir_folder(tmp_path):
    padded_benchmark(tmp_path)
    (tmp_path / "nl" / "queries.jsonl").unlink()
    for p in (tmp_path / "nl" / "qrels").iterdir():
        p.unlink()
    res = invoke("validate", "--dataset", tmp_path / "padded.yaml")
    assert res.exit_code == 1 and f"error: {tmp_path / 'nl' / 'queries.jsonl'}: cannot read file: not found" in res.output
    assert "hf:" not in res.output, res.output
    res = invoke("audit", "corpus", "--dataset", tmp_path / "padded.yaml", "--out", tmp_path / "out", "--workers", "1")
    assert res.exit_code == 0 and "audited 3 documents" in res.output, res.output


def test_a_key_written_twice_in_a_manifest_is_refused_naming_key_and_line(tmp_path):
    padded_benchmark(tmp_path)
    base = "name: x\nsource: {path: en, lang: en, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n"
    for text, key, line, first in ((base + "name: y\n", "name", 4, 1),
                                   (base.replace("format: beir}", "format: beir, path: nl}", 1), "path", 2, 2),
                                   (base.replace("target: {path: nl, lang: nl, format: beir}",
                                                 "target:\n  path: nl\n  lang: nl\n  lang: en\n  format: beir"), "lang", 6, 5)):
        manifest = _manifest(tmp_path / "m.yaml", text)
        res = invoke("validate", "--dataset", manifest)
        assert res.exit_code == 2 and res.output.strip() == (
            f"error: {manifest}, row {line}: dataset manifest: key {key!r} appears twice (first on line {first}); "
            "write it once"), res.output


# ------------------------------------------------------------------ e. a qrels file without header

def test_a_qrels_file_without_header_keeps_its_first_judgment(tmp_path):
    manifest = padded_benchmark(tmp_path)
    for lang in ("en", "nl"):  # no header line: the first line is a judgment
        (tmp_path / lang / "qrels" / "test.tsv").write_text("001\t010\t1\n002\t020\t1\n", encoding="utf-8")
    ds = load_dataset(str(manifest))
    assert [(p.id, p.article_ids) for p in ds.pairs] == [("001", ("010",)), ("002", ("020",))]
    for header in ("query-id\tcorpus-id\tscore\n", "qid\tdocid\trel\n", "q\td\tscore\n"):
        for lang in ("en", "nl"):
            (tmp_path / lang / "qrels" / "test.tsv").write_text(header + "001\t010\t1\n002\t020\t1\n", encoding="utf-8")
        assert len(load_dataset(str(manifest)).pairs) == 2, header


# ------------------------------------------------------------------ g. text no output can hold; line ends

def _edit_query(root: Path, lang: str, index: int, text: str) -> Path:
    path = root / lang / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[index] = json.dumps({"_id": PADDED[index][0], "text": text})  # ASCII JSON: \u0000, \ud800 escaped
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_a_question_with_an_escaped_nul_or_a_lone_surrogate_is_one_line_and_nothing_written(tmp_path):
    manifest = padded_benchmark(tmp_path)
    for bad, problem in (("\x00", "a NUL character (\\u0000) at character 11"),
                         ("\ud800", "a lone surrogate (\\ud800) at character 11, not a character")):
        path = _edit_query(tmp_path, "nl", 1, f"Wie betaalt{bad} het dak?")
        for command in ("validate", "audit"):
            res = invoke(command, "--dataset", manifest, *(["--out", tmp_path / "out"] if command == "audit" else []))
            assert res.exit_code == (1 if command == "validate" else 2), res.output
            assert f"error: {path}, row 2, id 002: question holds {problem}" in res.output
            assert "Traceback" not in res.output and not isinstance(res.exception, UnicodeError)
        assert not (tmp_path / "out").exists()


def test_a_document_with_a_lone_surrogate_is_one_line_and_leaves_no_work_folder(tmp_path):
    manifest = padded_benchmark(tmp_path)
    corpus = tmp_path / "en" / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("en other", "en \\udc80 other"), encoding="utf-8")
    out = tmp_path / "out"
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", out, "--workers", "1")
    assert res.exit_code == 2 and res.output.strip() == (
        f"error: {corpus}, row 3, id 030: text holds a lone surrogate (\\udc80) at character 3, not a character"), res.output
    assert not out.exists()


def test_line_and_paragraph_separators_inside_a_json_string_are_text_not_line_ends(tmp_path):
    manifest = padded_benchmark(tmp_path)
    _edit_query(tmp_path, "nl", 0, "Wat is de\u2028opzeg\x85termijn\x0c?")
    bad = _edit_query(tmp_path, "en", 1, "")  # an error on line 2 must be named line 2
    res = invoke("validate", "--dataset", manifest)
    assert f"error: {bad}, row 2, id 002: empty question text" in res.output, res.output
    assert "not a JSON line" not in res.output
    _edit_query(tmp_path, "en", 1, PADDED[1][1])
    ds = load_dataset(str(manifest))
    assert ds.pairs[0].target == "Wat is de\u2028opzeg\x85termijn\x0c?"
    bt = tmp_path / "bt.jsonl"
    bt.write_text(json.dumps({"id": "001", "backtranslation": "What is the\u2028notice period?"}, ensure_ascii=False)
                  + "\n" + json.dumps({"id": "002", "backtranslation": "Who pays the roof?"}) + "\n", encoding="utf-8")
    res = invoke("audit", "--dataset", manifest, "--backtranslations", bt, "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ a question too long to embed

def test_an_over_long_question_is_refused_before_any_work_unless_the_bound_is_raised(tmp_path):
    from bbsard_audit.audit.pipeline import check_question_lengths

    manifest = padded_benchmark(tmp_path)
    _edit_query(tmp_path, "nl", 1, "Wie betaalt het dak? " * 1_000)  # 20,999 characters once stripped
    res = invoke("audit", "--dataset", manifest, "--out", tmp_path / "out")
    assert res.exit_code == 2 and res.output.strip() == (
        "error: padded, id 002: nl question of 20,999 characters is longer than --max-question-chars 20,000; "
        "refused (raise --max-question-chars if it is one)"), res.output
    assert not (tmp_path / "out").exists()
    ds = load_dataset(str(manifest))
    check_question_lengths(ds, ds.pairs, 21_000)  # a raised bound lets it through (embedding it takes a minute)
    res = invoke("audit", "--dataset", manifest, "--out", tmp_path / "out", "--max-question-chars", "20")
    assert res.exit_code == 2 and "id 001: en question of 26 characters is longer than --max-question-chars 20;" \
        in res.output, res.output


# ------------------------------------------------------------------ the corpus run: resume key, work folder, options

def _corpus_run(manifest: Path, out: Path, fault: str | None = None, phases: str = "TOY", **kw) -> subprocess.Popen:
    """`run_corpus_audit` with toy phases (TOY, the engine tests', or SLOW) in a process of its own
    (`fault`: the BBSARD_AUDIT_FAULT hook, e.g. kill:N at the N-th file operation)."""
    code = (f"import sys; sys.path[:0] = [{str(HERE)!r}, {str(TESTS)!r}]; from test_hostile_data import {phases}; "
            "from bbsard_audit.audit.corpus.run import CorpusOptions, run_corpus_audit; "
            f"r = run_corpus_audit({str(manifest)!r}, __import__('pathlib').Path({str(out)!r}), "
            f"CorpusOptions(**{{'workers': 1, **{kw!r}}}), phases={phases}, say=print); print('resumed', r.resumed)")
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV} | ({FAULT_ENV: fault} if fault else {})
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _saved_copy(folder: Path, docs: list[dict]) -> None:
    datasets = need("datasets")
    datasets.DatasetDict({"corpus": datasets.Dataset.from_list(docs)}).save_to_disk(str(folder / "corpus"))


def test_a_local_hf_copy_pinned_by_revision_that_changed_restarts_cleanly(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=300, shuffle=False)
    nl = [json.loads(line) for line in (tmp_path / "c" / "nl" / "corpus.jsonl").read_text().splitlines()]
    _saved_copy(tmp_path / "c" / "hf-nl", nl)
    manifest.write_text(manifest.read_text().replace("{path: nl,", "{path: hf-nl, revision: v1,"))
    killed = _corpus_run(manifest, tmp_path / "out", "kill:3", batch_size=50)
    killed.communicate(timeout=120)
    assert killed.returncode == -9 and any((tmp_path / "out" / WORK / "map").iterdir())
    shutil.rmtree(tmp_path / "c" / "hf-nl")  # the copy changes; its pin `revision: v1` does not
    _saved_copy(tmp_path / "c" / "hf-nl", [{**d, "text": d["text"].replace("huurder", "verhuurder")} for d in nl])
    again = _corpus_run(manifest, tmp_path / "out", batch_size=50)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert stdout.splitlines()[0] == ("starting fresh: revision (a fingerprint of the files read) changed since the "
                                      "interrupted run; its finished batches are discarded") and "resumed 0" in stdout
    fresh = run_corpus_audit(str(manifest), tmp_path / "fresh", CorpusOptions(batch_size=50, workers=1), phases=TOY)
    assert fresh.resumed == 0 and rows(tmp_path / "out" / AUDIT) == rows(tmp_path / "fresh" / AUDIT)


def slow_map(batch, ctx):
    """The toy map, 4 s per part: a running first run sits in its map phase, nothing mapped yet."""
    time.sleep(4)
    return TOY.map_batch(batch, ctx)


SLOW = Phases(slow_map, TOY.reduce_stats, TOY.score_batch, TOY.context)


def test_a_second_run_into_the_same_out_is_refused_and_leaves_the_first_ones_work_folder(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=200)
    out = tmp_path / "out"
    first = _corpus_run(manifest, out, batch_size=100, phases="SLOW")
    deadline = time.monotonic() + 60
    while not (out / WORK / "input.json").exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    assert not any((out / WORK / "map").iterdir())  # mapping its first part
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", out, "--workers", "1")
    assert res.exit_code == 2 and res.output.strip() == (
        f"error: {out}: another `bbsard-audit audit corpus` is running on this --out; wait for it to finish or "
        "choose another --out"), res.output
    assert (out / WORK / "input.json").exists() and (out / WORK / "key.json").exists()
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0 and "Traceback" not in stderr, stderr
    assert len(rows(out / AUDIT)) == 200 and not (out / WORK).exists()


def test_bad_option_values_are_refused_before_any_work(tmp_path):
    manifest = make_corpus(tmp_path / "c", n=50)
    for options, message in ((["--review-budget", "-1"], "--review-budget and --control must be >= 0"),
                             (["--review-budget", "5", "--control", "-2"], "--review-budget and --control must be >= 0"),
                             (["--workers", "0"], "--workers must be at least 1")):
        started = time.monotonic()
        res = invoke("audit", "corpus", "--dataset", manifest, "--out", tmp_path / "out", *options)
        assert res.exit_code == 2 and res.output.strip() == f"error: {message}", res.output
        assert not (tmp_path / "out").exists() and time.monotonic() - started < 5
    res = invoke("audit", "--dataset", padded_benchmark(tmp_path / "q"), "--out", tmp_path / "out", "--review-budget", "-1")
    assert res.exit_code == 2 and res.output.strip() == "error: --review-budget and --control must be >= 0"
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ f. a document is its title and its text

def test_the_corpus_audit_reads_titles_on_both_sides_and_its_spans_index_the_document(tmp_path):
    from bbsard_audit.base.contracts import corpus_audit

    text = ("The tenant gives three months notice by registered letter. The landlord may not refuse. "
            "The deposit is returned within two months.")
    vertaling = ("De huurder zegt drie maanden op met een aangetekende brief. De verhuurder mag niet weigeren. "
                 "De waarborg wordt binnen twee maanden terugbetaald.")
    docs = {  # id: (English title, English text, Dutch title, Dutch text)
        "d1": ("Notice", text, "Hier is de vertaling: Opzegging", vertaling),  # a preface in the title only
        "d2": ("Deposit rules", text, "Waarborgregels Ã© Ã¨", vertaling),  # mojibake in the title only
        "d3": ("Article 5 of the Housing Code", "", "Artikel 5 van de Huisvestingscode", ""),  # title-only documents
        "d4": ("Repairs", text, "Herstellingen", vertaling),
    }
    for lang, (t, x) in (("en", (0, 1)), ("nl", (2, 3))):
        beir_side(tmp_path / lang, [{"_id": k, "title": v[t], "text": v[x]} for k, v in docs.items()])
    manifest = _manifest(tmp_path / "m.yaml", "name: titles\nsource: {path: en, lang: en, format: beir}\n"
                                              "target: {path: nl, lang: nl, format: beir}\n")
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", tmp_path / "out", "--workers", "1")
    assert res.exit_code == 0, res.output
    frame = corpus_audit.read(tmp_path / "out" / AUDIT).set_index("id")
    assert "doc_meta_text" in frame.loc["d1", "flags"] and "doc_mojibake" in frame.loc["d2", "flags"]
    assert "doc_empty" not in frame.loc["d3", "flags"]
    assert not frame.loc["d4", "flags"]
    for doc in ("d1", "d2"):
        title, body = docs[doc][2:]
        document = f"{title} {body}"
        spans = [s for s in json.loads(frame.loc[doc, "spans"]) if s["side"] == "nl"]
        assert spans and all(document[s["start"]:s["end"]] == s["text"] for s in spans), spans
        assert frame.loc[doc, "target_chars"] == len(document)
