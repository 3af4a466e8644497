"""p_error: one probability per pair that its translation holds an error the experts would mark
`legal`, from every signal of the audit, and the `flagged` decision on it (docs/audit.md, "p_error").

One model: a logistic regression on the audit's evidence, logit p_error = b0 + b1 * logit(risk) +
sum_k b_k x_k, where `risk` is the noisy-OR of the configured weights (audit/risk.py) and x_k are
every flag (0/1), the continuous signals (standardised), the judge's and COMET's error counts and the
learned-rule hits. **Default (no verdicts)**: b1 = 1 and every other coefficient 0, so p_error is the
noisy-OR of the weights itself, each weight read as P(error | this flag alone) and independent
pieces of evidence combined as independent causes. **Refitted** (`audit calibrate`, `audit learn`):
the same regression's MAP fit on the verdicts under a Gaussian prior centred on the default, so a few
verdicts move it a little and many move it as far as they say (small-sample safe, never a perfect
separation blowing up). Verdicts come from a risk-ordered review, which is selection on the features:
a regression of y on x stays consistent under it (the reliability figures are about reviewed pairs).

`flagged` = p_error >= [risk].flag_threshold, or a judge's major/critical error (it flags by itself;
its explanation is among the pair's reasons); severity from p_error by the configured levels.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.error_model import ErrorModel
from bbsard_audit.base.io import digest_of
from bbsard_audit.base.stats import penalised_logistic

from . import ranking
from .registry import flag_specs
from .risk import SEVERITIES, RiskConfig

POSITIVES = {"legal": {"legal"}, "minor+legal": {"minor", "legal"}}
"""What counts as an error, per `--positive`."""

JUDGE_SEVERE = "judge_major"
"""The judge's major + critical error count (audit/judge/signal.py): one flags the pair by itself."""
COUNTS = ("comet_error_spans", JUDGE_SEVERE, "judge_minor")
"""Counts of marked errors: raw scale, a pair not asked counts 0 (no evidence)."""
NUMERIC = (*ranking.NUMERIC, "comet_score", "judge_mqm")
"""Continuous signals, standardised over the audited pairs; a missing value sits at the mean."""
INTERCEPT_PRECISION = 0.1
RULE_PRECISION = 1.0
FEATURE_PRECISION = 10.0
"""Gaussian prior precisions (intercept mean 0, rule-logit slope mean 1, every other coefficient
mean 0; flags and counts on their raw 0/1 scale, signals standardised): a Platt-like recalibration of
the noisy-OR moves freely (sd 3 and 1 logits), a single flag or signal needs about ten verdicts' worth
of evidence to gain a logit. Chosen on the tuning oracles of benchmarks/bench_calibration.py (seeds
200-201; 3 tied with 10 there, and the stronger shrinkage is the safer one for a 30-verdict campaign)."""
MIN_VERDICTS, MIN_POSITIVES = 30, 5
"""Fewer verdicts (or errors among them) refit nothing: `audit calibrate` / `audit learn` say so."""
BINS = 10
"""Reliability bins: equal-width on [0, 1]."""


def default_model() -> ErrorModel:
    """p_error = the noisy-OR risk (its logit clipped to +-6, as every feature is: [0.0025, 0.9975]):
    the configured weights themselves."""
    return ErrorModel(features=[ranking.RULE_LOGIT], means=[0.0], scales=[1.0], coefficients=[0.0, 1.0],
                      prior_mean=[0.0, 1.0], prior_precision=[INTERCEPT_PRECISION, RULE_PRECISION])


def feature_names(frame: pd.DataFrame) -> list[str]:
    return [ranking.RULE_LOGIT, *(f"flag:{f}" for f in flag_specs()),
            *(c for c in (*NUMERIC, *COUNTS) if c in frame.columns), ranking.LEARNED_HITS]


def _risk_column(frame: pd.DataFrame) -> str:
    """The noisy-OR: `rule_risk` in an audit ranked by a learned ranking (`risk` is its priority there)."""
    return "rule_risk" if "rule_risk" in frame.columns else "risk"


def _raw_scale(name: str) -> bool:
    return name == ranking.RULE_LOGIT or name.startswith("flag:") or name in (ranking.LEARNED_HITS, *COUNTS)


def predict(frame: pd.DataFrame, model: ErrorModel) -> np.ndarray:
    """p_error per row of an audit frame (flags, reasons, signal columns and risk)."""
    x = ranking._standardised(ranking._raw(frame, model.features, _risk_column(frame)), model)
    return 1.0 / (1.0 + np.exp(-(x @ np.array(model.coefficients))))


def decide(frame: pd.DataFrame, p_error: np.ndarray, config: RiskConfig) -> pd.DataFrame:
    """flagged and severity from p_error; a judge's major or critical error flags by itself (severity
    at least medium then)."""
    severe = pd.to_numeric(frame[JUDGE_SEVERE], errors="coerce").fillna(0).to_numpy() >= 1 \
        if JUDGE_SEVERE in frame.columns else np.zeros(len(frame), dtype=bool)
    flagged = (p_error >= config.flag_threshold) | severe
    severity = np.select([p_error >= config.severity[s] for s in SEVERITIES], list(SEVERITIES), default="none")
    severity = np.where(severe & np.isin(severity, ["low", "none"]), "medium", severity)
    return pd.DataFrame({"flagged": flagged, "severity": severity}, index=frame.index)


