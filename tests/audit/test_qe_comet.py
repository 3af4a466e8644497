"""`audit --qe comet:MODEL` with the real unbabel-comet in its real venv (audit/qe/env.py, built once into
the shared cache when absent) and real checkpoints that the test builds (tests/comet_tiny.py: a tiny
random XLM-R + sentencepiece tokenizer + comet UnifiedMetric, saved as checkpoints/model.ckpt +
hparams.yaml, loaded by `comet.load_from_checkpoint` as a hub checkpoint is). No hub download
(HF_HUB_OFFLINE=1). The weights are random, so the tests check that the audit carries what the model
said (scores, span offsets), never what a good model would say."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.audit.qe import env
from bbsard_audit.audit.qe.signal import WORKER, _last_error, qe_signal, word_bounds
from bbsard_audit.audit.signals import Batch
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import AUDIT, Layout
from bbsard_audit.base.dataset import load_dataset, sample_dir
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD

from conftest import local_path_leaks, missing

pytestmark = pytest.mark.comet
runner = CliRunner()
TINY = Path(__file__).resolve().parents[1] / "comet_tiny.py"


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="session")
def comet_python() -> Path:
    """The COMET venv's interpreter, built into the shared cache when absent (about a minute)."""
    try:
        return env.ensure_venv()
    except InputError as exc:
        missing(f"cannot build the COMET venv: {exc}")


