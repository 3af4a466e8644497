"""Removal fragility: the vectorised definition equals an exhaustive search over query subsets, on
synthetic runs and on the real shared runs; fragility.csv and its expected-error columns."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.base.contracts.estimate import Estimate, Stratum
from conftest import audit_frame

from bbsard_audit.eval.fragility import TOLERANCE, expected_unverified_errors, removal_fragility
from bbsard_audit.eval.metrics import parse_metrics
from bbsard_audit.eval.pipeline import EvalConfig, evaluate, write_outputs


def brute_force(diffs: np.ndarray) -> int:
    """Fewest removed queries leaving the remaining differences summing to <= 0, over ALL subsets."""
    n = len(diffs)
    if diffs.sum() <= TOLERANCE * n:
        return 0
    for k in range(1, n + 1):
        for removed in combinations(range(n), k):
            if np.delete(diffs, removed).sum() <= TOLERANCE * n:
                return k
    raise AssertionError("unreachable: removing every query leaves a sum of 0")


def test_equals_exhaustive_search_on_small_synthetic_runs():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(300):
        n = int(rng.integers(1, 9))
        a = rng.choice([0, 0.25, 0.5, 1.0], size=n)  # ties and equal differences are common in IR metrics
        b = rng.choice([0, 0.25, 0.5, 1.0], size=n) * rng.choice([0.5, 1.0])
        rows.append(a - b)
    for d in rows:
        assert removal_fragility(d)[0] == brute_force(d), d
    padded = np.array([np.pad(d, (0, 8 - len(d))) for d in rows])  # zero differences change nothing
    assert removal_fragility(padded).tolist() == [brute_force(d) for d in rows]


def test_edge_cases():
    assert removal_fragility([0.5, -0.5, 0.0]).tolist() == [0]  # a tie is no conclusion
    assert removal_fragility([-1.0, 0.2]).tolist() == [0]  # a loses
    assert removal_fragility([0.5, 0.5, -0.5]).tolist() == [1]  # leaving a tie is enough
    assert removal_fragility([0.1, 0.2, 0.3]).tolist() == [3]  # every query favours a
    assert removal_fragility([1.0, 0.0, 0.0, 0.0]).tolist() == [1]
    assert removal_fragility([0.1 + 0.2, -0.3, 0.3]).tolist() == [1]  # float round-off is a tie


def test_expected_errors_use_the_strata_rates():
    estimate = Estimate(share_legal=0.1, ci_low=0.05, ci_high=0.2, expected_legal_pairs=11.0, population=110,
                        level=0.95, draws=100, seed=0, strata=[
        Stratum("risk_queue", 10, 10, 5, 0.5, 0.2, 0.8),
        Stratum("flagged", 0, 0, 0, None, None, None),
        Stratum("unflagged:a", 60, 20, 1, 0.05, 0.0, 0.2),
        Stratum("unflagged:b", 40, 10, 0, 0.0, 0.0, 0.3)])
    got = expected_unverified_errors(estimate, flagged=4, unflagged=10, unknown=5)
    assert got.expected == pytest.approx(4 * 0.5 + 10 * 0.03 + 5 * 0.1)
    assert got.high == pytest.approx(4 * 0.8 + 10 * 0.24 + 5 * 0.2)


def test_expected_errors_of_a_risk_band_design_use_the_bands_for_unflagged_queries():
    """A design with inclusion probabilities has no `unflagged*` strata: its start-risk bands (which
    also hold the flagged pairs outside the risk queue) rate the unflagged queries, not the split's share."""
    estimate = Estimate(share_legal=0.2, ci_low=0.1, ci_high=0.3, expected_legal_pairs=22.0, population=110,
                        level=0.95, draws=100, seed=0, strata=[
        Stratum("risk_queue", 10, 10, 6, 0.6, 0.3, 0.85),
        Stratum("test/risk-band-1", 60, 6, 0, 0.0, 0.0, 0.4),
        Stratum("test/risk-band-2", 40, 8, 2, 0.25, 0.07, 0.6)])
    got = expected_unverified_errors(estimate, flagged=4, unflagged=10)
    assert got.expected == pytest.approx(4 * 0.6 + 10 * (40 * 0.25) / 100)
    assert got.high == pytest.approx(4 * 0.85 + 10 * (60 * 0.4 + 40 * 0.6) / 100)


