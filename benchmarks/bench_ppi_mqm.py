"""Issue 32 on real labels: the static draw campaign (annotations/draw.py, as `annotate push --campaign` +
`--next 14` draw it) on populations of the MQM dev set (WMT21 TED en->de, ../shared/data/mqm_ende_ted,
7,406 pairs), the oracle its real `major_accuracy` label, the prediction the audit's own `p_error` on them.

A population is one MT system's translations of 222 English segments drawn at random (population j: system
j mod 14, segments drawn with seed 1000 + j): a lead auditing one system's output. Each population x control
seeds 1..S: coverage of the 95 % interval at 70 reviews, width, |error|, errors found (today's ranking:
the 56 riskiest + 14 control, beside it), and the stopping rule run to the end. Learning does not run here:
the learned term rules are fr->nl only (audit/learn.py), so a learning campaign refuses an en->de dataset.

Usage: bbsard-audit audit --dataset ../shared/data/mqm_ende_ted/beir/ted-ende.yaml --split test --out
reports/ted-ende (once; about 10 min), then python benchmarks/bench_ppi_mqm.py --audit reports/ted-ende/audit.csv
--data ../shared/data/mqm_ende_ted [--populations 14] [--seeds 30] [--p-floor F] [--recalibrate] ...
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import draw_rule_options
import ppi_study

COLUMNS = ["id", "split", "category", "risk", "p_error", "flagged"]


def labelled(audit: str | Path, data: str | Path) -> pd.DataFrame:
    """The audit's rows with the pair's system, segment and `major_accuracy` label (y)."""
    frame = pd.read_csv(audit, usecols=COLUMNS, keep_default_na=False)
    rows = [json.loads(line) for line in (Path(data) / "pairs.jsonl").read_text().splitlines()]
    labels = pd.DataFrame({"id": [r["id"] for r in rows], "system": [r["system"] for r in rows],
                           "seg": [r["seg_id"] for r in rows],
                           "y": [bool(r["labels"]["major_accuracy"]) for r in rows]})
    return frame.merge(labels, on="id", validate="one_to_one")


def populations(frame: pd.DataFrame, k: int, n: int = 222) -> list[pd.DataFrame]:
    """k populations of n pairs: one system's translations of n random segments each (ids 1..n)."""
    systems, segments = sorted(frame["system"].unique()), np.array(sorted(frame["seg"].unique()))
    out = []
    for j in range(k):
        chosen = np.random.default_rng(1000 + j).choice(segments, n, replace=False)
        pop = frame[(frame["system"] == systems[j % len(systems)]) & frame["seg"].isin(chosen)]
        out.append(pop.sort_values("seg").reset_index(drop=True).assign(id=np.arange(1, n + 1)))
    return out


def summary(d: pd.DataFrame) -> dict:
    return {"campaigns": len(d), "truth_pct": round(100 * float(d["truth"].mean()), 2),
            "coverage": round(float(d["covered"].mean()), 4), "width_pts": round(100 * float(d["width"].mean()), 2),
            "abs_error_pts": round(100 * float((d["estimate"] - d["truth"]).abs().mean()), 2),
            "found": round(float(d["found"].mean()), 2), "reviewed_max": int(d["reviewed"].max()),
            "false_stop": round(float(d["false_stop"].mean()), 4),
            "today_coverage": round(float(d["today_covered"].mean()), 4),
            "today_width_pts": round(100 * float(d["today_width"].mean()), 2),
            "today_found": round(float(d["today_found"].mean()), 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True, help="audit.csv of the MQM test split")
    ap.add_argument("--data", required=True, help="the mqm_ende_ted folder (pairs.jsonl)")
    ap.add_argument("--populations", type=int, default=14)
    ap.add_argument("--seeds", type=int, default=30, help="control-sample seeds 1..N per population")
    draw_rule_options.add(ap)
    ap.add_argument("--out", default="benchmarks/results/bench_ppi_mqm.json")
    args = ap.parse_args()
    rule = draw_rule_options.rule(args)
    plan = ppi_study.StudyPlan(rule=rule)
    started, rows = time.perf_counter(), []
    frame = labelled(args.audit, args.data)
    for j, pop in enumerate(populations(frame, args.populations)):
        y = pop["y"].to_numpy(bool)
        for seed in range(1, args.seeds + 1):
            rows.append({"population": j, "seed": seed, **ppi_study.campaign(pop[COLUMNS], y, "p_error", plan, seed)})
    d = pd.DataFrame(rows)
    auc = float(pd.Series(frame["p_error"]).rank().loc[frame["y"]].mean())  # mean rank of an error, for the AUC
    n_pos, n_neg = int(frame["y"].sum()), int((~frame["y"]).sum())
    out = {"populations": args.populations, "seeds": args.seeds, "rule": {"certain": rule.certain, "tradeoff": rule.tradeoff, "floor_share": rule.floor_share,
                                                                 "p_floor": rule.p_floor, "recalibrate": rule.recalibrate,
                                                                 "sampling": rule.sampling},
           "auc_p_error": round((auc - (n_pos + 1) / 2) / n_neg, 4),
           "wall_s": round(time.perf_counter() - started, 1), "all": summary(d)}
    print(json.dumps(out, indent=1))
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
