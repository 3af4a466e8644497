"""A metric cut-off deeper than a run's depth is flagged per run: one terminal line, eval.meta.json
(`run_depth`, per run and metric) and a marked cell in the report's eval table (issue 23)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.app.report import build_report
from bbsard_audit.eval.metrics import parse_metrics
from bbsard_audit.eval.pipeline import _run_depth
from bbsard_audit.eval.runs import Run


@pytest.mark.shared
def test_real_runs_100_deep_are_flagged_at_200_and_500(shared_runs, tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["eval", "--run", f"bm25_fr={shared_runs / 'bm25_fr.trec'}",
                                   "--run", f"e5_nl={shared_runs / 'e5_nl.trec'}",
                                   "--qrels", str(shared_runs / "qrels_test203.trec"), "--resamples", "1000",
                                   "--null-draws", "10", "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "cut deeper than the run" in line]
    assert len(lines) == 2 and all(line.startswith("warning: run ") for line in lines)
    assert ("warning: run bm25_fr: ranks at most 100 document(s) per query, so recall@200, recall@500 cut deeper "
            "than the run and equal the metric at depth 100") in lines[0]
    meta = json.loads((out / "eval.meta.json").read_text())
    assert meta["run_depth"] == {"bm25_fr": {"depth": 100, "beyond_depth": ["recall@200", "recall@500"]},
                                 "e5_nl": {"depth": 100, "beyond_depth": ["recall@200", "recall@500"]}}

    build_report(out)
    md = (out / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| bm25_fr | recall@500 |"))
    assert row.count("†") == 1
    assert next(line for line in md.splitlines() if line.startswith("| bm25_fr | recall@100 |")).count("†") == 0
    assert "† a cut-off deeper than the system's run" in md and "bm25_fr ranks at most 100 per query" in md


def test_a_run_ranking_the_whole_corpus_is_complete_at_any_cut_off():
    metrics = parse_metrics(["recall@10", "recall@500"])
    run = Run.from_lists("full", {"1": [str(d) for d in range(50)]})
    assert _run_depth({"full": run}, metrics, corpus_size=50)["full"] == {"depth": 50, "beyond_depth": []}
    assert _run_depth({"full": run}, metrics, corpus_size=None)["full"]["beyond_depth"] == ["recall@500"]