def _bench(tmp_path, n=30):
    rng = np.random.default_rng(5)
    qids = [str(q) for q in range(1, n + 1)]
    docs = [str(100 + i) for i in range(40)]
    (tmp_path / "qrels.trec").write_text("".join(f"{q} 0 {docs[int(q)]} 1\n" for q in qids))
    for system, skill in (("good", 0.8), ("mid", 0.6), ("bad", 0.3)):
        ranking = {}
        for q in qids:
            ranked = list(rng.permutation([d for d in docs if d != docs[int(q)]])[:9])
            if rng.random() < skill:
                ranked.insert(int(rng.integers(0, 5)), docs[int(q)])
            ranking[q] = ranked
        (tmp_path / f"{system}.json").write_text(json.dumps(ranking))
    pd.DataFrame({"id": qids[:12], "verdict": ["correct"] * 10 + ["legal"] * 2}).to_csv(tmp_path / "verdicts.csv", index=False)
    audit_frame(qids, [int(q) % 3 == 0 for q in qids]).to_csv(tmp_path / "audit.csv", index=False)
    Estimate(share_legal=0.1, ci_low=0.05, ci_high=0.2, expected_legal_pairs=3.0, population=30, level=0.95,
             draws=100, seed=0, strata=[Stratum("risk_queue", 10, 5, 2, 0.4, 0.1, 0.7),
                                        Stratum("unflagged", 20, 5, 0, 0.05, 0.0, 0.25)]).write(tmp_path / "estimate.json")
    return tmp_path, qids


def test_fragility_csv(tmp_path):
    root, qids = _bench(tmp_path)
    config = EvalConfig(runs={s: root / f"{s}.json" for s in ("good", "mid", "bad")}, qrels=root / "qrels.trec",
                        verdicts=root / "verdicts.csv", audit=root / "audit.csv", metrics=("mrr@10", "recall@5"),
                        resamples=1000, null_draws=10)
    result = evaluate(config)  # estimate.json found next to the verdicts
    write_outputs(result, root / "out")
    frag = pd.read_csv(root / "out" / "fragility.csv")
    assert list(frag.columns) == ["metric", "system_a", "system_b", "delta", "n_queries", "removal_fragility",
                                  "p_value", "expected_errors_unverified", "expected_errors_unverified_high", "robust"]
    assert frag.removal_fragility.is_monotonic_increasing  # the fragile conclusions first
    per_query = result.tables["per_query"].set_index(["system", "qid"])
    pairwise = result.tables["pairwise"]
    unverified = qids[12:]
    flagged = sum(int(q) % 3 == 0 for q in unverified)
    expected = flagged * 0.4 + (len(unverified) - flagged) * 0.05
    high = flagged * 0.7 + (len(unverified) - flagged) * 0.25
    assert len(frag) == 6 - int((frag.delta == 0).sum())
    for row in frag.itertuples():
        d = (per_query.loc[row.system_a][row.metric] - per_query.loc[row.system_b][row.metric]).to_numpy()
        assert row.delta == pytest.approx(d.mean()) and row.delta > 0
        assert row.n_queries == len(qids)
        assert row.removal_fragility == brute_force_greedy(d)
        p = pairwise[(pairwise.subset == "full") & (pairwise.metric == row.metric)
                     & (pairwise[["system_a", "system_b"]].apply(frozenset, axis=1) == frozenset((row.system_a, row.system_b)))]
        assert row.p_value == pytest.approx(p.p_value.item())
        assert row.expected_errors_unverified == pytest.approx(expected)
        assert row.expected_errors_unverified_high == pytest.approx(high)
        assert row.robust == (row.removal_fragility > high)
    meta = json.loads((root / "out" / "fragility.meta.json").read_text())
    assert meta["fragility"]["unverified_judged_queries"] == len(unverified)
    assert meta["inputs"]["estimate"]["sha256"]

    without = evaluate(EvalConfig(runs=config.runs, qrels=config.qrels, metrics=("mrr@10",), resamples=1000,
                                  null_draws=10)).tables["fragility"]
    assert without.expected_errors_unverified.isna().all() and without.robust.isna().all()


