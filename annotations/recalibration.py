"""The prediction a `--next` batch uses, recalibrated from the verdicts of the batches before it.

Sequential prediction-powered / active inference (Zrnic & Candès 2024): batch k's prediction may be any
function of what was known before batch k was drawn. A two-parameter logistic recalibration
logit q = a + b·logit p, fitted on the verdicts of pairs drawn by earlier batches (maximum a posteriori,
shrunk towards the identity a = 0, b = 1 by a normal prior, so a handful of verdicts moves it little),
shrinks the residuals y − q the estimator corrects, and puts the draw's π where the errors are. The
fitted (a, b) are recorded per batch in campaign.json (`batches[].recalibration`), so a later reader
recomputes q from the recorded raw p without the verdicts; a batch without the key used q = p.
Not the default (annotations/draw.py RECALIBRATE): on the real split its near-fixed slope carried the
over-confident top's correction into the tail and the interval undercovered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bbsard_audit.base.contracts.campaign_design import EDGE, recalibrated
from bbsard_audit.base.stats import penalised_logistic
PRIOR_SD = (1.5, 0.15)
"""Prior sd of (a, b − 1): the intercept free to move a raw score to the error rate's scale within a few
verdicts, the slope held near the identity. A free slope (sd 0.5) flattened the real split's risk to b ≈ 0.45
from 14 verdicts: the draw spread out, found 14.3 errors instead of 16 and the interval widened (10.6 vs 8.4
points); sd 0.15 kept the found and narrowed it to 3.6 (benchmarks/bench_ppi_design.md)."""

EVIDENCE = 6.0
"""The identity is kept unless the fit gains this much deviance over it (2·Δ log-likelihood; 6 ≈ the 95 %
point of χ² with 2 degrees of freedom): a calibrated prediction is left alone, a raw score is not."""


@dataclass(frozen=True)
class Recalibration:
    """logit q = a + b·logit p, fitted on `verdicts` earlier verdicts (`legal` of them legal errors)."""
    a: float = 0.0
    b: float = 1.0
    verdicts: int = 0
    legal: int = 0

    def apply(self, p) -> np.ndarray:
        """The recorded fit's meaning, defined once beside campaign.json's reader."""
        return recalibrated(p, self.a, self.b)

    def record(self) -> dict:
        """campaign.json's `batches[].recalibration`."""
        return {"a": self.a, "b": self.b, "verdicts": self.verdicts, "legal": self.legal}


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EDGE, 1 - EDGE)
    return np.log(p / (1 - p))


def fit_known(ids, p, legal: dict) -> Recalibration:
    """`fit` on the pairs of `ids` (predictions `p`, same order) that have a verdict in `legal` (id -> legal
    error?): the caller passes the pairs earlier batches drew, so no other verdict enters a batch's prediction."""
    have = np.array([i in legal for i in ids], dtype=bool)
    y = np.array([float(legal[i]) for i, h in zip(ids, have) if h])
    return fit(np.asarray(p, dtype=float)[have], y)


def _loglik(x: np.ndarray, y: np.ndarray, theta: np.ndarray) -> float:
    eta = x @ theta
    return float((y * eta - np.logaddexp(0, eta)).sum())


def fit(p, y, prior_sd: tuple[float, float] = PRIOR_SD, evidence: float = EVIDENCE) -> Recalibration:
    """The MAP (a, b) from raw predictions `p` and verdicts `y` (legal = 1) of pairs drawn by earlier
    batches (base/stats.py `penalised_logistic`, the fit `audit calibrate` uses)."""
    p, y = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    if not len(p):
        return Recalibration()
    x = np.column_stack([np.ones(len(p)), _logit(p)])
    prior = np.array([0.0, 1.0])
    theta, _ = penalised_logistic(x, y, prior, np.array([1 / prior_sd[0] ** 2, 1 / prior_sd[1] ** 2]))
    a, b = (float(v) for v in theta)
    if not (math.isfinite(a) and math.isfinite(b)) or 2 * (_loglik(x, y, theta) - _loglik(x, y, prior)) < evidence:
        return Recalibration(verdicts=len(p), legal=int(y.sum()))
    return Recalibration(a, b, len(p), int(y.sum()))
