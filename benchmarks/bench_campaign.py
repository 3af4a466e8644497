"""Benchmark the campaign simulator on the real bBSARD questions with a synthetic clustered oracle.

1. test split (222 pairs): one warm round = learn + re-audit with the learned layer (every signal
   but the glossary from the caches) + re-rank; target <= 2 s.
2. all 1,108 pairs, budget 300, batch 20, control 40: the whole warm simulation; target < 2 min.
   Learning and the static baseline are both run, so the figures also show what learning finds.

The oracle is built by `bbsard_audit.app.simulation.clustered_oracle` (self-test corruptions + clusters of
one wrong rendering of a shipped glossary term): no question is curated by hand. Each simulation
runs twice in this process; the second (warm: embeddings, signal cache and lemmas on disk) is timed.

Usage: python benchmarks/bench_campaign.py [--data ../shared/data/bbsard] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bbsard_audit.app.simulation import SimulationOptions, clustered_oracle, simulate
from bbsard_audit.base.dataset import load_dataset

REPO = Path(__file__).resolve().parents[1]


def run(ds, split: str, data: Path, cache_dir: Path | None, budget: int, batch: int, control: int,
        clusters: int, per_cluster: int, scattered: int) -> dict:
    syn = clustered_oracle(ds, split, clusters=clusters, per_cluster=per_cluster, scattered=scattered, seed=0)
    out = {"split": split, "oracle_legal": int((syn.oracle["verdict"] == "legal").sum()),
           "clusters": [c["entry"] for c in syn.clusters]}
    for learning in (True, False):
        for attempt in ("cold", "warm"):
            start = time.perf_counter()
            result = simulate(syn.dataset, oracle=syn.make_oracle(), options=SimulationOptions(
                split=split, backtranslations=data / "backtranslations_nl_fr.jsonl", batch=batch, budget=budget,
                control=control, seed=0, learning=learning, glossary=syn.glossary, cache_dir=cache_dir))
            wall = time.perf_counter() - start
        last = result.curve.iloc[-1]
        out["learning" if learning else "static"] = {
            "wall_s_warm": round(wall, 1), "rounds": int(last["round"]), "reviewed": int(last["reviewed"]),
            "found_legal": int(last["found_legal"]),
            "found_legal_at": {int(r): int(f) for r, f in zip(result.curve["reviewed"], result.curve["found_legal"])},
            "round_mean_s": result.meta["timings_s"]["round_mean"],
            "round_max_s": result.meta["timings_s"]["round_max"], "rules": len(result.rules),
            "first_audit_s": result.meta["timings_s"]["first_audit"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("BBSARD_SHARED", REPO.parent / "shared" / "data" / "bbsard")))
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    ds = load_dataset(str(args.data), with_corpus=False)
    figures = {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0],
               "test_split": run(ds, "test", args.data, args.cache_dir, budget=100, batch=20, control=20,
                                 clusters=3, per_cluster=3, scattered=10),
               "all_pairs": run(ds, "all", args.data, args.cache_dir, budget=300, batch=20, control=40,
                                clusters=6, per_cluster=6, scattered=30)}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