def apply(frame: pd.DataFrame, model: ErrorModel, config: RiskConfig) -> pd.DataFrame:
    """`frame` with p_error and the decision on it (flagged, severity)."""
    p = predict(frame, model)
    return frame.assign(p_error=p, **decide(frame, p, config))


def labels(frame: pd.DataFrame, verdicts: pd.DataFrame, positive: str = "legal") -> tuple[np.ndarray, np.ndarray]:
    """(rows of `frame` with a verdict, y = the verdict is in the positive class)."""
    label = verdicts.drop_duplicates("id").set_index("id")["verdict"].astype(str)
    rows = frame["id"].isin(label.index).to_numpy()
    return rows, label.reindex(frame.loc[rows, "id"]).isin(POSITIVES[positive]).to_numpy()


def fit(frame: pd.DataFrame, verdicts: pd.DataFrame, positive: str = "legal",
        fitted_on: dict[str, str] | None = None) -> ErrorModel:
    """The MAP fit on the reviewed pairs of `frame` (verdicts: id, verdict); features standardised
    over every audited pair."""
    names = feature_names(frame)
    raw = ranking._raw(frame, names, _risk_column(frame))
    keep = np.array([_raw_scale(n) for n in names])
    with warnings.catch_warnings():  # an all-missing column (a signal not computed) has no mean
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nan_to_num(np.nanmean(raw, axis=0), nan=0.0) if len(raw) else np.zeros(len(names))
        scales = np.nan_to_num(np.nanstd(raw, axis=0), nan=1.0) if len(raw) else np.ones(len(names))
    means[keep], scales[keep] = 0.0, 1.0
    scales[scales < 1e-9] = 1.0
    is_rule = np.array([n == ranking.RULE_LOGIT for n in names])
    prior = np.r_[0.0, is_rule.astype(float)]
    precision = np.r_[INTERCEPT_PRECISION, np.where(is_rule, RULE_PRECISION, FEATURE_PRECISION)]
    model = ErrorModel(features=names, means=means.tolist(), scales=scales.tolist(), coefficients=prior.tolist(),
                       prior_mean=prior.tolist(), prior_precision=precision.tolist(), positive=positive)
    rows, y = labels(frame, verdicts, positive)
    x = ranking._standardised(raw, model)[rows]
    w, cov = penalised_logistic(x, y.astype(float), prior, precision)
    return ErrorModel(**{**model.to_dict(), "coefficients": w.tolist(), "covariance": cov.tolist(),
                         "n_verdicts": int(rows.sum()), "n_positive": int(y.sum()),
                         "fitted_on": dict(fitted_on or {})})


def enough(n_verdicts: int, n_positive: int) -> bool:
    return n_verdicts >= MIN_VERDICTS and n_positive >= MIN_POSITIVES


def fitted_on(audit_csv: str | Path, verdicts_csv: str | Path) -> dict[str, str]:
    """File name + sha256 of the audit and the verdicts (never a local path)."""
    return {key: f"{Path(path).name} sha256:{digest_of(Path(path))}"
            for key, path in (("audit", audit_csv), ("verdicts", verdicts_csv))}


def reliability(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> dict:
    """Binned predicted vs observed (equal-width bins on [0, 1]; empty bins left out) and the expected
    calibration error ECE = sum_b n_b / N * |mean predicted_b - observed share_b|."""
    p, y = np.asarray(p, float), np.asarray(y, bool)
    which = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        inside = which == b
        if inside.any():
            rows.append({"lo": b / bins, "hi": (b + 1) / bins, "n": int(inside.sum()),
                         "predicted": float(p[inside].mean()), "observed": float(y[inside].mean()),
                         "errors": int(y[inside].sum())})
    ece = sum(r["n"] * abs(r["predicted"] - r["observed"]) for r in rows) / len(p) if len(p) else float("nan")
    return {"n": int(len(p)), "ece": float(ece), "bins": rows}


def describe(model: ErrorModel) -> dict:
    """audit.meta.json's `error_model`: default or fitted, on how many verdicts and which files."""
    if not model.fitted:
        return {"model": "default (p_error = the noisy-OR of the configured weights)"}
    return {"model": "fitted", "positive": model.positive, "n_verdicts": model.n_verdicts,
            "n_positive": model.n_positive, "fitted_on": model.fitted_on, "features": len(model.features)}


def cross_validated(frame: pd.DataFrame, verdicts: pd.DataFrame, positive: str = "legal", folds: int = 5,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(held-out p_error, y) for every reviewed pair of `frame`: each predicted by the model fitted on
    the other folds (folds stratified by y, seeded)."""
    rows, y = labels(frame, verdicts, positive)
    reviewed = frame[rows].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=int)
    for cls in (True, False):  # deal each class round the folds so every fold holds some errors
        members = rng.permutation(np.flatnonzero(y == cls))
        fold[members] = np.arange(len(members)) % folds
    held = np.empty(len(y))
    judged = verdicts.drop_duplicates("id")
    for k in range(folds):
        test = fold == k
        if test.any():
            train_ids = reviewed.loc[~test, "id"]
            model = fit(frame, judged[judged["id"].isin(train_ids)], positive)
            held[test] = predict(reviewed[test], model)
    return held, y