def brute_force_greedy(diffs: np.ndarray) -> int:
    """Remove the currently largest difference one at a time until a no longer leads (plain Python)."""
    remaining = sorted(diffs.tolist())
    removed = 0
    while sum(remaining) > TOLERANCE * len(diffs):
        remaining.pop()
        removed += 1
    return removed


def test_real_shared_runs_match_greedy_removal(shared_runs):
    """On the published runs and qrels: every pairwise conclusion's fragility, checked one by one."""
    from bbsard_audit.eval.metrics import hit_matrix, per_query_matrix
    from bbsard_audit.eval.runs import Qrels, Run

    qrels = Qrels.read(shared_runs / "qrels_test203.trec")
    metrics = parse_metrics(("ndcg@10", "recall@100"))
    runs = sorted(p for p in shared_runs.glob("*.trec") if not p.name.startswith("qrels"))
    assert len(runs) >= 2
    values = {}
    for path in runs:
        hits = hit_matrix(Run.read(path, path.stem), qrels, qrels.qids, 100)
        values[path.stem] = per_query_matrix(hits, metrics)
    checked = 0
    for x, y in combinations(values, 2):
        for j in range(len(metrics)):
            d = values[x][j] - values[y][j]
            d = d if d.sum() >= 0 else -d
            assert removal_fragility(d)[0] == brute_force_greedy(d)
            checked += 1
    assert checked == len(metrics) * len(values) * (len(values) - 1) // 2


def test_cli_audit_without_verdicts_and_explicit_estimate(tmp_path):
    """Before any review: eval takes --audit alone (full + flagged/unflagged) and an --estimate."""
    import os
    import subprocess
    import sys

    root, qids = _bench(tmp_path)
    (root / "estimate.json").rename(root / "est.json")
    res = subprocess.run([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", "eval", "--run", "good=good.json",
                          "--run", "bad=bad.json", "--qrels", "qrels.trec", "--audit", "audit.csv",
                          "--estimate", "est.json", "--k", "mrr@10", "--resamples", "1000", "--null-draws", "20",
                          "--out", "out"], cwd=root, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert res.returncode == 0, res.stderr
    subsets = set(pd.read_csv(root / "out" / "metrics.csv").subset)
    assert subsets == {"full", "flagged", "unflagged"}
    frag = pd.read_csv(root / "out" / "fragility.csv")
    flagged = sum(int(q) % 3 == 0 for q in qids)  # nothing verified: every judged query counts
    assert frag.expected_errors_unverified_high.tolist() == pytest.approx([flagged * 0.7 + (len(qids) - flagged) * 0.25])


def test_a_bad_estimate_is_one_clear_error(tmp_path):
    from bbsard_audit.base.errors import InputError

    root, _ = _bench(tmp_path)
    config = dict(runs={"good": root / "good.json"}, qrels=root / "qrels.trec", metrics=("mrr@10",),
                  resamples=1000, null_draws=10)
    (root / "bad.json").write_text('{"share": 0.1}')
    with pytest.raises(InputError, match=r"bad.json: unknown key\(s\) 'share' in Estimate"):
        evaluate(EvalConfig(**config, estimate=root / "bad.json"))
    (root / "broken.json").write_text("{")
    with pytest.raises(InputError, match=r"broken.json, row 1: invalid JSON"):
        evaluate(EvalConfig(**config, estimate=root / "broken.json"))
