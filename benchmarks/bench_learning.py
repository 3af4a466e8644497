"""Does learning pay? The campaign simulator on held-out synthetic clustered oracles, many seeds.

Each seed builds its own oracle on the real bBSARD pairs (`campaign.clustered_oracle`): clusters of
one wrong rendering of a glossary term drawn at random for that seed (the held-out terms: the
ranking's settings were fixed on the bundled sample, never on these oracles), injected into several
questions holding the term, plus scattered self-test corruptions; every other pair is `correct`.
Two oracle kinds: `known` (the glossary keeps the term's entry but not the wrong rendering, so
`term_missing` still fires) and `unknown` (the whole entry is removed: the audit does not expect the
French term at all). Each oracle is simulated with the same budget by

- static:   the first ranking (`--no-learning`);
- rules:    learned term rules, the audit's risk as ranking (`--no-refit`);
- learning: rules + the refitted ranking with its exploration share (the default).

Reported: legal errors found at each budget, mean ± sd over seeds, and the paired difference
learning - static (mean, sd, seeds where learning found more / fewer). Then the speed figure: one
oracle, 1,108 pairs, `seeds` control samples in one `simulate` call (target < 10 min).

Usage: python benchmarks/bench_learning.py [--data ../shared/data/bbsard] [--seeds 10] [--speed-seeds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bbsard_audit.app.simulation import SimulationOptions, clustered_oracle, simulate
from bbsard_audit.base.dataset import load_dataset

REPO = Path(__file__).resolve().parents[1]
BUDGETS = (100, 200, 300)
MODES = {"static": dict(learning=False), "rules": dict(learning=True, refit=False),
         "learning": dict(learning=True)}


def found_at(curve, budgets) -> list[int]:
    """Legal errors found once `b` pairs were reviewed (the last round at or below b)."""
    return [int(curve.loc[curve["reviewed"] <= b, "found_legal"].max()) for b in budgets]


def compare(ds, data: Path, seeds: int, unknown: bool, batch: int, control: int) -> dict:
    found = {m: [] for m in MODES}
    for seed in range(seeds):
        syn = clustered_oracle(ds, "all", clusters=6, per_cluster=6, scattered=30, seed=100 + seed,
                               unknown_terms=unknown)
        for mode, kw in MODES.items():
            result = simulate(syn.dataset, oracle=syn.make_oracle(), options=SimulationOptions(
                split="all", backtranslations=data / "backtranslations_nl_fr.jsonl", batch=batch,
                budget=max(BUDGETS), control=control, seed=seed, glossary=syn.glossary, **kw))
            found[mode].append(found_at(result.curve, BUDGETS))
        print(f"  {'unknown' if unknown else 'known'} seed {seed}: "
              + ", ".join(f"{m} {found[m][-1]}" for m in MODES), file=sys.stderr, flush=True)
    arrays = {m: np.array(v, dtype=float) for m, v in found.items()}
    diff = arrays["learning"] - arrays["static"]
    return {"budgets": list(BUDGETS),
            "found": {m: {"mean": a.mean(0).round(2).tolist(), "sd": a.std(0, ddof=1).round(2).tolist()}
                      for m, a in arrays.items()},
            "learning_minus_static": {"mean": diff.mean(0).round(2).tolist(), "sd": diff.std(0, ddof=1).round(2).tolist(),
                                      "seeds_more": (diff > 0).sum(0).tolist(), "seeds_fewer": (diff < 0).sum(0).tolist()},
            "rules_minus_static": {"mean": (arrays["rules"] - arrays["static"]).mean(0).round(2).tolist()},
            "per_seed": found}


def speed(ds, data: Path, seeds: int) -> dict:
    syn = clustered_oracle(ds, "all", clusters=6, per_cluster=6, scattered=30, seed=0)
    start = time.perf_counter()
    result = simulate(syn.dataset, oracle=syn.make_oracle(), options=SimulationOptions(
        split="all", backtranslations=data / "backtranslations_nl_fr.jsonl", batch=20, budget=300, control=40,
        seed=0, seeds=seeds, glossary=syn.glossary))
    return {"pairs": result.meta["n_pairs"], "seeds": seeds, "wall_s": round(time.perf_counter() - start, 1),
            "round_mean_s": result.meta["timings_s"]["round_mean"], "found_legal_final": result.meta["found_legal_final"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("BBSARD_SHARED", REPO.parent / "shared" / "data" / "bbsard")))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--speed-seeds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--control", type=int, default=40)
    args = parser.parse_args()
    ds = load_dataset(str(args.data), with_corpus=False)
    figures = {"cpus": os.cpu_count(), "load_1min_start": os.getloadavg()[0]}
    for unknown in (False, True):
        figures["unknown_terms" if unknown else "known_terms"] = compare(ds, args.data, args.seeds, unknown,
                                                                         args.batch, args.control)
    if args.speed_seeds:
        figures["speed"] = speed(ds, args.data, args.speed_seeds)
    figures["load_1min_end"] = os.getloadavg()[0]
    print(json.dumps({k: v for k, v in figures.items()}, indent=1, default=str))


if __name__ == "__main__":
    main()
