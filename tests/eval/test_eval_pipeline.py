"""eval end to end: a verdicts file removes questions and EVERY number of every output is checked
against an independent plain-Python computation (same seeded random streams, nothing else shared)."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest
from conftest import audit_frame
from scipy.stats import kendalltau

from bbsard_audit.eval.bootstrap import resample_indices, sign_flips
from bbsard_audit.eval.pipeline import EvalConfig, evaluate, write_outputs
from bbsard_audit.eval.ranking_shift import random_subsets

METRICS = ("recall@5", "map@10", "mrr@10", "ndcg@5")
SEED, RESAMPLES, DRAWS = 11, 1000, 300
SYSTEMS = ("good_fr", "good_nl", "weak_fr", "weak_nl")


# ---------------------------------------------------------------- independent reference

def ref_value(metric: str, ranked: list[str] | None, rel: set[str]) -> float:
    kind, k = metric.split("@")
    k = int(k)
    if ranked is None:
        return 0.0
    top = ranked[:k]
    positions = [i for i, d in enumerate(top, start=1) if d in rel]
    if kind == "recall":
        return len(positions) / len(rel)
    if kind == "map":
        return sum((n + 1) / p for n, p in enumerate(positions)) / len(rel)
    if kind == "mrr":
        return 1 / positions[0] if positions else 0.0
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(k, len(rel)) + 1))
    return sum(1 / math.log2(p + 1) for p in positions) / ideal


def mean(xs) -> float:
    return sum(xs) / len(xs)


def percentile(xs, q) -> float:
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def boot_ci(values: list[float], seed: int) -> tuple[float, float]:
    idx = resample_indices(len(values), RESAMPLES, seed).tolist()
    means = [sum(values[i] for i in row) / len(row) for row in idx]
    return percentile(means, 2.5), percentile(means, 97.5)


def sign_test(diffs: list[float], seed: int) -> float:
    signs = sign_flips(len(diffs), RESAMPLES, seed).tolist()
    observed = abs(mean(diffs))
    exceed = sum(abs(sum(s * d for s, d in zip(row, diffs)) / len(diffs)) >= observed - 1e-12 for row in signs)
    return (1 + exceed) / (RESAMPLES + 1)


def holm(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, ps[i] * (len(ps) - rank))
        out[i] = min(running, 1.0)
    return out


def ranks(values: dict[str, float]) -> list[str]:
    return sorted(values, key=lambda s: (-round(values[s], 12), s))


def ref_tau(x: dict[str, float], y: dict[str, float]) -> float:
    """scipy's tau-b on means rounded to 12 decimals: summation noise must not break a tie."""
    return kendalltau([round(x[s], 12) for s in SYSTEMS], [round(y[s], 12) for s in SYSTEMS]).statistic


def ref_tau_ap(evaluated: dict[str, float], truth: dict[str, float]) -> float:
    order, truth_order = ranks(evaluated), ranks(truth)
    n = len(order)
    total = 0.0
    for i in range(1, n):
        total += sum(truth_order.index(order[j]) < truth_order.index(order[i]) for j in range(i)) / i
    return 2 / (n - 1) * total - 1


# ---------------------------------------------------------------- fixture: a small benchmark on disk

@pytest.fixture()
def bench(tmp_path):
    rnd = random.Random(3)
    docs = [str(1000 + i) for i in range(60)]
    qids = [str(q) for q in range(1, 41)]
    relevant = {q: set(rnd.sample(docs, rnd.randint(1, 4))) for q in qids}
    (tmp_path / "qrels.trec").write_text("".join(f"{q} 0 {d} 1\n" for q in qids for d in sorted(relevant[q])))
    rankings = {}
    for system in SYSTEMS:
        skill = 0.75 if system.startswith("good") else 0.35
        skill -= 0.1 if system.endswith("nl") else 0
        ranking = {}
        for q in qids:
            if system == "weak_nl" and q in ("7", "8"):
                continue  # missing queries score 0
            pool = [d for d in docs if d not in relevant[q]]
            rnd.shuffle(pool)
            ranked = pool[:15]
            for d in relevant[q]:
                if rnd.random() < skill:
                    ranked.insert(rnd.randint(0, 6), d)
            ranking[q] = ranked
        ranking["999"] = ["1000"]  # not judged: ignored with a warning
        rankings[system] = ranking
        (tmp_path / f"{system}.json").write_text(json.dumps(ranking))
    verdict = {q: rnd.choice(["correct", "correct", "minor", "legal"]) for q in qids[:34]}  # 6 unannotated
    pd.DataFrame({"id": list(verdict), "verdict": list(verdict.values()),
                  "corrected_nl": ["" for _ in verdict]}).to_csv(tmp_path / "verdicts.csv", index=False)
    flagged = {q: rnd.random() < 0.3 for q in qids}
    audit_frame(qids, [flagged[q] for q in qids]).to_csv(tmp_path / "audit.csv", index=False)
    return tmp_path, qids, relevant, rankings, verdict, flagged


