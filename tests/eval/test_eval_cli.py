"""`bbsard-audit eval` end to end on the six shared runs (French and Dutch, TREC and JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import audit_frame

from bbsard_audit.eval.metrics import Metric, hit_matrix
from bbsard_audit.eval.runs import Qrels, Run

REPO = Path(__file__).resolve().parents[2]
SYSTEMS = ("bm25_fr", "bm25_nl", "e5_fr", "e5_nl", "jina_fr", "jina_nl")


@pytest.mark.shared
@pytest.mark.parametrize("fmt", ["trec", "json"])
def test_cli_on_shared_runs(shared_runs, tmp_path, fmt):
    qrels = Qrels.read(shared_runs / "qrels_test203.trec")
    qids = list(qrels.qids)
    legal = set(qids[::5])  # a verdicts file that removes every fifth question
    pd.DataFrame({"id": qids[:150], "verdict": ["legal" if q in legal else "correct" for q in qids[:150]]}) \
        .to_csv(tmp_path / "verdicts.csv", index=False)
    audit_frame(qids, [int(q) % 3 == 0 for q in qids]).to_csv(tmp_path / "audit.csv", index=False)
    runs = [arg for s in SYSTEMS for arg in ("--run", f"{s}={shared_runs / f'{s}.{fmt}'}")]
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", "eval", *runs,
                          "--qrels", str(shared_runs / "qrels_test203.trec"), "--verdicts", "verdicts.csv",
                          "--audit", "audit.csv", "--resamples", "2000", "--null-draws", "500", "--out", str(out)],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "bm25_fr" in res.stdout and "recall@100" in res.stdout
    said = [line for line in res.stdout.splitlines() if line.startswith("conclusions, full vs verified (")]
    assert len(said) == 1 and "survive" in said[0], res.stdout  # stage 4 says whether the conclusions survive
    if fmt == "json":  # the e5/jina JSON lists repeat candidates: reported, best rank kept
        assert "warning: run e5_fr: 89 duplicated document(s) kept at their best rank" in res.stderr

    metrics = pd.read_csv(out / "metrics.csv")
    verified = [q for q in qids[:150] if q not in legal]
    assert metrics.groupby("subset").n_queries.first().to_dict() == {
        "full": 203, "verified": len(verified), "flagged": sum(int(q) % 3 == 0 for q in qids),
        "unflagged": sum(int(q) % 3 != 0 for q in qids)}
    assert set(metrics.metric) == {"recall@100", "recall@200", "recall@500", "map@100", "mrr@100", "ndcg@10"}
    values = metrics.set_index(["system", "subset", "metric"])
    for system in SYSTEMS:
        run = Run.read(shared_runs / f"{system}.{fmt}")
        hits = hit_matrix(run, qrels.restrict(verified), verified, depth=100)
        expected = Metric("map", 100)(hits)
        row = values.loc[(system, "verified", "map@100")]
        assert row.value == pytest.approx(expected, abs=1e-12) and row.ci_low <= row.value <= row.ci_high
    assert (values.xs("full", level="subset").loc[["e5_fr", "jina_nl"]].xs("recall@100", level="metric").value == 1.0).all()

    shift = pd.read_csv(out / "ranking_shift.csv")
    assert len(shift) == 6 * 3 and shift.kendall_tau.between(-1, 1).all() and shift.tau_ap.between(-1, 1).all()
    pairwise = pd.read_csv(out / "pairwise.csv")
    assert len(pairwise) == 15 * 6 * 4 and pairwise.p_holm.ge(pairwise.p_value).all()
    gap = pd.read_csv(out / "fr_nl_gap.csv", dtype={"group": str})
    assert set(gap.system) == {"bm25", "e5", "jina"} and set(gap.level) == {"all", "verdict", "flag", "question"}
    null = pd.read_csv(out / "null_model.csv")
    assert set(null.subset) == {"verified", "flagged", "unflagged"} and null.p_value.between(0, 1).all()
    meta = json.loads((out / "eval.meta.json").read_text())
    assert meta["inputs"]["qrels"]["sha256"] and meta["resamples"] == 2000 and meta["k_values"] == [10, 100, 200, 500]


def test_eval_says_whether_the_system_order_survives_by_the_reports_rule():
    """Stage 4's `eval` printed the same table as stage 2 and never said whether conclusions survive."""
    from bbsard_audit.eval.ranking_shift import conclusions_said

    def shift(sig):
        return pd.DataFrame({"metric": ["ndcg@10", "map@100"], "subset_a": "full", "subset_b": "verified",
                             "kendall_tau": [0.6, 1.0], "n_flips": [sig, 0], "n_flips_significant": [sig, 0],
                             "n_queries_a": 203, "n_queries_b": 150, "order_a": "a > b", "order_b": ["b > a", "a > b"]})
    null = pd.DataFrame({"metric": ["ndcg@10", "map@100"], "subset": "verified", "statistic": "kendall_tau",
                         "p_value": [0.5, 0.5]})
    kept = conclusions_said(shift(0), null)
    assert kept.startswith("conclusions, full vs verified (150 of 203 questions): the system order survives on all 2 metric(s)")
    moved = conclusions_said(shift(1), null)
    assert "does not survive on ndcg@10 (Kendall tau 0.60, 1 significant swap(s): a > b -> b > a)" in moved
    assert "map@100" not in moved
    low = null.assign(p_value=[0.01, 0.5])  # tau below the random-removal null: moved, even without a swap
    assert "does not survive on ndcg@10 (Kendall tau 0.60, below the random-removal null (p = 0.010)" in \
        conclusions_said(shift(0), low)
    assert conclusions_said(pd.DataFrame(columns=shift(0).columns), null) is None


def test_systems_tied_on_a_metric_keep_their_order():
    """The README's BEIR example: every system at recall@100 = 1.0 leaves Kendall tau and its null p
    undefined (NaN); eval said the order "does not survive (Kendall tau nan ...: a > b -> a > b)"."""
    from bbsard_audit.eval.ranking_shift import conclusions_said, order_survives

    shift = pd.DataFrame({"metric": ["recall@100", "ndcg@10"], "subset_a": "full", "subset_b": "unflagged",
                          "kendall_tau": [float("nan"), 1.0], "n_flips": 0, "n_flips_significant": 0,
                          "n_queries_a": 12, "n_queries_b": 8, "order_a": "a > b", "order_b": "a > b"})
    null = pd.DataFrame({"metric": ["recall@100", "ndcg@10"], "subset": "unflagged", "statistic": "kendall_tau",
                         "p_value": [float("nan"), 0.5]})
    said = conclusions_said(shift, null)
    assert said.startswith("conclusions, full vs unflagged (8 of 12 questions): the system order survives on all 2"), said
    assert order_survives(0, float("nan")) and not order_survives(1, float("nan")) and not order_survives(0, 0.01)
