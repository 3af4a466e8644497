"""Issue 24 on the real test split with many oracles: the static draw campaign (annotations/draw.py, as
`annotate push --campaign` + `--next 14` draw it) on the real audit of the 222 test pairs, for several
`clustered_oracle` seeds (3 clusters x 3 + 10 scattered legal errors each: which pairs are errors, and how
well the audit sees them, changes with the seed) x many control-sample seeds. Per oracle: coverage of the
95 % interval at 70 reviews, width, |error|, errors found (today's ranking beside it), and the stopping
rule run to the end (false stop: stopped on "<= 2 errors left" with more left). Fast (no re-audit: the
static campaign's predictions are the first audit's); `bench_ppi_real.py` runs `campaign simulate`
itself, learning included, on fewer seeds.

`--errors p_error`: instead of clustered oracles, the real audit of the test split as it is (no injected
error) and oracle o's legal errors drawn independently with probability p_error x (`--expected` / Σ p_error),
seed o: errors exactly where the audit expects them, the case most favourable to today's ranking (an
oracle the audit sees well; the clustered oracles' 10 scattered errors are ones it sees badly).

Usage: python benchmarks/bench_ppi_oracles.py --data ../shared/data/bbsard [--oracles 6]
[--seeds 30] [--errors clustered|p_error] [--expected 18] [--p-floor F] [--recalibrate] [--tradeoff MU]
[--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

import draw_rule_options
import ppi_study
from bbsard_audit.app.simulation import clustered_oracle
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.base.dataset import load_dataset


def population(ds, data: str, oracle_seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """The audit frame of the test split with one oracle's errors injected (ids renumbered 1..N in order,
    as benchmarks/ppi_study indexes them), and the oracle's legal verdicts."""
    syn = clustered_oracle(ds, "test", clusters=3, per_cluster=3, scattered=10, seed=oracle_seed)
    frame = run_audit(syn.dataset, AuditOptions(split="test", backtranslations=f"{data}/backtranslations_nl_fr.jsonl",
                                                glossary=syn.glossary)).frame
    legal = frame["id"].map(syn.oracle.set_index("id")["verdict"].eq("legal")).to_numpy(dtype=bool)
    return frame.assign(id=np.arange(1, len(frame) + 1)), legal


def p_error_population(ds, data: str, oracle_seed: int, expected: float) -> tuple[pd.DataFrame, np.ndarray]:
    """The real audit of the test split, errors drawn from its own p_error (scaled to `expected` errors)."""
    frame = run_audit(ds, AuditOptions(split="test", backtranslations=f"{data}/backtranslations_nl_fr.jsonl")).frame
    p = frame["p_error"].to_numpy(float)
    legal = np.random.default_rng(oracle_seed).random(len(p)) < np.clip(p * expected / p.sum(), 0, 1)
    return frame.assign(id=np.arange(1, len(frame) + 1)), legal


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--oracles", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=30, help="control-sample seeds 1..N per oracle")
    ap.add_argument("--errors", choices=("clustered", "p_error"), default="clustered",
                    help="clustered oracles (3 x 3 + 10 scattered, injected) or errors drawn from the audit's p_error")
    ap.add_argument("--expected", type=float, default=18.0, help="--errors p_error: expected legal errors per oracle")
    draw_rule_options.add(ap)
    ap.add_argument("--out", default="benchmarks/results/bench_ppi_oracles.json")
    args = ap.parse_args()
    rule = draw_rule_options.rule(args)
    plan = ppi_study.StudyPlan(rule=rule)
    ds = load_dataset(args.data, with_corpus=False)
    started, rows = time.perf_counter(), []
    for o in range(args.oracles):
        frame, y = (population(ds, args.data, o) if args.errors == "clustered"
                    else p_error_population(ds, args.data, o, args.expected))
        for seed in range(1, args.seeds + 1):
            rows.append({"oracle": o, "seed": seed, **ppi_study.campaign(frame, y, "p_error", plan, seed)})
        print(f"oracle {o} done", flush=True)
    d = pd.DataFrame(rows)
    d["abs_error"] = (d["estimate"] - d["truth"]).abs()
    d["today_abs_error"] = (d["today_estimate"] - d["truth"]).abs()

    def summary(g: pd.DataFrame) -> dict:
        return {"campaigns": len(g), "coverage": round(float(g["covered"].mean()), 4),
                "width_pts": round(100 * float(g["width"].mean()), 2),
                "abs_error_pts": round(100 * float(g["abs_error"].mean()), 2), "found": round(float(g["found"].mean()), 2),
                "false_stop": round(float(g["false_stop"].mean()), 4),
                "stop_reviews": round(float(g["stopped_at"].mean()), 1),
                "today_coverage": round(float(g["today_covered"].mean()), 4),
                "today_width_pts": round(100 * float(g["today_width"].mean()), 2),
                "today_abs_error_pts": round(100 * float(g["today_abs_error"].mean()), 2),
                "today_found": round(float(g["today_found"].mean()), 2)}
    out = {"oracles": args.oracles, "seeds": args.seeds, "errors": args.errors,
           **({"expected": args.expected} if args.errors == "p_error" else {}), "tradeoff": rule.tradeoff, "floor_share": rule.floor_share,
           "certain_share": rule.certain, "recalibrate": rule.recalibrate, "p_floor": rule.p_floor,
           "wall_s": round(time.perf_counter() - started, 1), "all": summary(d),
           "by_oracle": {str(o): summary(g) for o, g in d.groupby("oracle")}}
    print(json.dumps(out, indent=1))
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
