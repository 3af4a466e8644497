"""Issue 34: coverage of `eval --campaign`'s cleaned-benchmark intervals and rank sets (eval/cleaned.py).

Two parts, each a campaign drawn as `annotate push --campaign` + `--next 14` draw it (benchmarks/ppi_study.new_design:
start queue 14 control pairs, batches of 14, budget 70, the default draw rule):

- `synthetic`: benchmarks/ppi_study.world populations of 222 pairs (error rate 2-30 %, prediction quality 0-3),
  six synthetic systems whose per-query values drop on legal errors (Dutch-like) or not (French-like),
  203 of the 222 pairs judged. Truth: each system's mean over the judged pairs without a legal error.
- `real`: the real bBSARD test split (222 pairs, its real audit's p_error) with `clustered_oracle` errors
  (3 clusters x 3 + 10 scattered legal errors per oracle seed, as benchmarks/bench_ppi_oracles.py), the six
  real runs of /work/shared/data/bbsard/runs scored on the 203 judged questions of qrels_test203.trec.

Per campaign: do the 95 % intervals cover each (system, metric)'s truly cleaned value, how wide are they,
is every system's true rank in its simultaneous rank set (per metric, and all metrics at once)?

The synthetic part also scores the corrected variant (`NAME.corrected` rows, cleaned.corrected_table): the
`_nl` systems' values on the corrected questions are the values the legal error took away. The real split
cannot: re-retrieving a correction needs the article corpus, which ../shared/data/bbsard does not hold.

Usage: python benchmarks/bench_cleaned.py --data ../shared/data/bbsard [--part real,synthetic]
[--oracles 6] [--seeds 20] [--populations 200] [--budget 70] [--out benchmarks/results/bench_cleaned.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

import ppi_study
from bbsard_audit.eval import cleaned
from bbsard_audit.eval.metrics import hit_matrix, parse_metrics, per_query_matrix
from bbsard_audit.eval.options import DEFAULT_METRICS
from bbsard_audit.eval.runs import Qrels, Run

SYSTEMS = ("bm25_fr", "bm25_nl", "e5_fr", "e5_nl", "jina_fr", "jina_nl")


def judge(values: np.ndarray, y: np.ndarray, draws, names, metrics, seed: int) -> dict:
    """One campaign's estimate against the truth: per (system, metric) covered/width; rank sets."""
    seen = np.any([d.drawn for d in draws], axis=0)
    w = cleaned.weights(draws, y.astype(float), seen)
    est = cleaned.estimate(names, values, w, seed=seed)
    table = cleaned.cleaned_table(est, metrics, w)
    truth = values[:, :, ~y].mean(axis=2)
    table["truth"] = truth.ravel()
    table["covered"] = (table["ci_low"] <= table["truth"] + 1e-12) & (table["truth"] - 1e-12 <= table["ci_high"])
    table["width"] = table["ci_high"] - table["ci_low"]
    ranks = cleaned.rank_sets(est, metrics)
    # a system's true rank: its place in the truly cleaned order; a tie in truth makes any of the tied places true
    tied_low = {(m, names[i]): 1 + int((truth[:, j] > truth[i, j] + 1e-12).sum())
                for j, m in enumerate(metrics) for i in range(len(names))}
    tied_high = {(m, names[i]): int((truth[:, j] >= truth[i, j] - 1e-12).sum())
                 for j, m in enumerate(metrics) for i in range(len(names))}
    ranks["true_low"] = [tied_low[(m, s)] for m, s in zip(ranks["metric"], ranks["system"])]
    ranks["true_high"] = [tied_high[(m, s)] for m, s in zip(ranks["metric"], ranks["system"])]
    ranks["inside"] = (ranks["rank_low"] <= ranks["true_high"]) & (ranks["true_low"] <= ranks["rank_high"])
    per_metric = ranks.groupby("metric")["inside"].all()
    return {"table": table, "ranks": ranks, "reviewed": int(seen.sum()), "all_ranks": bool(per_metric.all()),
            "metric_ranks": per_metric}


