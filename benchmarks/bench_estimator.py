"""Coverage, width and speed of the error-rate estimator (annotations/estimate.py), issue 14.

1. Coverage study (benchmarks/estimator_study.py): synthetic populations of 200 and 1,108 pairs with a
   known truth, error rates 2-30 %, risk from useless to strong, control samples of 14-60,
   0-3 risk batches of 20, static and verdict-dependent (`adaptive`) batch choice. Reports the
   95 % interval's coverage and mean width per regime, and today's estimator on the same
   populations (the code at commit BASELINE: control sample of unflagged pairs stratified by
   split/category, batches of the riskiest pairs never queued, risk queue read as a census of
   itself). The `adaptive+control` arm also learns from the control verdicts.
2. Speed: `annotate estimate` (CLI, in process) on a 1,108-pair audit; the study over 1,108
   pairs and 20 seeds.

Usage: PYTHONPATH=. python benchmarks/bench_estimator.py [--n 1200] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import estimator_study

REPO = Path(__file__).resolve().parents[1]
BASELINE = "d883d32"  # the last commit with the old estimator and control draw


def _old(module: str, path: str, package: str):
    """A module of the BASELINE commit, loaded under a private name."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{BASELINE}:{path}"], check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(module, loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = package
    sys.modules[module] = mod  # dataclasses look their module up
    exec(compile(source, f"{BASELINE}:{path}", "exec"), mod.__dict__)
    return mod


OLD_ESTIMATE = _old("old_estimate", "annotations/estimate.py", "bbsard_audit.annotations")
OLD_PIPELINE = _old("old_pipeline", "audit/pipeline.py", "bbsard_audit.audit")


def today(setting: estimator_study.Setting, seed: int) -> dict:
    """Today's design and estimator on the population `estimator_study.one` draws for the same seed."""
    rng = np.random.default_rng(seed)
    frame, y = estimator_study.population(rng, setting.n_pairs, setting.error_rate, setting.risk_quality)
    queue, _ = OLD_PIPELINE.review_queue(frame, setting.budget, setting.control, seed=seed)
    batch = sorted(estimator_study.campaign(frame, y, queue, setting.batches, 20, setting.policy) - set(queue["id"]))
    labels = frame.set_index("id")[["split", "category"]].astype(str).agg("/".join, axis=1)
    rows = queue.copy()
    ctrl = rows["queue"] == "control"
    # format 1: each control stratum shrinks by the unflagged pairs the batches took
    lost = labels.loc[[i for i in batch if not frame.loc[i - 1, "flagged"]]].value_counts()
    rows.loc[ctrl, "stratum_size"] = rows.loc[ctrl, "stratum_size"] - rows.loc[ctrl, "stratum"].map(lost).fillna(0)
    rows = pd.concat([rows, pd.DataFrame({"id": batch, "queue": "risk", "stratum": "batch"})], ignore_index=True)
    reviewed = sorted(int(i) for i in set(rows["id"]))
    verdicts = pd.DataFrame({"id": reviewed, "verdict": np.where(y[np.array(reviewed, dtype=int) - 1], "legal", "correct")})
    try:
        est = OLD_ESTIMATE.estimate(frame, verdicts, rows, draws=2000, seed=seed)
    except Exception as exc:  # today's estimator refuses some designs (e.g. no reviewed stratum)
        return {"today_error": type(exc).__name__}
    truth = float(y.mean())
    return {"today_estimate": est.share_legal, "today_low": est.ci_low, "today_high": est.ci_high,
            "today_covered": est.ci_low <= truth <= est.ci_high}


def study(n: int, seed: int, sizes, policies) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i, s in enumerate(estimator_study.settings(rng, n, sizes, policies)):
        rows.append(estimator_study.one(s, seed * 100_000 + i) | today(s, seed * 100_000 + i))
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame, by: str) -> dict:
    frame = frame.assign(width=frame["ci_high"] - frame["ci_low"], bias=frame["estimate"] - frame["truth"],
                         today_width=frame["today_high"] - frame["today_low"],
                         abs_err=(frame["estimate"] - frame["truth"]).abs(),
                         today_abs_err=(frame["today_estimate"] - frame["truth"]).abs())
    cols = ["covered", "width", "bias", "abs_err", "today_covered", "today_width", "today_abs_err"]
    table = frame.groupby(by)[cols].mean().round(4)
    table["n"] = frame.groupby(by).size()
    return table.to_dict(orient="index")


def speed() -> dict:
    """annotate estimate on a 1,108-pair audit (in process, then as a fresh process) and the study
    over 1,108 pairs x 20 seeds."""
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app
    from bbsard_audit.base.contracts.audit import AUDIT, QUEUE
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import audit_frame

    rng = np.random.default_rng(0)
    risk = np.round(rng.beta(1, 4, 1108), 4)
    frame = audit_frame(range(1, 1109), risk >= np.quantile(risk, 0.9)).assign(risk=risk)
    queue, _ = estimator_study.review_queue(frame, 60, 60, seed=0)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        AUDIT.write_file(tmp / "audit.csv", frame)
        QUEUE.write_file(tmp / "review_queue.csv", queue)
        pd.DataFrame({"id": queue["id"], "verdict": np.where(rng.random(len(queue)) < 0.2, "legal", "correct")}
                     ).to_csv(tmp / "verdicts.csv", index=False)
        args = ["annotate", "estimate", "--audit", str(tmp / "audit.csv"), "--queue", str(tmp / "review_queue.csv"),
                "--verdicts", str(tmp / "verdicts.csv"), "--out", str(tmp / "e.json")]
        CliRunner().invoke(app, args)  # warm imports
        (tmp / "e.json").unlink()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            res = CliRunner().invoke(app, args)
            times.append(time.perf_counter() - start)
            assert res.exit_code == 0, res.output
            (tmp / "e.json").unlink()
            (tmp / "e.meta.json").unlink()
        out["estimate_cli_in_process_s"] = round(float(np.median(times)), 3)
        start = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "bbsard-audit"), *args], check=True, capture_output=True)
        out["estimate_cli_fresh_process_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    big = estimator_study.run(20, seed=99, sizes=(1108,))
    out["study_1108_pairs_20_seeds_s"] = round(time.perf_counter() - start, 1)
    out["study_1108_pairs_20_seeds_coverage"] = float(big["covered"].mean())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1200, help="populations in the main study")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    main_study = study(args.n, 1, (200, 1108), ("static", "adaptive"))
    control_arm = study(max(100, args.n // 4), 2, (200, 1108), ("adaptive+control",))
    figures = {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0], "n_populations": len(main_study),
               "overall": summary(main_study.assign(all="all"), "all")["all"],
               **{f"by_{k}": summary(main_study, k) for k in ("error_rate", "risk_quality", "control", "n_pairs",
                                                              "budget", "batches", "policy")},
               "adaptive+control": summary(control_arm.assign(all="all"), "all")["all"],
               "today_refused": int(main_study.get("today_error", pd.Series(dtype=object)).notna().sum()),
               "speed": speed(), "wall_s": None}
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(figures, indent=2, default=float)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
