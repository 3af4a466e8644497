"""The audit on real MT errors: the WMT21 TED talks English->German MQM dev set (../shared/data/mqm_ende_ted,
its README gives the labels and how to score).

    python benchmarks/bench_mqm.py [--data ../shared/data/mqm_ende_ted] [--audit DIR] [--folds 5] [--json OUT]

Real tool path: `pipeline.run_audit` on the set's manifest (beir/ted-ende.yaml, split test), the
function `bbsard-audit audit --dataset ... --split test` calls, shipped config, no back-translations;
with `--audit DIR` an audit.csv written by that command is read instead (the signal and embedding
caches make a rerun quick either way).

Definitions (positives: `major_accuracy` pairs, negatives: `clean` pairs; `minor_only` and
`other_major` left out; ties count one half):
- **AUC**: ROC-AUC of a score (p_error, or one signal column) over all positive/negative pairs.
- **length-matched AUC**: the same, counting only the positive/negative pairs whose English sources'
  lengths in characters are within a factor 1.5 of each other (max/min <= 1.5), so a score that only
  grows with length gains nothing.
- **recall at the flag**: share of positives with `flagged` true; **clean flagged share**: share of
  negatives flagged. Per MQM category: recall among the positives having a major error of that
  category (`labels.major_accuracy_cats`).
- **per flag**: share of positives and of negatives whose `flags` include it.
- **held out by segment** (`--folds`): p_error's own model (audit/perror.py `fit`, the `audit calibrate`
  fit) refitted on the labels of the pairs of some English segments and scored on the others
  (folds by seg_id: never a sibling translation of a scored segment in the fit); AUCs over the
  held-out scores of every fold. This is what a calibration on such verdicts reaches with the same
  signals; the shipped default is fitted on nothing here.

Results: benchmarks/bench_mqm.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.audit import perror
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.base.io import write_json

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "mqm_ende_ted"
RATIO = 1.5
"""Length matching: sources within this factor of each other."""
SIGNALS = ("qa_lex_mistranslated", "qa_lex_unrendered", "qa_lex_unexplained", "xling_z", "qa_len_z")


def labelled(data: Path) -> pd.DataFrame:
    """id, seg_id, source length, bucket, positive, categories of the major_accuracy and clean pairs."""
    rows = [json.loads(line) for line in (data / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    frame = pd.DataFrame({"id": [r["id"] for r in rows], "seg_id": [r["seg_id"] for r in rows],
                          "src_len": [len(r["source"]) for r in rows],
                          "bucket": [r["labels"]["bucket"] for r in rows],
                          "cats": [tuple(r["labels"].get("major_accuracy_cats") or ()) for r in rows]})
    frame = frame[frame["bucket"].isin(["major_accuracy", "clean"])].reset_index(drop=True)
    return frame.assign(positive=frame["bucket"].eq("major_accuracy"))


def auc(score: np.ndarray, y: np.ndarray, length: np.ndarray | None = None) -> float:
    """ROC-AUC (ties one half); with `length`, only positive/negative pairs within RATIO of each other."""
    score, y = np.asarray(score, float), np.asarray(y, bool)
    keep = ~np.isnan(score)
    score, y = score[keep], y[keep]
    pos, neg = score[y], score[~y]
    wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    if length is None:
        return float(wins.mean())
    length = np.asarray(length, float)[keep]
    ratio = length[y][:, None] / length[~y][None, :]
    matched = (ratio <= RATIO) & (ratio >= 1 / RATIO)
    return float(wins[matched].mean())


def audit_frame(data: Path, audit_dir: Path | None) -> pd.DataFrame:
    if audit_dir is not None:
        return pd.read_csv(audit_dir / "audit.csv", dtype={"id": str})
    result = run_audit(str(data / "beir" / "ted-ende.yaml"), AuditOptions(split="test"))
    print("checks not available:", result.meta.get("checks_unavailable") or "none", file=sys.stderr)
    return result.frame.assign(id=result.frame["id"].astype(str))


def held_out(frame: pd.DataFrame, folds: int, seed: int = 0) -> np.ndarray:
    """p_error refitted (perror.fit) on the other folds' segments, per fold of seg_ids."""
    segments = np.array(sorted(frame["seg_id"].unique()))
    fold_of = dict(zip(np.random.default_rng(seed).permutation(segments), np.arange(len(segments)) % folds))
    fold = frame["seg_id"].map(fold_of).to_numpy()
    verdicts = pd.DataFrame({"id": frame["id"], "verdict": np.where(frame["positive"], "legal", "correct")})
    out = np.empty(len(frame))
    for k in range(folds):
        test = fold == k
        model = perror.fit(frame, verdicts[~test])
        out[test] = perror.predict(frame[test], model)
    return out


def measure(frame: pd.DataFrame, folds: int) -> dict:
    y, length = frame["positive"].to_numpy(), frame["src_len"].to_numpy()
    flagged = frame["flagged"].astype(str).str.lower().eq("true").to_numpy()
    out = {"pairs": {"major_accuracy": int(y.sum()), "clean": int((~y).sum())},
           "p_error": {"auc": auc(frame["p_error"], y), "auc_length_matched": auc(frame["p_error"], y, length),
                       "recall_at_flag": float(flagged[y].mean()), "clean_flagged_share": float(flagged[~y].mean())},
           "source_length": {"auc": auc(length, y), "auc_length_matched": auc(length, y, length)}}
    cats = sorted({c for cs in frame["cats"] for c in cs})
    out["per_category"] = {c: {"pairs": int(m.sum()), "recall_at_flag": float(flagged[m].mean())}
                           for c in cats for m in [frame["cats"].map(lambda cs, c=c: c in cs).to_numpy()]}
    flags = frame["flags"].fillna("").str.split(";")
    names = sorted({f for fs in flags for f in fs if f})
    out["per_flag"] = {f: {"major_accuracy": float(has[y].mean()), "clean": float(has[~y].mean())}
                       for f in names for has in [flags.map(lambda fs, f=f: f in fs).to_numpy()]}
    out["signals"] = {c: {"auc": auc(frame[c], y), "auc_length_matched": auc(frame[c], y, length)}
                      for c in SIGNALS if c in frame.columns}
    if folds > 1:
        p = held_out(frame, folds)
        out["held_out_by_segment"] = {"folds": folds, "auc": auc(p, y), "auc_length_matched": auc(p, y, length)}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--audit", type=Path, help="read DIR/audit.csv instead of auditing")
    ap.add_argument("--folds", type=int, default=5, help="held-out-by-segment folds (1 = skip)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    labels = labelled(args.data)
    audit = audit_frame(args.data, args.audit)
    frame = labels.merge(audit, on="id", how="inner", validate="one_to_one")
    if len(frame) != len(labels):
        raise SystemExit(f"the audit holds {len(frame)} of the {len(labels)} labelled pairs")
    result = measure(frame, args.folds)
    print(json.dumps(result, indent=2))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
