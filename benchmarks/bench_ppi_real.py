"""Issue 24 on the real test split (222 pairs): `campaign simulate` with an oracle standing in for the
experts (`clustered_oracle`: 3 clusters x 3 + 10 scattered legal errors; there are no real expert
verdicts on this machine), batch 14, budget 70, control 14, seeds 1-6: design `draw` (probability
draws, prediction-powered estimate) vs `ranked` (today's), static and learning. Reports, per run, the
95 % interval width and |error| at 70 reviews, coverage over seeds, errors found, and the first seed's
interval round by round.

Usage: python benchmarks/bench_ppi_real.py --data ../shared/data/bbsard [--p-floor F] [--recalibrate]
[--oracle-seed 1] (another oracle: other clusters and scattered errors)
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import draw_rule_options
from bbsard_audit.app.simulation import SimulationOptions, clustered_oracle, simulate
from bbsard_audit.base.dataset import load_dataset


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--seed", type=int, default=1, help="first control-sample seed")
    ap.add_argument("--seeds", type=int, default=6)
    draw_rule_options.add(ap)
    ap.add_argument("--designs", default="draw,ranked")
    ap.add_argument("--oracle-seed", type=int, default=0,
                    help="clustered_oracle's seed: 0 the oracle of bench_ppi_design.md, 1 a second 'expert'")
    ap.add_argument("--out", default="benchmarks/results/bench_ppi_real.json")
    args = ap.parse_args()
    ds = load_dataset(args.data, with_corpus=False)
    syn = clustered_oracle(ds, "test", clusters=3, per_cluster=3, scattered=10, seed=args.oracle_seed)
    truth = float((syn.oracle["verdict"] == "legal").mean())
    bt = f"{args.data}/backtranslations_nl_fr.jsonl"
    out = {"seed": args.seed, "oracle_seed": args.oracle_seed, "truth": truth, "n_legal": int((syn.oracle["verdict"] == "legal").sum()), "runs": {}}
    out["certain_share"] = args.certain
    rule = draw_rule_options.rule(args)
    out["tradeoff"], out["floor_share"], out["recalibrate"], out["p_floor"] = (rule.tradeoff, rule.floor_share,
                                                                             rule.recalibrate, rule.p_floor)
    for design in args.designs.split(","):
        for learning in (False, True):
            result = simulate(syn.dataset, oracle=syn.make_oracle(), options=SimulationOptions(
                split="test", backtranslations=bt, glossary=syn.glossary, batch=14, budget=70, control=14, seed=args.seed,
                seeds=args.seeds, learning=learning, design=design, rule=rule))
            seeds = result.seeds
            last = seeds.sort_values("round").groupby("seed").tail(1)
            name = f"{design}/{'learning' if learning else 'static'}"
            out["runs"][name] = {
                "width_pts": round(100 * float((last["ci_high"] - last["ci_low"]).mean()), 2),
                "abs_error_pts": round(100 * float((last["estimate"] - truth).abs().mean()), 2),
                "covered": int(((last["ci_low"] <= truth) & (truth <= last["ci_high"])).sum()),
                "seeds": int(len(last)), "found": round(float(last["found_legal"].mean()), 2),
                "found_per_seed": last["found_legal"].astype(int).tolist(),
                "reviewed": round(float(last["reviewed"].mean()), 1),
                "first_seed": result.curve[["round", "reviewed", "found_legal", "estimate", "ci_low", "ci_high",
                                            "cs_low", "cs_high"]].round(4).to_dict("records")}
            print(name, {k: v for k, v in out["runs"][name].items() if k != "first_seed"}, flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1, default=lambda v: None if isinstance(v, float) and np.isnan(v) else v)


if __name__ == "__main__":
    main()
