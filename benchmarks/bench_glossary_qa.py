"""Time the glossary and QA signals on the real bBSARD questions and count flags per split.

Usage: python benchmarks/bench_glossary_qa.py [DATA_DIR]   (default ../shared/data/bbsard)

Runs each measurement in a fresh process so "cold" really starts without cached lemmas (a temporary
BBSARD_AUDIT_CACHE) and "warm" reuses the lemma cache the cold run wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, resource
from collections import Counter
start = time.perf_counter()
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit import checks
from bbsard_audit.base.languages import BBSARD
ds = load_dataset(sys.argv[1], with_corpus=False)
pairs = [(p.source, p.target) for p in ds.pairs]
t0 = time.perf_counter()
glossary = Glossary.load()
gl, _ = glossary.check_pairs(pairs, BBSARD)
t1 = time.perf_counter()
qa, _ = checks.check_pairs(pairs)
t2 = time.perf_counter()
counts = {}
for split in ("train", "test", "all"):
    idx = [i for i, p in enumerate(ds.pairs) if split == "all" or p.split == split]
    c = Counter(f.flag for i in idx for f in {x.flag: x for x in gl[i] + qa[i]}.values())
    counts[split] = {"pairs": len(idx), "flagged": sum(1 for i in idx if gl[i] or qa[i]),
                     "flagged_glossary": sum(1 for i in idx if gl[i]), "flagged_qa": sum(1 for i in idx if qa[i]),
                     "pairs_per_flag": dict(sorted(c.items()))}
print(json.dumps({"glossary_version": glossary.version, "entries": len(glossary.entries),
                  "load_and_glossary_s": round(t1 - t0, 3), "qa_s": round(t2 - t1, 3),
                  "both_s": round(t2 - t0, 3), "process_s": round(t2 - start, 3),
                  "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "counts": counts}))
"""


def run(data: Path, cache: str) -> dict:
    env = dict(os.environ, BBSARD_AUDIT_CACHE=cache, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", CHILD, str(data)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "data" / "bbsard"
    with tempfile.TemporaryDirectory() as cache:
        cold = run(data, cache)
        warm = run(data, cache)
    print(json.dumps({"cold": {k: v for k, v in cold.items() if k != "counts"},
                      "warm": {k: v for k, v in warm.items() if k != "counts"},
                      "counts": warm["counts"]}, indent=2))


if __name__ == "__main__":
    main()