def synthetic_values(rng, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(6 systems x 1 metric x n) values in [0, 1]: query difficulty + system skill; `_nl` systems lose on
    legal errors (the translation broke the question), `_fr` ones do not; and the values on the corrected
    questions (no loss: the correction restores what the error took)."""
    n = len(y)
    difficulty = rng.beta(2, 2, n)
    out, fixed = [], []
    for k, name in enumerate(SYSTEMS):
        skill = 0.15 * k / len(SYSTEMS)
        v = np.clip(difficulty + skill + 0.15 * rng.standard_normal(n), 0, 1)
        fixed.append(v)
        if name.endswith("_nl"):
            v = np.where(y, v * rng.uniform(0.0, 0.6, n), v)
        out.append(v)
    return np.array(out)[:, None, :], np.array(fixed)[:, None, :]


def judge_corrected(full: np.ndarray, fixed: np.ndarray, y: np.ndarray, draws, names, metrics) -> pd.DataFrame:
    """The corrected variant (cleaned.corrected_table) against the truth: each system's metric over every
    judged question, a legal error's values replaced by its corrected ones."""
    seen = np.any([d.drawn for d in draws], axis=0)
    w = cleaned.weights(draws, y.astype(float), seen)
    table = cleaned.corrected_table(names, full, fixed, y.astype(float), w, metrics)
    table["truth"] = np.where(y, fixed, full).mean(axis=2).ravel()
    table["covered"] = (table["ci_low"] <= table["truth"] + 1e-12) & (table["truth"] - 1e-12 <= table["ci_high"])
    table["width"] = table["ci_high"] - table["ci_low"]
    return table


RATES = (0.02, 0.05, 0.1, 0.2, 0.3)


def synthetic(populations: int, seed: int = 0, rates=RATES) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    plan = ppi_study.StudyPlan()
    for i in range(populations):
        rate = float(rng.choice(list(rates)))
        quality = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]))
        frame, y, _ = ppi_study.world(seed * 1_000_003 + i, plan.n, rate, quality)
        _, draws = ppi_study.new_design(frame, y, "p_error", plan, seed * 1_000_003 + i)
        judged = np.sort(rng.choice(plan.n, size=203, replace=False))
        on = [cleaned.Aligned(d.batch, d.pool[judged], d.pi[judged], d.p[judged], d.drawn[judged]) for d in draws]
        values, fixed = synthetic_values(rng, y[judged])
        if (~y[judged]).sum() == 0:
            continue
        r = judge(values, y[judged], on, SYSTEMS, ["metric"], seed)
        t = r["table"]
        c = judge_corrected(values, fixed, y[judged], on, SYSTEMS, ["metric"])
        c = c[c["system"].str.contains("_nl")]
        rows.append({"population": i, "rate": rate, "quality": quality, "reviewed": r["reviewed"],
                     "covered": float(t["covered"].mean()), "n_intervals": len(t),
                     "width_pts": 100 * float(t["width"].mean()),
                     "width_nl_pts": 100 * float(t[t["system"].str.endswith("_nl")]["width"].mean()),
                     "ranks_inside": r["all_ranks"], "corrected_covered": float(c["covered"].mean()),
                     "corrected_width_pts": 100 * float(c["width"].mean())})
    return pd.DataFrame(rows)


def real_values(data: str, metrics) -> tuple[list[str], np.ndarray]:
    qrels = Qrels.read(f"{data}/runs/qrels_test203.trec")
    values = []
    for name in SYSTEMS:
        run = Run.read(f"{data}/runs/{name}.trec", name)
        values.append(per_query_matrix(hit_matrix(run, qrels, qrels.qids, max(m.k for m in metrics)), metrics))
    return list(qrels.qids), np.array(values)


def oracle_population(data: str, o: int, cache: str | None) -> tuple[pd.DataFrame, np.ndarray]:
    """The real audit of the test split with oracle `o`'s errors injected, and the oracle's legal verdicts
    (cached in `cache` as a pickle: the audit takes most of the time)."""
    from pathlib import Path

    path = Path(cache) / f"oracle{o}.pkl" if cache else None
    if path is not None and path.exists():
        return pd.read_pickle(path)
    from bbsard_audit.audit.options import AuditOptions
    from bbsard_audit.audit.pipeline import run_audit
    from bbsard_audit.app.simulation import clustered_oracle
    from bbsard_audit.base.dataset import load_dataset

    syn = clustered_oracle(load_dataset(data, with_corpus=False), "test", clusters=3, per_cluster=3, scattered=10, seed=o)
    frame = run_audit(syn.dataset, AuditOptions(split="test", backtranslations=f"{data}/backtranslations_nl_fr.jsonl",
                                                glossary=syn.glossary)).frame
    legal = frame["id"].map(syn.oracle.set_index("id")["verdict"].eq("legal")).to_numpy(dtype=bool)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.to_pickle((frame, legal), path)
    return frame, legal


