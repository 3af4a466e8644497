"""Issue 24: probability draws + prediction-powered estimate vs today's campaign design, simulated.

Synthetic populations (benchmarks/ppi_study.py): 222 pairs, error rates 2-30 %, prediction quality from
useless to strong, the prediction either a calibrated `p_error` or the raw `risk`. At 70 reviews
(control 14 at the start, then `--next 14` draws): coverage of the 95 % interval, mean width,
mean |error|, errors found; today's design (56 riskiest + 14 control, post-stratified) on the same
populations; the stopping rule (confidence sequence, max 2 errors left) checked after every batch.

Usage: python benchmarks/bench_ppi_design.py [--n 1000] [--certain SHARE] [--tradeoff MU] [--floor-share F]
[--p-floor F] [--recalibrate] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd

import draw_rule_options
import ppi_study


def table(rows: pd.DataFrame, by: str | None) -> pd.DataFrame:
    groups = [("all", rows)] if by is None else list(rows.groupby(by))
    out = []
    for name, g in groups:
        out.append({"group": f"{by}={name}" if by else "all", "n": len(g),
                    "coverage": g["covered"].mean(), "width_pts": 100 * g["width"].mean(),
                    "mae_pts": 100 * (g["estimate"] - g["truth"]).abs().mean(),
                    "found": g["found"].mean(), "false_stop": g["false_stop"].mean(),
                    "stopped": g["stopped_at"].notna().mean(), "stop_reviews": g["stopped_at"].mean(),
                    "today_coverage": g["today_covered"].mean(), "today_width_pts": 100 * g["today_width"].mean(),
                    "today_mae_pts": 100 * (g["today_estimate"] - g["truth"]).abs().mean(),
                    "today_found": g["today_found"].mean(), "auc": g["auc"].mean()})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    draw_rule_options.add(ap)
    ap.add_argument("--out", default="benchmarks/results/bench_ppi_design.json")
    args = ap.parse_args()
    t = time.perf_counter()
    rule = draw_rule_options.rule(args)
    rows = ppi_study.run(args.n, seed=args.seed, plan=ppi_study.StudyPlan(rule=rule))
    wall = time.perf_counter() - t
    tables = {by or "all": table(rows, by) for by in (None, "prediction", "rate", "quality")}
    tables["p_error by rate"] = table(rows[rows["prediction"] == "p_error"], "rate")
    tables["p_error by quality"] = table(rows[rows["prediction"] == "p_error"], "quality")
    pd.set_option("display.width", 250)
    for name, tab in tables.items():
        print(f"\n## {name}\n{tab.round(3).to_string(index=False)}")
    print(f"\n{len(rows)} populations in {wall:.0f} s")
    with open(args.out, "w") as fh:
        json.dump({"n": args.n, "seed": args.seed, "certain_share": args.certain, "tradeoff": rule.tradeoff,
                   "floor_share": rule.floor_share, "recalibrate": rule.recalibrate, "p_floor": rule.p_floor, "wall_s": round(wall, 1),
                   **{k: v.round(4).to_dict("records") for k, v in tables.items()}}, fh, indent=1)


if __name__ == "__main__":
    main()
