"""Shareable outputs name data by source id + sha256, never by a local absolute path: every command
given absolute paths (and a local dataset folder) leaves no such path in any file it writes."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import local_path_leaks
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import sample_dir
from bbsard_audit.base.io import digest_of, portable, write_sidecar


def _run(*args):
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, embedding_cache):
    """A local copy of the sample (a CSV folder) run through every stage with absolute paths."""
    root = tmp_path_factory.mktemp("portable")
    data = root / "my_bbsard"
    shutil.copytree(sample_dir(), data)
    out = root / "work"
    _run("audit", "--dataset", data, "--review-budget", 12, "--control", 8, "--seed", 0,
         "--out", out)  # the demo's queue: the sample verdicts cover it
    _run("audit", "calibrate", "--audit", out / "audit.csv", "--verdicts", data / "verdicts.csv",
         "--out", out)
    _run("annotate", "agreement", "--raw", data / "annotations_raw.csv", "--out", out)
    _run("annotate", "estimate", "--audit", out / "audit.csv", "--queue", out / "review_queue.csv",
         "--verdicts", data / "verdicts.csv", "--out", out / "estimate.json")
    _run("annotate", "export-tasks", "--audit", out / "audit.csv", "--queue", out / "review_queue.csv",
         "--out", out / "tasks.json")
    _run("eval", "--dataset", data, "--retriever", "bm25", "--verdicts", data / "verdicts.csv",
         "--audit", out / "audit.csv", "--estimate", out / "estimate.json", "--resamples", 1000,
         "--null-draws", 100, "--out", out)
    _run("release", "--dataset", data, "--verdicts", data / "verdicts.csv", "--audit", out / "audit.csv",
         "--out", out / "release")
    _run("report", "--workdir", out)
    return root, data, out


def test_no_output_names_a_local_path(workdir):
    root, data, out = workdir
    for name in ("audit.meta.json", "calibration.json", "agreement.meta.json", "estimate.meta.json",
                 "tasks.meta.json", "eval.meta.json", "release/README.md", "report.html", "report.md"):
        assert (out / name).is_file(), name
    assert local_path_leaks(out, root, sample_dir()) == []


def test_inputs_are_named_by_name_and_content(workdir):
    _, data, out = workdir
    meta = json.loads((out / "estimate.meta.json").read_text(encoding="utf-8"))
    assert meta["verdicts"] == {"name": "verdicts.csv", "sha256": digest_of(data / "verdicts.csv")}
    assert meta["audit"]["sha256"] == digest_of(out / "audit.csv")
    audit = json.loads((out / "audit.meta.json").read_text(encoding="utf-8"))
    assert audit["dataset"]["source"] == "my_bbsard" and audit["dataset"]["revision"].startswith("sha256:")
    assert "`my_bbsard`" in (out / "release" / "README.md").read_text(encoding="utf-8")


def test_the_sidecar_writer_turns_any_path_into_a_reference(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("id\n1\n", encoding="utf-8")
    folder = tmp_path / "runs"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "x.trec").write_text("1 Q0 2 1 1.0 x\n", encoding="utf-8")
    fields = {"a": data, "b": str(data), "c": {"d": [str(folder)]}, "e": str(tmp_path / "gone.csv"),
              "f": "audit.csv", "g": "hf:clips/bBSARD@main", "h": None, "i": f"st:{folder}",
              "j": f"transformers:{folder}[nl->fr]@abc", "k": "http://localhost:8080"}
    assert portable(fields) == {"a": {"name": "in.csv", "sha256": digest_of(data)},
                                "b": {"name": "in.csv", "sha256": digest_of(data)},
                                "c": {"d": [{"name": "runs", "sha256": digest_of(folder)}]},
                                "e": {"name": "gone.csv", "sha256": None},
                                "f": "audit.csv", "g": "hf:clips/bBSARD@main", "h": None, "i": "st:runs",
                                "j": "transformers:runs[nl->fr]@abc", "k": "http://localhost:8080"}
    sidecar = write_sidecar(tmp_path / "out" / "x.csv", **fields)
    assert str(tmp_path) not in sidecar.read_text(encoding="utf-8")
