"""Benchmark the audit on the real bBSARD questions (1,108 pairs) with the offline defaults.

Measures, each in its own process (what a user waits for, imports included): the whole audit cold
(empty embedding + signal cache) and warm, with wall time and peak RSS; then the self-test on the
test split, the flag counts on the real data, and how the optional retrieval-consistency signal
relates to the audit. Targets (issue 3): <= 60 s cold, <= 5 s warm, < 2 GB RSS, selftest recall
>= 0.8 at false-flag rate <= 0.2, <= 25% of real pairs flagged.

Usage: python benchmarks/bench_audit.py [--data ../shared/data/bbsard] [--out reports/bench]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parents[1]


def tree_rss_mb(pid: int) -> float:
    """Summed RSS of a process and its descendants (embedding workers), from /proc; 0 once gone.

    Pages the workers share (the mmapped model, libraries) count once per process: an upper bound.
    """
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total / 1024


def timed_cli(args: list[str], env: dict) -> dict:
    """Run `bbsard-audit ARGS` in a child process: wall seconds, CPU seconds (workers included), peak RSS."""
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_tree = [0.0]

    def sample() -> None:  # the workers' RSS is not in the parent's rusage: sample the process tree
        while proc.returncode is None and not stop.wait(0.25):
            peak_tree[0] = max(peak_tree[0], tree_rss_mb(proc.pid))

    stop = threading.Event()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    sampler.join()
    wall = time.perf_counter() - start
    _out, err = proc.stdout.read(), proc.stderr.read()
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"bbsard-audit {' '.join(args)} failed ({code}):\n{err}")
    # CPU seconds do not depend on what else runs on the machine (wall time does, a lot, when shared)
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "peak_tree_rss_mb": round(peak_tree[0], 1),
            "load_avg_1min_before": round(load_before, 2), "load_avg_1min_after": round(os.getloadavg()[0], 2),
            "output": err.strip()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "bbsard")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench")
    parser.add_argument("--skip-selftest", action="store_true")
    opts = parser.parse_args()
    bt = opts.data / "backtranslations_nl_fr.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    results: dict = {"data": str(opts.data), "cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bbsard-bench-") as tmp:
        cache = Path(tmp) / "cache"
        audit_args = ["audit", "--dataset", str(opts.data), "--split", "all", "--backtranslations", str(bt),
                      "--cache-dir", str(cache), "--out", str(opts.out / "audit")]
        results["cold"] = timed_cli(audit_args, env)
        results["warm"] = timed_cli(audit_args, env)
        for run in ("cold", "warm"):
            r = results[run]
            print(f"{run}: {r['wall_s']} s wall, {r['cpu_s']} s CPU, {r['peak_rss_mb']} MB peak RSS "
                  f"({r['peak_tree_rss_mb']} MB with workers), load {r['load_avg_1min_before']}", flush=True)
        if not opts.skip_selftest:
            results["selftest_test"] = timed_cli(["audit", "selftest", "--dataset", str(opts.data), "--split", "test",
                                                  "--backtranslations", str(bt), "--cache-dir", str(cache),
                                                  "--out", str(opts.out / "selftest_test")], env)
        runs = opts.data / "runs"
        rc = {}
        for system in ("bm25", "e5", "jina"):
            if (runs / f"{system}_fr.trec").exists():
                out = opts.out / f"audit_rc_{system}"
                timed_cli(["audit", "--dataset", str(opts.data), "--split", "test", "--backtranslations", str(bt),
                           "--runs-fr", str(runs / f"{system}_fr.trec"), "--runs-nl", str(runs / f"{system}_nl.trec"),
                           "--cache-dir", str(cache), "--out", str(out)], env)
                rc[system] = retrieval_consistency_figures(pd.read_csv(out / "audit.csv"))
        results["retrieval_consistency"] = rc
    meta = json.loads((opts.out / "audit" / "audit.meta.json").read_text())
    frame = pd.read_csv(opts.out / "audit" / "audit.csv")
    results["timings_in_process_s"] = meta["timings_s"]
    results["flagged"] = {"all": float(frame["flagged"].mean()),
                          **{s: float(g["flagged"].mean()) for s, g in frame.groupby("split")}}
    results["n_flagged"] = int(frame["flagged"].sum())
    results["flag_counts_all_pairs"] = meta["flag_counts"]
    flagged_flags = frame.loc[frame["flagged"], "flags"].str.split(";").explode()
    results["flag_counts_flagged_pairs"] = {k: int(v) for k, v in flagged_flags.value_counts().items()}
    results["severity_counts"] = meta["severity_counts"]
    if not opts.skip_selftest:
        st = json.loads((opts.out / "selftest_test" / "selftest.json").read_text())
        results["selftest"] = {k: st[k] for k in ("n_original", "n_injected", "recall_meaning_changing",
                                                  "false_flag_rate", "false_flag_rate_with_file_bt", "roc_auc",
                                                  "recall_by_type", "n_by_type")}
    targets = {"cold_le_60s": results["cold"]["wall_s"] <= 60, "warm_le_5s": results["warm"]["wall_s"] <= 5,
               "rss_lt_2gb": max(results[r][k] for r in ("cold", "warm") for k in ("peak_rss_mb", "peak_tree_rss_mb")) < 2048,
               "flagged_le_25pct": results["flagged"]["all"] <= 0.25}
    if "selftest" in results:
        targets["selftest_recall_ge_0.8"] = results["selftest"]["recall_meaning_changing"] >= 0.8
        targets["selftest_false_flag_le_0.2"] = results["selftest"]["false_flag_rate"] <= 0.2
    results["targets_met"] = targets
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "bench_audit.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k not in ("cold", "warm", "selftest_test")},
                     indent=2, default=str))


def retrieval_consistency_figures(frame: pd.DataFrame) -> dict:
    """How the FR/NL gold-rank gap relates to the audit (n = questions with a run)."""
    have = frame.dropna(subset=["rc_log2_rank_ratio"])
    gap = have["rc_log2_rank_ratio"]
    flagged = have["flagged"].astype(bool)
    rho, p = spearmanr(gap, have["risk"])
    return {"n": len(have), "median_rank_fr": float(have["rc_rank_fr"].median()),
            "median_rank_nl": float(have["rc_rank_nl"].median()),
            "share_nl_worse": float((gap > 0).mean()), "share_nl_much_worse_(4x)": float((gap >= 2).mean()),
            "spearman_gap_vs_risk": float(rho), "p_value": float(p),
            "mean_gap_flagged": float(gap[flagged].mean()) if flagged.any() else None,
            "mean_gap_unflagged": float(gap[~flagged].mean()),
            "share_much_worse_flagged": float((gap[flagged] >= 2).mean()) if flagged.any() else None,
            "share_much_worse_unflagged": float((gap[~flagged] >= 2).mean())}


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
