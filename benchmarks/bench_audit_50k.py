"""Benchmark the audit at 50,000 question pairs: wall time and peak memory on 2 cores (issue 33).

The pairs are built from real bBSARD text: pair i joins two real translation pairs, a and b, as
(French a + " " + French b, Dutch a + " " + Dutch b), so every text is new (the embeddings are
computed, not read from a cache) and still a faithful translation of its partner. The folder is
written in the bBSARD CSV layout (test split) and audited by the real command in a child process
(offline defaults, no back-translations or runs), its progress lines passed through, with the peak
RSS of the process tree sampled from /proc. Target: within 4 GB peak on 2 cores.

`--xling-only N`: only the cross-lingual margin step (the one step that was n x n) on N rows of
random unit vectors of e5-small's width (384; memory and time do not depend on the values), in a
child process, for its own peak RSS at sizes the whole audit cannot reach on a shared machine.

Usage: python benchmarks/bench_audit_50k.py [--pairs 50000] [--data ../shared/data/bbsard]
       [--work /tmp/bench50k] [--out benchmarks/results/bench_audit_50k.json]
       python benchmarks/bench_audit_50k.py --xling-only 50000
Results: benchmarks/bench_audit_50k.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_audit import tree_rss_mb  # noqa: E402

COLUMNS = ["id", "category", "subcategory", "question", "extra_description", "article_ids"]


def recombined(data: Path, n: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """`n` pairs, each two real bBSARD pairs joined (distinct ordered (a, b), a != b)."""
    sides = {lang: pd.concat([pd.read_csv(data / f"questions_{lang}_{split}.csv", dtype=str, keep_default_na=False)
                              for split in ("train", "test")], ignore_index=True) for lang in ("fr", "nl")}
    m = len(sides["fr"])
    if n > m * (m - 1):
        raise SystemExit(f"at most {m * (m - 1):,} pairs from {m} questions")
    rng = np.random.default_rng(seed)
    codes = rng.choice(m * (m - 1), size=n, replace=False)
    a, b = codes // (m - 1), codes % (m - 1)
    b = b + (b >= a)
    out = {}
    for lang, side in sides.items():
        q = side["question"].to_numpy(object)
        out[lang] = pd.DataFrame({"id": np.arange(1, n + 1), "category": side["category"].to_numpy(object)[a],
                                  "subcategory": side["subcategory"].to_numpy(object)[a],
                                  "question": q[a] + " " + q[b], "extra_description": "",
                                  "article_ids": side["article_ids"].to_numpy(object)[a]})[COLUMNS]
    return out


def run(args: list[str], env: dict) -> dict:
    """The CLI in a child process: wall seconds, CPU seconds, peak RSS of the tree; stderr passed through."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", *args], env=env)
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            peak[0] = max(peak[0], tree_rss_mb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"bbsard-audit {' '.join(args)} failed ({code})")
    return {"wall_s": round(time.perf_counter() - start, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "peak_tree_rss_mb": round(peak[0], 1)}


XLING = """
import resource, sys, time
import numpy as np
from bbsard_audit.audit.crosslingual import margin_scores
n = int(sys.argv[1])
rng = np.random.default_rng(0)
def unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
src = unit(rng.normal(size=(n, 384)).astype(np.float32))
tgt = unit(src + 0.5 * rng.normal(size=(n, 384)).astype(np.float32))
start = time.perf_counter()
margin_scores(src, tgt)
print(round(time.perf_counter() - start, 1), round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
"""


def xling_only(n: int) -> dict:
    """The margin step alone on `n` rows, in a child process: its seconds and peak RSS (MB)."""
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", XLING, str(n)], env=env, capture_output=True, text=True, check=True)
    seconds, peak = done.stdout.split()
    return {"rows": n, "margin_step_s": float(seconds), "peak_rss_mb": float(peak)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "bbsard")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_audit_50k"))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "bench_audit_50k.json")
    parser.add_argument("--xling-only", type=int, metavar="N", help="Only the cross-lingual margin step on N rows.")
    opts = parser.parse_args()
    if opts.xling_only:
        print(json.dumps(xling_only(opts.xling_only)))
        return
    folder = opts.work / f"data_{opts.pairs}"
    folder.mkdir(parents=True, exist_ok=True)
    for lang, frame in recombined(opts.data, opts.pairs).items():
        frame.to_csv(folder / f"questions_{lang}_test.csv", index=False)
    env = {**os.environ, "BBSARD_AUDIT_WORKERS": "2", "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    load = os.getloadavg()[0]
    out = opts.work / f"audit_{opts.pairs}"
    result = run(["audit", "--dataset", str(folder), "--split", "all", "--cache-dir", str(opts.work / "cache"),
                  "--out", str(out)], env)
    audited = pd.read_csv(out / "audit.csv", usecols=["id"])
    record = {"pairs": opts.pairs, "audited": len(audited), "cpus": len(os.sched_getaffinity(0)),
              "load_avg_1min_before": round(load, 2), "load_avg_1min_after": round(os.getloadavg()[0], 2), **result}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
