"""Issue 24: errors found against interval width, draw rule by draw rule, on the same synthetic populations.

Every rule runs the campaign of benchmarks/ppi_study.py (start control 14, `--next 14` draws to 70 reviews,
the `p_error` prediction) on the same populations; today's static ranking (56 riskiest + 14 control)
gives the errors-found reference. A rule is `MU` (the trade-off rule, μ), `linear` (π ∝ p, the rule
before), `certainSHARE` (the linear rule with that share forced certain), each optionally `/FLOOR`
(the floor share).

Usage: PYTHONPATH=. python benchmarks/bench_ppi_frontier.py --n 250 linear 0.05 0.02 0.008 0.003 0.001 certain0.5
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from bbsard_audit.annotations import draw
import ppi_study
from bbsard_audit.audit.pipeline import review_queue


def rule_of(name: str) -> draw.DrawRule:
    head, _, floor = name.partition("/")
    floor_share = float(floor) if floor else draw.FLOOR_SHARE
    if head == "linear":
        return draw.DrawRule(0.0, None, floor_share)
    if head.startswith("certain"):
        return draw.DrawRule(float(head.removeprefix("certain")), None, floor_share)
    return draw.DrawRule(0.0, float(head), floor_share)


def today_found(seed: int, rate: float, quality: float) -> int:
    frame, y, _ = ppi_study.world(seed, 222, rate, quality)
    top = frame["risk"].rank(method="first", ascending=False) <= 56
    queue, _ = review_queue(frame.assign(flagged=top), 56, 14, seed)
    return int(y[queue["id"].to_numpy() - 1].sum())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=250)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/bench_ppi_frontier.json")
    ap.add_argument("rules", nargs="+")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    grid = [(args.seed * 1_000_000 + i, float(rng.choice([0.02, 0.05, 0.1, 0.2, 0.3])),
             float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]))) for i in range(args.n)]
    out = {"n": args.n, "seed": args.seed, "today_found": float(np.mean([today_found(*g) for g in grid])), "rules": {}}
    print(f"today's static ranking finds {out['today_found']:.2f}", flush=True)
    for name in args.rules:
        plan = ppi_study.StudyPlan(rule=rule_of(name))
        rows = pd.DataFrame([ppi_study.one(s, r, q, "p_error", plan, with_today=False, stopping=False)
                             for s, r, q in grid])
        out["rules"][name] = {
            "found": round(float(rows["found"].mean()), 2), "width_pts": round(100 * float(rows["width"].mean()), 2),
            "mae_pts": round(100 * float((rows["estimate"] - rows["truth"]).abs().mean()), 2),
            "coverage": round(float(rows["covered"].mean()), 3),
            "coverage_by_rate": rows.groupby("rate")["covered"].mean().round(3).to_dict()}
        print(name, out["rules"][name], flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
