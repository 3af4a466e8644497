"""How fast a CometKiwi-sized model scores bBSARD pairs on this machine's CPU, through the real worker.

No real CometKiwi can be downloaded here (gated, and no hub access), so this builds a random COMET
checkpoint with XLM-R large's encoder shape (24 layers of width 1024, the shape under
Unbabel/wmt22-cometkiwi-da; tests/comet_tiny.py --size large), with a sentencepiece vocabulary
trained on the questions, and times audit/qe/worker.py on N real pairs: checkpoint load, scoring
(pairs/s, tokens/s) and the worker's peak RSS. Speed depends on the encoder's shape and the token
count, not on the weights; the small trained vocabulary splits words into more pieces than
XLM-R's 250k one, so the pairs/s here are a lower bound for the real model. Also times building the
COMET venv into a scratch cache (`--venv`: what a fresh machine pays, pip cache as it is).

Usage: python benchmarks/bench_qe_comet.py [--data ../shared/data/bbsard] [--pairs 100] [--venv]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bbsard_audit.audit.qe import env
from bbsard_audit.audit.qe.signal import WORKER
from bbsard_audit.base.dataset import load_dataset

REPO = Path(__file__).resolve().parents[1]


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), 0 once it has gone."""
    try:
        line = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("VmHWM"))
    except (OSError, StopIteration):
        return 0.0
    return int(line.split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "bbsard"))
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--venv", action="store_true", help="also time a venv build into a scratch cache")
    args = parser.parse_args()
    report: dict = {}
    if args.venv:
        with tempfile.TemporaryDirectory() as scratch:
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "bbsard_audit.audit.qe.env"], check=True, capture_output=True,
                           env={**os.environ, "BBSARD_AUDIT_COMET_CACHE": scratch})
            report["venv_build_s"] = round(time.monotonic() - started, 1)
    python = env.ensure_venv()
    source = args.data if Path(args.data).is_dir() else "sample"
    pairs = load_dataset(source, with_corpus=False).select("all")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "sentences.txt").write_text("\n".join(t for p in pairs for t in (p.source, p.target)))
        started = time.monotonic()
        subprocess.run([str(python), "-I", str(REPO / "tests" / "comet_tiny.py"), str(tmp / "sentences.txt"),
                        str(tmp / "large"), "--kind", "kiwi", "--size", "large",
                        "--vocab", "8000" if source != "sample" else "400"], check=True, capture_output=True)
        report["build_checkpoint_s"] = round(time.monotonic() - started, 1)
        report["checkpoint_mb"] = round((tmp / "large" / "checkpoints" / "model.ckpt").stat().st_size / 2**20)
        chosen = pairs[:args.pairs]
        (tmp / "req.jsonl").write_text("".join(json.dumps({"src": p.source, "mt": p.target}) + "\n"
                                               for p in chosen))
        started = time.monotonic()
        proc = subprocess.Popen([str(python), "-I", str(WORKER), str(tmp / "large"), "--input", str(tmp / "req.jsonl"),
                                 "--chunk", "16"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        header = proc.stdout.readline()
        loaded = time.monotonic()
        n, rss = 0, 0.0
        for _ in proc.stdout:
            n += 1
            rss = max(rss, _peak_rss_mb(proc.pid))
        proc.wait()
        done = time.monotonic()
        assert proc.returncode == 0 and n == len(chosen) and header
    report.update(source=source if source == "sample" else "bbsard", n_pairs=n, load_s=round(loaded - started, 1),
                  score_s=round(done - loaded, 1), pairs_per_s=round(n / (done - loaded), 2),
                  peak_rss_mb=round(rss), cpus=os.cpu_count())
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