def real(data: str, oracles: int, seeds: int, cache: str | None = None,
         budget: int = ppi_study.StudyPlan.budget) -> tuple[pd.DataFrame, pd.DataFrame]:
    metrics = parse_metrics(DEFAULT_METRICS)
    labels = [m.name for m in metrics]
    qids, values = real_values(data, metrics)
    plan = ppi_study.StudyPlan(budget=budget)
    cells, rows = [], []
    for o in range(oracles):
        frame, legal = oracle_population(data, o, cache)
        index = {str(i): j for j, i in enumerate(frame["id"])}
        judged = np.array([index[q] for q in qids])
        y = legal[judged]
        study = frame.assign(id=np.arange(1, len(frame) + 1))
        for seed in range(1, seeds + 1):
            _, draws = ppi_study.new_design(study, legal, "p_error", plan, seed)
            on = [cleaned.Aligned(d.batch, d.pool[judged], d.pi[judged], d.p[judged], d.drawn[judged]) for d in draws]
            r = judge(values, y, on, SYSTEMS, labels, seed)
            t = r["table"].assign(oracle=o, seed=seed)
            cells.append(t)
            rows.append({"oracle": o, "seed": seed, "errors_judged": int(y.sum()), "reviewed_judged": r["reviewed"],
                         "reviewed_split": int(np.any([d.drawn for d in draws], axis=0).sum()),
                         "covered": float(t["covered"].mean()), "all_ranks": r["all_ranks"],
                         **{f"ranks_{m}": bool(v) for m, v in r["metric_ranks"].items()}})
        print(f"oracle {o}: {int(y.sum())} legal errors among the judged questions", flush=True)
    return pd.DataFrame(rows), pd.concat(cells, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--part", default="synthetic,real")
    ap.add_argument("--populations", type=int, default=200)
    ap.add_argument("--rates", default=",".join(map(str, RATES)), help="synthetic error rates drawn from")
    ap.add_argument("--seed", type=int, default=0, help="synthetic populations' seed")
    ap.add_argument("--oracles", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cache", help="folder for the oracles' audits (reused when present)")
    ap.add_argument("--budget", type=int, default=ppi_study.StudyPlan.budget,
                    help="reviews per campaign of the real part (control included)")
    ap.add_argument("--out", default="benchmarks/results/bench_cleaned.json")
    args = ap.parse_args()
    out: dict = {}
    started = time.perf_counter()
    if "synthetic" in args.part:
        d = synthetic(args.populations, args.seed, [float(r) for r in args.rates.split(",")])
        by_rate = d.groupby("rate").agg(populations=("covered", "size"), covered=("covered", "mean"),
                                        width_pts=("width_pts", "mean"), width_nl_pts=("width_nl_pts", "mean"),
                                        ranks_inside=("ranks_inside", "mean"),
                                        reviewed=("reviewed", "mean"))
        out["synthetic"] = {"covered": float(d["covered"].mean()), "width_pts": float(d["width_pts"].mean()),
                            "ranks_inside": float(d["ranks_inside"].mean()), "populations": len(d),
                            "by_rate": by_rate.round(4).reset_index().to_dict("records"),
                            "by_quality": d.groupby("quality")["covered"].mean().round(4).to_dict(),
                            "corrected_covered": float(d["corrected_covered"].mean()),
                            "corrected_by_rate": d.groupby("rate").agg(
                                covered=("corrected_covered", "mean"),
                                width_pts=("corrected_width_pts", "mean")).round(4).reset_index().to_dict("records")}
        print(json.dumps(out["synthetic"], indent=1), flush=True)
    if "real" in args.part:
        runs, cells = real(args.data, args.oracles, args.seeds, args.cache, args.budget)
        nl = cells[cells["system"].str.endswith("_nl")]
        out["real"] = {"budget": args.budget, "campaigns": len(runs), "covered": float(cells["covered"].mean()),
                       "covered_per_campaign_min": float(runs["covered"].min()),
                       "width_pts": float(100 * cells["width"].mean()), "width_nl_pts": float(100 * nl["width"].mean()),
                       "width_nl_pts_by_metric": (100 * nl.groupby("metric")["width"].mean()).round(2).to_dict(),
                       "covered_nl": float(nl["covered"].mean()),
                       "width_pts_by_system": (100 * cells.groupby("system")["width"].mean()).round(2).to_dict(),
                       "covered_by_system": cells.groupby("system")["covered"].mean().round(4).to_dict(),
                       "covered_by_metric": cells.groupby("metric")["covered"].mean().round(4).to_dict(),
                       "all_ranks_inside": float(runs["all_ranks"].mean()),
                       "ranks_inside_by_metric": {c[6:]: float(runs[c].mean()) for c in runs if c.startswith("ranks_")},
                       "reviewed_split": float(runs["reviewed_split"].mean()),
                       "reviewed_judged": float(runs["reviewed_judged"].mean()),
                       "errors_judged": runs.groupby("oracle")["errors_judged"].first().tolist()}
        print(json.dumps(out["real"], indent=1), flush=True)
    out["seconds"] = round(time.perf_counter() - started, 1)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
