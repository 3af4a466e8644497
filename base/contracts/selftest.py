"""selftest.json (`audit selftest`): recall of the audit on injected errors, the false-flag rate, ROC-AUC."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .jsonfile import NamedValue, Record


@dataclass(frozen=True)
class ErrorTypeResult:
    """One injected error type: how many, how many the audit flagged, and how well risk separates them."""

    error_type: str
    n: int
    recall: float
    mean_risk: float
    roc_auc: float | None
    top_flags: str


@dataclass
class Selftest(Record):
    dataset: dict[str, Any]
    split: str
    seed: int
    embedder: str
    translator: str | None
    backtranslation_mode: str
    n_original: int
    n_injected: int
    recall_meaning_changing: float | None
    false_flag_rate: float
    roc_auc: float | None
    recall_by_type: dict[str, float]
    n_by_type: dict[str, int]
    flag_threshold: float
    note: str
    config: dict[str, Any]
    by_type: list[ErrorTypeResult] = field(default_factory=list)
    false_flag_rate_with_file_bt: float | None = None
    backtranslation_file: str | None = None

    def named_values(self) -> list[NamedValue]:
        """The headline figures, labelled for a reader (report, terminal)."""
        rows = [("recall on meaning-changing errors", self.recall_meaning_changing, self.n_injected),
                ("false-flag rate on untouched pairs", self.false_flag_rate, self.n_original),
                ("false-flag rate with the back-translation file", self.false_flag_rate_with_file_bt, self.n_original),
                ("ROC-AUC (risk, injected vs untouched)", self.roc_auc, self.n_original + self.n_injected),
                ("flag threshold (risk)", self.flag_threshold, None)]
        return [NamedValue(name, value, None, None, n) for name, value, n in rows if value is not None]