@pytest.fixture(scope="module")
def offline(monkeypatch_module):
    monkeypatch_module.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def models(comet_python, offline, tmp_path_factory) -> dict[str, Path]:
    """{xcomet, kiwi}: two checkpoint folders laid out like the hub's, built by the COMET venv."""
    root = tmp_path_factory.mktemp("comet_models")
    pairs = load_dataset("sample", with_corpus=False).select("all")
    bt = [json.loads(line)["backtranslation"] for line in
          (sample_dir() / "backtranslations_nl_fr.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    (root / "sentences.txt").write_text("\n".join([t for p in pairs for t in (p.source, p.target)] + bt),
                                        encoding="utf-8")
    out = {}
    for kind in ("xcomet", "kiwi"):
        done = subprocess.run([str(comet_python), "-I", str(TINY), str(root / "sentences.txt"), str(root / kind),
                               "--kind", kind], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        out[kind] = root / kind
    return out


@pytest.fixture(scope="module")
def xcomet_audit(models, tmp_path_factory):
    """One audit of the sample with the xCOMET-style model, into a fresh cache."""
    root = tmp_path_factory.mktemp("comet_audit")
    result = _run("audit", "--dataset", "sample", "--qe", f"comet:{models['xcomet']}", "--cache-dir", root / "cache",
                  "--out", root / "out")
    assert result.exit_code == 0, result.output
    return root, result.output


def _worker(python: Path, model: Path, frame: pd.DataFrame, tmp: Path) -> list[dict]:
    requests = tmp / "requests.jsonl"
    requests.write_text("".join(json.dumps({"src": s, "mt": t}) + "\n"
                                for s, t in zip(frame["question_fr"], frame["question_nl"])), encoding="utf-8")
    done = subprocess.run([str(python), "-I", str(WORKER), str(model), "--input", str(requests)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()[1:]]


def test_audit_carries_the_models_scores_and_error_spans(xcomet_audit, models, comet_python, tmp_path):
    root, output = xcomet_audit
    frame = AUDIT.read(root / "out" / "audit.csv")  # the contract: every span's text is the question's at its offsets
    direct = _worker(comet_python, models["xcomet"], frame, tmp_path)
    assert np.allclose(frame["comet_score"], [r["score"] for r in direct], atol=1e-5)
    assert frame["comet_error_spans"].tolist() == [len(r["spans"]) for r in direct]
    qe_spans = [(row.question_nl, s) for row in frame.itertuples() for s in row.spans if s["flag"].startswith("qe_error")]
    assert qe_spans, "the tiny xCOMET-style model marked no span: the span path was not exercised"
    for text, span in qe_spans:
        assert span["side"] == "nl" and text[span["start"]:span["end"]] == span["text"] == span["text"].strip()
        assert (span["start"], span["end"]) == word_bounds(text, span["start"], span["end"])
    for row, model in zip(frame.itertuples(), direct):  # each model span lies inside a reported one
        severe = [s for s in model["spans"] if s["severity"] in ("major", "critical")]
        assert ("qe_error_major" in row.flags.split(";")) == any(
            word_bounds(row.question_nl, s["start"], s["end"])[0] < word_bounds(row.question_nl, s["start"], s["end"])[1]
            for s in severe)
    low = frame["comet_score"] < 0.6
    assert (frame["flags"].str.split(";").apply(lambda f: "qe_low" in f) == low).all()
    meta = json.loads((root / "out" / "audit.meta.json").read_text())["qe"]
    assert meta["model"].startswith("local:sha256:") and meta["model_class"] == "XCOMETMetric"
    assert meta["word_level"] and meta["n_scored"] == 40 and meta["n_cached"] == 0
    assert meta["unbabel_comet"] == env.COMET_VERSION and meta["device"] == "cpu"
    assert not local_path_leaks(root / "out", models["xcomet"])


def test_the_spans_reach_label_studio_tasks(xcomet_audit):
    from bbsard_audit.annotations.tasks import build_tasks, read_audit

    root, _ = xcomet_audit
    frame = read_audit(root / "out" / "audit.csv")
    tasks = build_tasks(frame, model_version="t", layout=Layout.of(root / "out"))
    wanted = {(int(r.id), s["start"], s["end"]) for r in frame.itertuples() for s in r.spans if s["flag"].startswith("qe_")}
    regions = {(t["data"]["question_id"], r["value"]["start"], r["value"]["end"])
               for t in tasks for r in t["predictions"][0]["result"] if r.get("to_name") == "question_nl"
               and r["type"] == "labels"}
    assert wanted and wanted <= regions


def test_a_rerun_scores_nothing_and_new_pairs_only_are_scored(xcomet_audit, models):
    root, _ = xcomet_audit
    first = pd.read_csv(root / "out" / "audit.csv")
    again = _run("audit", "--dataset", "sample", "--qe", f"comet:{models['xcomet']}", "--cache-dir", root / "cache",
                 "--out", root / "again")
    assert again.exit_code == 0, again.output
    meta = json.loads((root / "again" / "audit.meta.json").read_text())["qe"]
    assert meta["n_scored"] == 0 and meta["n_cached"] == 40
    assert pd.read_csv(root / "again" / "audit.csv")["comet_score"].tolist() == first["comet_score"].tolist()
    other = _run("audit", "--dataset", "sample", "--split", "test", "--qe", f"comet:{models['kiwi']}",
                 "--cache-dir", root / "cache", "--out", root / "kiwi")
    assert other.exit_code == 0, other.output
    kiwi = pd.read_csv(root / "kiwi" / "audit.csv")
    meta = json.loads((root / "kiwi" / "audit.meta.json").read_text())["qe"]
    assert meta["n_scored"] == len(kiwi) and meta["word_level"] is False  # another model: another key
    assert kiwi["comet_error_spans"].isna().all() and not kiwi["flags"].fillna("").str.contains("qe_error").any()
    assert kiwi["comet_score"].notna().all()


def test_calibrate_treats_the_comet_score_as_a_signal(xcomet_audit, tmp_path):
    root, _ = xcomet_audit
    result = _run("audit", "calibrate", "--audit", root / "out" / "audit.csv", "--verdicts",
                  sample_dir() / "verdicts.csv", "--out", tmp_path / "cal")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "cal" / "calibration.csv").set_index("signal")
    assert table.loc["comet_score", "direction"] == "lower_is_worse" and "qe_low" in table.index


@pytest.mark.parametrize("case, message", [
    ("spec", "--qe 'kiwi': give comet:MODEL"),
    ("no_checkpoint", "not a COMET checkpoint: needs checkpoints/model.ckpt and hparams.yaml"),
    ("broken", "the COMET worker failed: "),
    ("hub_offline", "HF_HUB_OFFLINE is set and it is not in the Hugging Face cache"),
    ("no_venv", "no COMET venv at "),
])
def test_failures_are_one_line_exit_2(case, message, models, tmp_path, monkeypatch, embedding_cache):
    model = f"comet:{models['xcomet']}"
    if case == "spec":
        model = "kiwi"
    elif case == "no_checkpoint":
        (tmp_path / "empty").mkdir()
        model = f"comet:{tmp_path / 'empty'}"
    elif case == "broken":
        shutil.copytree(models["xcomet"], tmp_path / "broken")
        (tmp_path / "broken" / "checkpoints" / "model.ckpt").write_bytes(b"not a checkpoint")
        model = f"comet:{tmp_path / 'broken'}"
    elif case == "hub_offline":
        model = "comet:Unbabel/wmt22-cometkiwi-da"
    elif case == "no_venv":
        monkeypatch.setenv("BBSARD_AUDIT_COMET_CACHE", str(tmp_path / "nothing"))
    result = _run("audit", "--dataset", "sample", "--qe", model, "--cache-dir", embedding_cache, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output, result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    if case == "broken":
        assert "cannot load the checkpoint" in lines[0]


def test_progress_follows_the_worker_and_a_repeated_pair_is_scored_once(models, tmp_path):
    calls = []
    signal = qe_signal(f"comet:{models['kiwi']}", tmp_path, advance=lambda n, total: calls.append((n, total)))
    fr = ["Quelle est la procédure ?", "Puis-je résilier mon bail ?", "Quelle est la procédure ?"]
    nl = ["Wat is de procedure?", "Mag ik mijn huurcontract opzeggen?", "Wat is de procedure?"]
    result = signal.score(Batch(fr, nl, pair=BBSARD))
    assert calls == [(1, 2), (1, 2)] and signal.meta["n_scored"] == 2
    scores = result.columns["comet_score"].tolist()
    assert scores[0] == scores[2] and len(result.findings) == 3


def test_a_crashed_worker_is_named_by_its_exit(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("Traceback (most recent call last):\n  File x\nMemoryError: cannot allocate\n")
    assert _last_error(log, -9) == "killed by signal 9 (MemoryError: cannot allocate)"
    assert _last_error(log, 1) == "exit 1: MemoryError: cannot allocate"
    log.write_text("noise\nerror: m: cannot load the checkpoint (x)\nmore noise\n")
    assert _last_error(log, 2) == "m: cannot load the checkpoint (x)"


def test_word_bounds_widen_to_whole_words_and_trim_spaces():
    text = "Mag mijn verhuurder de huur verhogen?"
    assert word_bounds(text, 1, 12) == (0, 19)  # "ag mijn ver" -> "Mag mijn verhuurder"
    assert word_bounds(text, 3, 9) == (4, 8)  # " mijn " -> "mijn"
    assert word_bounds(text, 30, 99) == (28, 37)  # clipped to the text: "verhogen?"
    assert word_bounds(text, 99, 120) == (37, 37)  # wholly past the end: empty, dropped by the signal


def test_a_venv_built_from_other_requirements_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("BBSARD_AUDIT_COMET_CACHE", str(tmp_path))
    marker = env.venv_dir() / env.READY
    marker.parent.mkdir(parents=True)
    marker.write_text("unbabel-comet==2.2.7 torch==2.13.0\nbuild_seconds=40\n")  # before the setuptools pin
    assert env.venv_python() is None
    marker.write_text(" ".join(env.REQUIREMENTS) + "\nbuild_seconds=40\n")
    assert env.venv_python() == env.venv_dir() / "bin" / "python"
