"""Check the audit against expert verdicts: how well does each signal, and the combined risk, find
the pairs experts judged wrong? Suggests thresholds that the config can then adopt.

Verdicts: a CSV with `id, verdict` (correct | minor | legal), e.g. `annotate pull`'s verdicts.csv.
`positive="legal"` counts only legally inaccurate translations as errors; `"minor+legal"` counts both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from bbsard_audit.base.contracts.audit import Layout, error_score
from bbsard_audit.base.contracts.calibration import (CALIBRATION_CSV, Calibration, Combined, Reliability,
                                                     ReliabilityBin, SignalRow)
from bbsard_audit.base.contracts.error_model import ErrorModel
from bbsard_audit.base.contracts.verdicts import Verdicts
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import file_label, finite, write_sidecar

from . import perror
from .perror import POSITIVES
from .registry import context_columns

ERROR_MODEL = "error_model.json"
"""p_error's refitted model (audit/perror.py), for `audit --calibration FILE`."""
# Which way is "worse" for the continuous signals (anything else numeric is oriented by its name).
LOWER_IS_WORSE = ("bt_chrf", "bt_bleu", "bt_cosine", "xling_cosine", "xling_margin", "xling_z", "qa_len_z",
                  "comet_score")
OWN_COLUMNS = ("id", "risk", "p_error", "flagged")
"""The audit's own numbers (risk is ranked as `combined`): with every signal's declared `context`
columns (counts, two-sided ratios: for a reader, not "more = worse" signals), never ranked as signals."""


