"""error_model.json (written by `audit calibrate` and `audit learn`, read by `audit --calibration`):
the p_error model of audit/perror.py, a logistic regression on the audit's evidence —
coefficients on standardised features, their posterior covariance and what they were fitted on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bbsard_audit.base.errors import InputError

from .jsonfile import Record, read_checked


@dataclass(frozen=True)
class ErrorModel(Record):
    """`coefficients[0]` is the intercept; feature k has coefficient k + 1 on (raw - mean) / scale.
    `prior_mean` / `prior_precision` (same order) are the Gaussian prior the fit started from (the
    default model is the prior mean itself); `positive`: which verdicts counted as errors."""

    features: list[str]
    means: list[float]
    scales: list[float]
    coefficients: list[float]
    prior_mean: list[float]
    prior_precision: list[float]
    covariance: list[list[float]] = field(default_factory=list)
    positive: str = "legal"
    n_verdicts: int = 0
    n_positive: int = 0
    fitted_on: dict[str, str] = field(default_factory=dict)
    """audit / verdicts: file name + sha256 of what it was fitted on (empty for the default)."""
    format: str = "bbsard-audit error model 1"

    def __post_init__(self) -> None:
        n = len(self.features)
        if len(self.means) != n or len(self.scales) != n or any(not s > 0 for s in self.scales):
            raise ValueError("means and scales need one positive entry per feature")
        for name in ("coefficients", "prior_mean", "prior_precision"):
            if len(getattr(self, name)) != n + 1:
                raise ValueError(f"{name} needs {n + 1} entries (intercept + one per feature)")
        if any(not p > 0 for p in self.prior_precision):
            raise ValueError("prior_precision entries must be > 0")
        if self.covariance and (len(self.covariance) != n + 1 or any(len(r) != n + 1 for r in self.covariance)):
            raise ValueError(f"covariance must be {n + 1}x{n + 1}")
        numbers = [*self.means, *self.scales, *self.coefficients, *self.prior_mean, *self.prior_precision]
        if not all(math.isfinite(v) for v in numbers):
            raise ValueError("every number must be finite")

    @property
    def fitted(self) -> bool:
        return self.n_verdicts > 0

    @classmethod
    def read(cls, path: str | Path) -> "ErrorModel":
        """Strict: unknown keys, wrong types, mismatched sizes or another format -> one-line InputError."""
        model = read_checked(cls, path, "an error model")
        if model.format != cls.format:
            raise InputError(f"not an error model (format {model.format!r}, expected {cls.format!r})", file=str(path))
        return model
