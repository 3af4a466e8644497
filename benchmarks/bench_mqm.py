"""The audit on real MT errors: the WMT21 TED talks English->German MQM dev set (../shared/data/mqm_ende_ted,
its README gives the labels and how to score).

    python benchmarks/bench_mqm.py [--data ../shared/data/mqm_ende_ted] [--audit DIR] [--folds 5] [--json OUT]
                                   [--alignment] [--scope audit/data/scope.json]

Example (the packaged scope file the report and docs/languages.md read, from an audit of this revision):
    python benchmarks/bench_mqm.py --audit reports/ted-ende --folds 1 --scope audit/data/scope.json

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

With `--alignment`, the `alignment` check (audit/checks/alignment.py: IBM Model 1 learned from the
audited pairs) is scored as a benchmark of one translation per text would see it: each system's 529
pairs are one batch (the tables never see a sibling translation of a segment; the audit of the whole
file, 7,406 pairs in one batch, learns from all 14 translations of each English sentence, a consensus
no real benchmark has). Its columns replace the audit's, and:
- **p_error with the check** (`alignment_p_error`): the audit's p_error with the audit's own
  `alignment_gap` contribution taken out (its weight read from the audit's sidecar) and the per-system
  one put in at `--alignment-weight` (the default p_error is the noisy-OR of the flags' weights, so
  this is exact); its recall and clean share at the shipped flag threshold (no judge here);
- **held out, combined** (`alignment_held_out`): a logistic regression of the label on logit(p_error
  without the check) and the check's columns (standardised; ridge prior precision 1), fitted on 4/5
  of the English segments and scored on the fifth, 5 folds by seg_id; beside it the same fit on
  logit(p_error) alone; and the recall on held-out pairs at the score's threshold that flags 8 % of
  the *training* folds' clean pairs, with the share of held-out clean pairs it flags.

With `--scope FILE` the figures a report states about the built-in checks (base/contracts/scope.py:
per MQM category the recall at the flag with its Wilson 95% interval, whether it is above chance —
its interval's lower bound above the clean flagged share — and the flags that caught those pairs; the
clean flagged share; p_error's AUC and length-matched AUC; the evidence the audit ran with; the dev set
by id, revision and label hash; the date and the git revision measured) are written there, from this
measurement. The audit must be of this revision: one made before a check of this revision existed is
refused (rerun it; with warm caches it takes about 30 s).

Results: benchmarks/bench_mqm.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit import __version__
from bbsard_audit.audit import perror
from bbsard_audit.audit.checks import all_checks
from bbsard_audit.audit.checks.alignment import AlignmentCheck
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base.languages.pair import LanguagePair
from bbsard_audit.base.stats import penalised_logistic
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.base.contracts import scope as scope_file
from bbsard_audit.base.contracts.jsonfile import read_json
from bbsard_audit.base.io import write_json
from bbsard_audit.base.stats import wilson

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "mqm_ende_ted"
RATIO = 1.5
"""Length matching: sources within this factor of each other."""
SIGNALS = ("qa_lex_mistranslated", "qa_lex_unrendered", "qa_lex_unexplained", "xling_z", "qa_len_z",
           "qa_align_logprob_st", "qa_align_logprob_ts", "qa_align_content", "qa_align_unaligned_en",
           "qa_align_unaligned_de", "qa_align_gap")
LOWER_IS_WORSE = ("qa_align_logprob_st", "qa_align_logprob_ts", "qa_align_content")
"""The alignment signals whose low values mean an error: their AUC is of the negated column (the
others as they are, as before)."""
ALIGN = ("qa_align_logprob_st", "qa_align_logprob_ts", "qa_align_content", "qa_align_unaligned_en",
         "qa_align_unaligned_de", "qa_align_gap")
THRESHOLD = RiskConfig.load().flag_threshold
CLEAN_FLAGGED = 0.08
"""The issue's operating point: at most this share of clean pairs flagged."""


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