def roc_auc(y: np.ndarray, score: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties count half (Mann-Whitney)."""
    y = np.asarray(y, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return float("nan")
    ranks = rankdata(score)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def precision_recall(y: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    tp = int((y & predicted).sum())
    return (tp / predicted.sum() if predicted.sum() else float("nan"), tp / y.sum() if y.sum() else float("nan"))


def best_f1_threshold(y: np.ndarray, score: np.ndarray) -> tuple[float, float, float]:
    """(threshold, precision, recall) maximising F1 for the rule `score >= threshold`."""
    best = (float("nan"), float("nan"), float("nan"), -1.0)
    for t in np.unique(score[~np.isnan(score)]):
        p, r = precision_recall(y, score >= t)
        f1 = 2 * p * r / (p + r) if p and r and p + r else 0.0
        if f1 > best[3]:
            best = (float(t), p, r, f1)
    return best[:3]


@dataclass
class CalibrationResult:
    table: pd.DataFrame
    summary: Calibration
    model: ErrorModel | None = None
    """p_error's model refitted on these verdicts (enough verdicts only: audit/perror.py)."""


def reliability_record(p: np.ndarray, y: np.ndarray, score: str, scope: str) -> Reliability:
    curve = perror.reliability(p, y)
    return Reliability(score=score, scope=scope, n=curve["n"], ece=finite(curve["ece"]),
                       bins=[ReliabilityBin(**b) for b in curve["bins"]])


def calibrate(audit_csv: str | Path, verdicts: str | Path, positive: str = "legal") -> CalibrationResult:
    if positive not in POSITIVES:
        raise InputError(f"--positive must be one of {', '.join(POSITIVES)}")
    audit_path = Path(audit_csv)
    layout = Layout.of(audit_path)  # its pair's column names
    audit = layout.audit.read(audit_path).drop(columns=["spans"], errors="ignore")
    judged = Verdicts.read(verdicts, layout=layout).frame()[["id", "verdict"]]
    if judged.empty:  # not "no id matches": there is no verdict to match (an unresolved disagreement is none)
        raise InputError("the verdicts file holds no verdict (no row with a final expert verdict): nothing to "
                         "calibrate against", file=str(verdicts))
    merged = audit.merge(judged, on="id", how="inner")
    if merged.empty:
        raise InputError("no verdict id matches an audited pair", file=str(verdicts))
    y = merged["verdict"].isin(POSITIVES[positive]).to_numpy()
    rows = []
    risk = merged["risk"].to_numpy(float)
    flagged = merged["flagged"].to_numpy(dtype=bool)
    p, r = precision_recall(y, flagged)
    t, tp, tr = best_f1_threshold(y, risk)
    rows.append({"signal": "risk", "kind": "combined", "direction": "higher_is_worse", "roc_auc": roc_auc(y, risk),
                 "precision": p, "recall": r, "suggested_threshold": t, "precision_at_suggested": tp,
                 "recall_at_suggested": tr})
    not_signals = {*OWN_COLUMNS, *(layout.column(c) for c in context_columns())}
    numeric = [c for c in merged.select_dtypes("number").columns if c not in not_signals]
    for col in numeric:
        values = merged[col].to_numpy(float)
        if np.isnan(values).all():
            continue
        sign = -1.0 if col in LOWER_IS_WORSE else 1.0
        oriented = sign * np.where(np.isnan(values), np.nanmedian(values), values)
        t, tp, tr = best_f1_threshold(y, oriented)
        rows.append({"signal": col, "kind": "continuous",
                     "direction": "lower_is_worse" if sign < 0 else "higher_is_worse",
                     "roc_auc": roc_auc(y, oriented), "suggested_threshold": sign * t,
                     "precision_at_suggested": tp, "recall_at_suggested": tr})
    flags = merged["flags"].fillna("").astype(str).str.split(";")
    for flag in sorted({f for fs in flags for f in fs if f}):
        raised = flags.apply(lambda fs, f=flag: f in fs).to_numpy()
        p, r = precision_recall(y, raised)
        rows.append({"signal": flag, "kind": "flag", "direction": "raised", "roc_auc": roc_auc(y, raised.astype(float)),
                     "precision": p, "recall": r, "n_raised": int(raised.sum())})
    table = pd.DataFrame(rows)
    score = error_score(merged.columns)
    scope = f"the {len(merged)} reviewed pairs with a verdict (a risk-ordered review: not the whole split)"
    own = reliability_record(merged[score].to_numpy(float), y, score, scope)
    model = refit = None
    if perror.enough(len(merged), int(y.sum())):
        model = perror.fit(audit, judged, positive, fitted_on=perror.fitted_on(audit_path, verdicts))
        held, held_y = perror.cross_validated(audit, judged, positive)
        refit = reliability_record(held, held_y, "p_error (refitted)", scope + ", each predicted by a fit "
                                   "on the other 4 of 5 folds")
    signals = [SignalRow(**finite(row)) for row in rows]
    combined = Combined(**{k: v for k, v in finite(rows[0]).items() if k in Combined.__dataclass_fields__})
    summary = Calibration(audit=file_label(audit_path), verdicts=file_label(verdicts), positive=positive,
                          n_verdicts=len(judged), n_matched=len(merged), n_unmatched=len(judged) - len(merged),
                          n_positive=int(y.sum()),
                          verdict_counts={str(k): int(v) for k, v in merged["verdict"].value_counts().items()},
                          combined=combined, signals=signals, reliability=own, reliability_refit=refit)
    return CalibrationResult(table, summary, model)


def write_calibration(result: CalibrationResult, out: str | Path) -> list[Path]:
    """calibration.json (strict JSON: null where a statistic is undefined) + calibration.csv + one sidecar,
    and error_model.json (+ sidecar) when the verdicts refitted p_error's model."""
    out = Path(out)
    files = [result.summary.write(out / "calibration.json"),
             CALIBRATION_CSV.write_file(out / "calibration.csv", result.table)]
    sidecar = write_sidecar(out / "calibration.json", files=files, audit=result.summary.audit,
                            verdicts=result.summary.verdicts, positive=result.summary.positive)
    written = [out / "calibration.json", out / "calibration.csv", sidecar]
    if result.model is not None:
        model = out / ERROR_MODEL
        written += [model, write_sidecar(model, files=[result.model.write(model)], **result.model.fitted_on,
                                         n_verdicts=result.model.n_verdicts, n_positive=result.model.n_positive,
                                         positive=result.model.positive)]
    return written
