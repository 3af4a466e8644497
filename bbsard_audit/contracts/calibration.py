"""calibration.json (`audit calibrate`): the audit's signals against expert verdicts (null, never NaN,
where a statistic is undefined, e.g. a ROC-AUC without positives)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonfile import NamedValue, Record
from .table import Column, TableSpec

KINDS = ("combined", "continuous", "flag")


@dataclass(frozen=True)
class SignalRow:
    signal: str
    kind: str
    direction: str
    roc_auc: float | None = None
    precision: float | None = None
    recall: float | None = None
    suggested_threshold: float | None = None
    precision_at_suggested: float | None = None
    recall_at_suggested: float | None = None
    n_raised: int | None = None


@dataclass(frozen=True)
class Combined:
    roc_auc: float | None = None
    precision: float | None = None
    recall: float | None = None
    suggested_threshold: float | None = None
    precision_at_suggested: float | None = None
    recall_at_suggested: float | None = None


@dataclass
class Calibration(Record):
    audit: str
    verdicts: str
    positive: str
    n_verdicts: int
    n_matched: int
    n_unmatched: int
    n_positive: int
    verdict_counts: dict[str, int] = field(default_factory=dict)
    combined: Combined = field(default_factory=Combined)
    signals: list[SignalRow] = field(default_factory=list)

    def named_values(self) -> list[NamedValue]:
        return [NamedValue(k, v) for k, v in self.combined.__dict__.items() if v is not None]


CALIBRATION_CSV = TableSpec("calibration.csv", (
    Column("signal", "text"),
    Column("kind", "enum", choices=KINDS),
    Column("direction", "text"),
    *(Column(name, "float", required=False, empty_ok=True) for name in (
        "roc_auc", "precision", "recall", "suggested_threshold", "precision_at_suggested", "recall_at_suggested")),
    Column("n_raised", "float", required=False, empty_ok=True, lo=0),
), key=("signal",))