def audit_frame(data: Path, audit_dir: Path | None) -> tuple[pd.DataFrame, dict]:
    """audit.csv and its sidecar (DIR's, or a fresh audit's)."""
    if audit_dir is not None:
        return pd.read_csv(audit_dir / "audit.csv", dtype={"id": str}), read_json(audit_dir / "audit.meta.json")
    result = run_audit(str(data / "beir" / "ted-ende.yaml"), AuditOptions(split="test"))
    print("checks not available:", result.meta.get("checks_unavailable") or "none", file=sys.stderr)
    return result.frame.assign(id=result.frame["id"].astype(str)), result.meta


def held_out(frame: pd.DataFrame, folds: int, seed: int = 0) -> np.ndarray:
    """p_error refitted (perror.fit) on the other folds' segments, per fold of seg_ids."""
    fold = _segment_folds(frame, folds, seed)
    verdicts = pd.DataFrame({"id": frame["id"], "verdict": np.where(frame["positive"], "legal", "correct")})
    out = np.empty(len(frame))
    for k in range(folds):
        test = fold == k
        model = perror.fit(frame, verdicts[~test])
        out[test] = perror.predict(frame[test], model)
    return out


def alignment_per_system(data: Path) -> pd.DataFrame:
    """The alignment check's columns and flag per pair, each system's pairs one batch."""
    rows = [json.loads(line) for line in (data / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    check, out = AlignmentCheck(), []
    for system in sorted({r["system"] for r in rows}):
        batch = [r for r in rows if r["system"] == system]
        result = check.score(Batch([r["source"] for r in batch], [r["target"] for r in batch], pair=LanguagePair("en", "de")))
        columns = result.columns.rename(columns=lambda c: c.format(source="en", target="de"))
        out.append(columns.assign(id=[r["id"] for r in batch],
                                  alignment_fired=[any(f.flag == "alignment_gap" for f in fs) for fs in result.findings]))
    return pd.concat(out, ignore_index=True)


def audit_weight(audit_dir: Path | None) -> float:
    """The `alignment_gap` weight the audit ran with (its sidecar's config; 0 before the check existed)."""
    if audit_dir is None:
        return AlignmentCheck.weights["alignment_gap"]
    meta = json.loads((audit_dir / "audit.meta.json").read_text(encoding="utf-8"))
    return float(meta.get("config", {}).get("weights", {}).get("alignment_gap", 0.0))


def with_alignment(audit: pd.DataFrame, aligned: pd.DataFrame, had_weight: float, weight: float) -> pd.DataFrame:
    """The audit with the per-system alignment columns, `p_error_without_alignment` (the audit's own
    alignment_gap weight `had_weight` divided out of the noisy-OR) and `alignment_p_error` (`weight`
    multiplied in where the per-system check fires)."""
    audit = audit.drop(columns=[c for c in aligned.columns if c != "id" and c in audit.columns])
    frame = audit.merge(aligned, on="id", how="left", validate="one_to_one")
    had = frame["flags"].fillna("").str.split(";").map(lambda fs: "alignment_gap" in fs).to_numpy()
    keep = (1 - frame["p_error"].to_numpy(float)) / np.where(had, 1 - had_weight, 1.0)
    return frame.assign(p_error_without_alignment=1 - keep,
                        alignment_p_error=1 - keep * np.where(frame["alignment_fired"], 1 - weight, 1.0))


def _segment_folds(frame: pd.DataFrame, folds: int, seed: int = 0) -> np.ndarray:
    segments = np.array(sorted(frame["seg_id"].unique()))
    fold_of = dict(zip(np.random.default_rng(seed).permutation(segments), np.arange(len(segments)) % folds))
    return frame["seg_id"].map(fold_of).to_numpy()


def alignment_held_out(frame: pd.DataFrame, folds: int) -> dict:
    """Held out by segment: logistic fits of the label on logit(p_error without the check), alone and with
    the alignment columns; AUCs of the held-out scores, and recall at the training folds' 8 % clean cut."""
    y, length = frame["positive"].to_numpy(), frame["src_len"].to_numpy()
    p = np.clip(frame["p_error_without_alignment"].to_numpy(float), 1e-4, 1 - 1e-4)
    base = np.log(p / (1 - p))[:, None]
    full = np.column_stack([base, frame[list(ALIGN)].to_numpy(float)])
    fold = _segment_folds(frame, max(folds, 2))
    out = {}
    for name, x in (("p_error_alone", base), ("p_error_and_alignment", full)):
        x = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
        x = np.column_stack([np.ones(len(x)), x])
        score, flagged = np.empty(len(x)), np.empty(len(x), dtype=bool)
        for k in np.unique(fold):
            test = fold == k
            w, _ = penalised_logistic(x[~test], y[~test].astype(float), np.zeros(x.shape[1]), np.ones(x.shape[1]))
            train_scores, score[test] = x[~test] @ w, x[test] @ w
            cut = np.quantile(train_scores[~y[~test]], 1 - CLEAN_FLAGGED)
            flagged[test] = score[test] > cut
        out[name] = {"auc": auc(score, y), "auc_length_matched": auc(score, y, length),
                     "recall_at_8pct_clean": float(flagged[y].mean()), "clean_flagged_share": float(flagged[~y].mean())}
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
    out["signals"] = {c: {"auc": auc(sign * frame[c], y), "auc_length_matched": auc(sign * frame[c], y, length)}
                      for c in SIGNALS if c in frame.columns for sign in [-1 if c in LOWER_IS_WORSE else 1]}
    if "alignment_p_error" in frame.columns:
        p, fired = frame["alignment_p_error"], frame["alignment_fired"].to_numpy(bool)
        base = frame["p_error_without_alignment"]
        out["alignment"] = {"p_error_without": {"auc": auc(base, y), "auc_length_matched": auc(base, y, length)},
                            "p_error": {"auc": auc(p, y), "auc_length_matched": auc(p, y, length),
                                        "recall_at_flag": float((p >= THRESHOLD)[y].mean()),
                                        "clean_flagged_share": float((p >= THRESHOLD)[~y].mean())},
                            "flag": {"major_accuracy": float(fired[y].mean()), "clean": float(fired[~y].mean())},
                            "held_out": alignment_held_out(frame, folds)}
    if folds > 1:
        p = held_out(frame, folds)
        out["held_out_by_segment"] = {"folds": folds, "auc": auc(p, y), "auc_length_matched": auc(p, y, length)}
    return out


DEV_SET = {"name": "WMT21 TED talks MQM", "raters": "professional translators, MQM error spans (Freitag et al., "
                                                   "TACL 2021); one rater per pair"}
SCOPE_DEFINITIONS = {
    "positives": "pairs with at least one Major accuracy error (labels.bucket major_accuracy); negatives: pairs "
                 "with no error (clean); minor-only and non-accuracy Major pairs left out",
    "recall": "share of a category's pairs (a Major error of that category, labels.major_accuracy_cats) the "
              "audit flags (`flagged`), Wilson 95% interval",
    "clean": "share of clean pairs the audit flags, Wilson 95% interval",
    "above_chance": "the recall interval's lower bound is above the clean flagged share: the flag finds these "
                    "errors more often than it fires on clean pairs",
    "caught_by": "flagged pairs of the category per flag (a pair can carry several)",
    "auc": "ROC-AUC of p_error, major-accuracy against clean pairs (ties one half)",
    "auc_length_matched": f"the same over the pairs whose English sources are within a factor {RATIO:g} in "
                          "length (longer segments hold more errors)",
    "evidence": "what the dev set's audit ran with (its audit.meta.json); the figures are of that evidence only",
}


def revision() -> str:
    """The git commit of the code measuring, `+uncommitted` when tracked files differ from it."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return head + ("+uncommitted" if dirty else "")


def rate(hits: np.ndarray) -> scope_file.Rate:
    count, n = int(hits.sum()), len(hits)
    low, high = wilson(count, n)
    return scope_file.Rate(count, n, count / n, low, high)


def scope(frame: pd.DataFrame, meta: dict, data: Path) -> scope_file.Scope:
    """The packaged scope record from this measurement (SCOPE_DEFINITIONS)."""
    missing = sorted({c.name for c in all_checks()} - set(meta.get("timings_s") or {}) - set(meta.get("cached_signals") or []))
    if missing:
        raise SystemExit(f"audit.meta.json: the audit ran without the check(s) {', '.join(missing)} of this "
                         "revision: rerun the audit before writing a scope file")
    y = frame["positive"].to_numpy()
    flagged = frame["flagged"].astype(str).str.lower().eq("true").to_numpy()
    clean = rate(flagged[~y])
    flags = frame["flags"].fillna("").str.split(";")
    categories = []
    for cat in sorted({c for cs in frame["cats"] for c in cs}):
        has = frame["cats"].map(lambda cs, c=cat: c in cs).to_numpy()
        recall = rate(flagged[has])
        counts = flags[has & flagged].explode().loc[lambda f: f != ""].value_counts()
        categories.append(scope_file.Category(cat, recall, recall.low > clean.share,
                                              {str(f): int(n) for f, n in counts.items()}))
    ds, length = meta["dataset"], frame["src_len"].to_numpy()
    labels = hashlib.sha256((data / "pairs.jsonl").read_bytes()).hexdigest()
    return scope_file.Scope(
        dev_set=scope_file.DevSet(ds["source"], DEV_SET["name"], ds["languages"]["source"], ds["languages"]["target"],
                                  ds["revision"], f"pairs.jsonl sha256:{labels[:16]}", DEV_SET["raters"]),
        measured=dt.datetime.now(dt.timezone.utc).date().isoformat(), tool_version=__version__,
        tool_revision=revision(), evidence=scope_file.evidence(meta), positives=int(y.sum()), clean=clean,
        recall=rate(flagged[y]), p_error=scope_file.Auc(auc(frame["p_error"], y), auc(frame["p_error"], y, length)),
        categories=categories, definitions=SCOPE_DEFINITIONS)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Example: python benchmarks/"
                                 "bench_mqm.py --audit reports/ted-ende --folds 1 --scope audit/data/scope.json")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--audit", type=Path, help="read DIR/audit.csv instead of auditing")
    ap.add_argument("--folds", type=int, default=5, help="held-out-by-segment folds (1 = skip)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--alignment", action="store_true",
                    help="score the alignment check with each system's pairs as one batch (module docstring)")
    ap.add_argument("--alignment-weight", type=float, default=AlignmentCheck.weights["alignment_gap"],
                    help="the alignment_gap weight of `alignment_p_error` (default: the shipped one)")
    ap.add_argument("--scope", type=Path, metavar="FILE",
                    help="write the packaged scope file (audit/data/scope.json) from this measurement")
    args = ap.parse_args(argv)
    labels = labelled(args.data)
    audit, meta = audit_frame(args.data, args.audit)
    frame = labels.merge(audit, on="id", how="inner", validate="one_to_one")
    if len(frame) != len(labels):
        raise SystemExit(f"the audit holds {len(frame)} of the {len(labels)} labelled pairs")
    if args.alignment:
        frame = with_alignment(frame, alignment_per_system(args.data), audit_weight(args.audit), args.alignment_weight)
    result = measure(frame, args.folds)
    print(json.dumps(result, indent=2))
    if args.json:
        write_json(args.json, result)
    if args.scope:
        scope(frame, meta, args.data).write(args.scope)
        print(f"wrote {args.scope}", file=sys.stderr)


if __name__ == "__main__":
    main()