def test_every_number_matches_an_independent_computation(bench):
    root, qids, relevant, rankings, verdict, flagged = bench
    config = EvalConfig(runs={s: root / f"{s}.json" for s in SYSTEMS}, qrels=root / "qrels.trec",
                        verdicts=root / "verdicts.csv", audit=root / "audit.csv", metrics=METRICS,
                        resamples=RESAMPLES, null_draws=DRAWS, seed=SEED)
    result = evaluate(config)
    written = write_outputs(result, root / "out")
    assert {p.name for p in written} >= {"metrics.csv", "ranking_shift.csv", "pairwise.csv", "per_query.csv",
                                         "null_model.csv", "fr_nl_gap.csv", "eval.meta.json"}
    assert any("absent from the qrels" in w and "999" in w for w in result.warnings)
    assert "run weak_nl: 2 judged query(ies) missing from the run score 0 (e.g. 7, 8)" in result.warnings

    subsets = {"full": qids, "verified": [q for q in qids if verdict.get(q) in ("correct", "minor")],
               "flagged": [q for q in qids if flagged[q]], "unflagged": [q for q in qids if not flagged[q]]}
    assert 0 < len(subsets["verified"]) < len(qids)
    per_query = {(s, m): {q: ref_value(m, rankings[s].get(q), relevant[q]) for q in qids}
                 for s in SYSTEMS for m in METRICS}
    value = {(s, sub, m): mean([per_query[s, m][q] for q in ids])
             for s in SYSTEMS for sub, ids in subsets.items() for m in METRICS}

    # metrics.csv: value, CI, n_queries, n_missing for every system x subset x metric
    metrics = pd.read_csv(root / "out" / "metrics.csv")
    assert list(metrics.columns[:7]) == ["system", "subset", "metric", "value", "ci_low", "ci_high", "n_queries"]
    assert len(metrics) == len(SYSTEMS) * len(subsets) * len(METRICS)
    for row in metrics.itertuples():
        ids = subsets[row.subset]
        assert row.value == pytest.approx(value[row.system, row.subset, row.metric], abs=1e-12)
        assert row.n_queries == len(ids)
        assert row.n_missing == sum(q not in rankings[row.system] for q in ids)
        low, high = boot_ci([per_query[row.system, row.metric][q] for q in ids], SEED)
        assert (row.ci_low, row.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))

    # pairwise.csv: diff, randomisation p, Holm within (metric, subset), flips vs full
    pairwise = pd.read_csv(root / "out" / "pairwise.csv")
    assert len(pairwise) == len(subsets) * len(METRICS) * 6
    for (metric, subset), group in pairwise.groupby(["metric", "subset"]):
        ids = subsets[subset]
        expected_p = []
        for row in group.itertuples():
            diffs = [per_query[row.system_a, metric][q] - per_query[row.system_b, metric][q] for q in ids]
            assert row.diff == pytest.approx(mean(diffs), abs=1e-12)
            expected_p.append(sign_test(diffs, SEED + 1))
            full_diff = value[row.system_a, "full", metric] - value[row.system_b, "full", metric]
            assert row.flips_vs_full == (full_diff * row.diff < 0)
        assert list(group.p_value) == pytest.approx(expected_p, abs=1e-12)
        assert list(group.p_holm) == pytest.approx(holm(expected_p), abs=1e-12)
        assert list(group.significant) == [p < 0.05 for p in holm(expected_p)]

    # ranking_shift.csv: tau-b, tau-AP, flips (and which are significant on the subset)
    shift = pd.read_csv(root / "out" / "ranking_shift.csv", keep_default_na=False)
    assert set(shift.subset_b) == {"verified", "flagged", "unflagged"}
    for row in shift.itertuples():
        a = {s: value[s, "full", row.metric] for s in SYSTEMS}
        b = {s: value[s, row.subset_b, row.metric] for s in SYSTEMS}
        assert float(row.kendall_tau) == pytest.approx(ref_tau(a, b), abs=1e-12)
        assert float(row.tau_ap) == pytest.approx(ref_tau_ap(a, b), abs=1e-12)
        flips = [(x, y) for x in SYSTEMS for y in SYSTEMS if a[x] > a[y] and b[y] > b[x]]
        assert row.n_flips == len(flips)
        sig = pairwise[(pairwise.metric == row.metric) & (pairwise.subset == row.subset_b) & pairwise.significant]
        sig_pairs = {frozenset(p) for p in zip(sig.system_a, sig.system_b)}
        assert row.n_flips_significant == sum(frozenset(f) in sig_pairs for f in flips)
        assert row.order_a == " > ".join(ranks(a)) and row.order_b == " > ".join(ranks(b))

    # null_model.csv: the same number of questions removed at random, DRAWS times
    null = pd.read_csv(root / "out" / "null_model.csv")
    for (metric, subset), group in null.groupby(["metric", "subset"]):
        ids, size = subsets[subset], len(subsets[subset])
        masks = random_subsets(len(qids), size, DRAWS, SEED + 2).tolist()
        draws = [{s: mean([per_query[s, metric][q] for q, keep in zip(qids, mask) if keep]) for s in SYSTEMS}
                 for mask in masks]
        base = {s: value[s, "full", metric] for s in SYSTEMS}
        for row in group.itertuples():
            assert row.n_kept == size and row.n_removed == len(qids) - size
            if row.statistic == "delta":
                obs = value[row.system, subset, metric] - base[row.system]
                dist = [d[row.system] - base[row.system] for d in draws]
                centre = mean(dist)
                p = (1 + sum(abs(x - centre) >= abs(obs - centre) - 1e-12 for x in dist)) / (DRAWS + 1)
            else:
                rank_corr = ((lambda x: ref_tau(base, x))
                             if row.statistic == "kendall_tau" else (lambda x: ref_tau_ap(base, x)))
                obs = rank_corr({s: value[s, subset, metric] for s in SYSTEMS})
                dist = [rank_corr(d) for d in draws]
                dist = [x for x in dist if not math.isnan(x)]
                p = (1 + sum(x <= obs + 1e-12 for x in dist)) / (len(dist) + 1)
            assert row.observed == pytest.approx(obs, abs=1e-12)
            assert row.null_mean == pytest.approx(mean(dist), abs=1e-12)
            assert row.null_low == pytest.approx(percentile(dist, 2.5), abs=1e-12)
            assert row.null_high == pytest.approx(percentile(dist, 97.5), abs=1e-12)
            assert row.p_value == pytest.approx(p, abs=1e-12)

    # fr_nl_gap.csv: per system pair, overall / by verdict / by flag with CIs, and per question
    gap = pd.read_csv(root / "out" / "fr_nl_gap.csv", keep_default_na=False, dtype={"group": str})
    groups = {("all", "all"): qids}
    for v in ("correct", "minor", "legal", "none"):
        groups["verdict", v] = [q for q in qids if verdict.get(q, "none") == v]
    groups["flag", "flagged"], groups["flag", "unflagged"] = subsets["flagged"], subsets["unflagged"]
    groups = {key: ids for key, ids in groups.items() if ids}
    assert set(gap.system) == {"good", "weak"}
    for row in gap.itertuples():
        fr, nl = f"{row.system}_fr", f"{row.system}_nl"
        ids = [row.group] if row.level == "question" else groups[row.level, row.group]
        diffs = [per_query[fr, row.metric][q] - per_query[nl, row.metric][q] for q in ids]
        assert row.n_queries == len(ids)
        assert float(row.gap) == pytest.approx(mean(diffs), abs=1e-12)
        assert float(row.fr) == pytest.approx(mean([per_query[fr, row.metric][q] for q in ids]), abs=1e-12)
        if row.level == "question":
            assert row.verdict == verdict.get(row.group, "")
            assert row.flagged == str(flagged[row.group]).lower()
        else:
            low, high = boot_ci(diffs, SEED + 3)
            assert (float(row.ci_low), float(row.ci_high)) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert len(gap[gap.level == "question"]) == 2 * len(qids) * len(METRICS)

    # per_query.csv: one row per (system, question) on the full set
    pq = pd.read_csv(root / "out" / "per_query.csv", dtype={"qid": str}, keep_default_na=False)
    assert len(pq) == len(SYSTEMS) * len(qids)
    for row in pq.to_dict("records"):
        for m in METRICS:
            assert row[m] == pytest.approx(per_query[row["system"], m][row["qid"]], abs=1e-12)
        assert row["missing"] == (row["qid"] not in rankings[row["system"]])

    meta = json.loads((root / "out" / "eval.meta.json").read_text())
    assert meta["seed"] == SEED and meta["resamples"] == RESAMPLES and meta["subsets"]["verified"] == len(subsets["verified"])
    assert len(meta["inputs"]["run:good_fr"]["sha256"]) == 64 and meta["inputs"]["verdicts"]["sha256"]
    assert (root / "out" / "metrics.meta.json").exists()


def test_keep_and_bad_verdicts(bench, tmp_path):
    root, qids, *_ = bench
    config = EvalConfig(runs={"good_fr": root / "good_fr.json"}, qrels=root / "qrels.trec",
                        verdicts=root / "verdicts.csv", keep=("correct",), metrics=("recall@5",),
                        resamples=1000, null_draws=10)
    table = evaluate(config).tables["metrics"]
    verdicts = pd.read_csv(root / "verdicts.csv")
    assert table.set_index("subset").loc["verified", "n_queries"] == (verdicts.verdict == "correct").sum()
    bad = tmp_path / "bad.csv"
    bad.write_text("id,verdict\n5,correct\n6,wrong\n")
    with pytest.raises(Exception, match=r"bad.csv, row 3, id 6: verdict 'wrong' is not one of"):
        evaluate(EvalConfig(runs=config.runs, qrels=config.qrels, verdicts=bad))
    with pytest.raises(Exception, match="--keep"):
        evaluate(EvalConfig(runs=config.runs, qrels=config.qrels, verdicts=root / "verdicts.csv", keep=("great",)))
