"""Run/qrels readers: tie-break, duplicates, JSON, malformed files (one-line error, exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbsard_audit.base.errors import InputError
from bbsard_audit.eval.cli import parse_run_specs
from bbsard_audit.eval.runs import Qrels, Run

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_run_tie_break_score_then_rank_then_docid(tmp_path):
    run = Run.read(_write(tmp_path / "r.trec", "\n".join([
        "1 Q0 d9 3 5.0 t", "1 Q0 d1 4 5.0 t",   # same score: rank 3 before rank 4
        "1 Q0 b 1 7.0 t", "1 Q0 a 1 7.0 t",     # same score and rank: docid ascending
        "1 Q0 z 9 9.5 t",                       # highest score first whatever its rank
    ])))
    assert run.ranking["1"] == ("z", "a", "b", "d9", "d1")
    assert run.name == "r" and not run.warnings


def test_duplicated_docs_keep_best_rank_with_warning(tmp_path):
    run = Run.read(_write(tmp_path / "dup.trec", "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 a 3 1 t\n"))
    assert run.ranking["1"] == ("a", "b")
    assert run.warnings and "1 duplicated" in run.warnings[0]
    js = Run.read(_write(tmp_path / "dup.json", json.dumps({"7": ["x", "y", "x", 5]})), name="j")
    assert js.ranking["7"] == ("x", "y", "5") and "1 duplicated" in js.warnings[0]


def test_trec_roundtrip_keeps_order(tmp_path):
    run = Run.from_lists("s", {"2": ["c", "a", "b"], "10": ["q"]})
    back = Run.read(run.write_trec(tmp_path / "s.trec"), name="s")
    assert back.ranking == run.ranking and back.qids == ("2", "10")
    assert Run.read(run.write_json(tmp_path / "s.json"), name="s").ranking == run.ranking


def test_qrels_reader_dedups_gold_and_skips_unjudged(tmp_path):
    q = Qrels.read(_write(tmp_path / "q.trec", "1 0 a 1\n1 0 a 1\n1 0 b 0\n2 0 c 0\n3 0 d 2\n"))
    assert q.relevant == {"1": frozenset({"a"}), "3": frozenset({"d"})}
    assert any("duplicated" in w for w in q.warnings) and any("without any relevant" in w for w in q.warnings)


@pytest.mark.parametrize("name, text, expected", [
    ("cols.trec", "1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n", "cols.trec, row 2: expected 6 columns"),
    ("rank.trec", "1 Q0 a 1 2.0 t\n1 Q0 b two 1.0 t\n", "rank.trec, row 2, id 1: rank 'two' is not an integer"),
    ("score.trec", "1 Q0 a 1 high t\n", "score.trec, row 1, id 1: score 'high' is not a number"),
    ("nan.trec", "1 Q0 a 1 nan t\n", "score 'nan' is not finite"),
    ("empty.trec", "\n\n", "empty.trec: file is empty"),
    ("empty.json", "{\"1\": []}", "empty.json: run 'empty' is empty"),
    ("bad.json", "{\"1\": [\"a\",", "bad.json, row 1: invalid JSON"),
    ("shape.json", "{\"1\": \"a\"}", "shape.json, id 1: value must be a list of docids"),
])
def test_malformed_runs_name_file_and_line(tmp_path, name, text, expected):
    with pytest.raises(InputError) as err:
        Run.read(_write(tmp_path / name, text))
    assert expected in err.value.one_line()


@pytest.mark.parametrize("text, expected", [
    ("1 0 a\n", "q.trec, row 1: expected 4 columns"),
    ("1 0 a 1\n2 0 b yes\n", "q.trec, row 2, id 2: relevance grade 'yes' is not an integer"),
    ("1 0 a 0\n", "q.trec: no query has a relevant document"),
])
def test_malformed_qrels(tmp_path, text, expected):
    with pytest.raises(InputError) as err:
        Qrels.read(_write(tmp_path / "q.trec", text))
    assert expected in err.value.one_line()


def test_run_specs():
    assert parse_run_specs(["a=x.trec", "dir/b.json"]) == {"a": Path("x.trec"), "b": Path("dir/b.json")}
    with pytest.raises(InputError, match="given twice"):
        parse_run_specs(["a=x", "a=y"])


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", *args],
                          cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("run_text, qrels_text, message", [
    ("1 Q0 a 1 x t\n", "1 0 a 1\n", "run.trec, row 1, id 1: score 'x' is not a number"),
    ("1 Q0 a 1 1.0\n", "1 0 a 1\n", "run.trec, row 1: expected 6 columns"),
    ("", "1 0 a 1\n", "run.trec: file is empty"),
    ("1 Q0 a 1 1.0 t\n", "1 a 1\n", "qrels.trec, row 1: expected 4 columns"),
])
def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, run_text, qrels_text, message):
    _write(tmp_path / "run.trec", run_text)
    _write(tmp_path / "qrels.trec", qrels_text)
    res = _cli("eval", "--run", "s=run.trec", "--qrels", "qrels.trec", "--out", "out", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {message}"] or (len(lines) == 1 and message in lines[0]), res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()


def test_cli_help_has_example(tmp_path):
    res = _cli("eval", "--help", cwd=tmp_path)
    assert res.returncode == 0 and "Example:" in res.stdout
