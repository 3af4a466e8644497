"""calibration.json (`audit calibrate`): the audit's signals against expert verdicts (null, never NaN,
where a statistic is undefined, e.g. a ROC-AUC without positives)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .jsonfile import NamedValue, Record
from .table import Column, TableSpec

KINDS = ("combined", "continuous", "flag")


@dataclass(frozen=True)
class Scores:
    """One signal's statistics against the verdicts."""

    roc_auc: float | None = None
    precision: float | None = None
    recall: float | None = None
    suggested_threshold: float | None = None
    precision_at_suggested: float | None = None
    recall_at_suggested: float | None = None


Combined = Scores
"""calibration.json's `combined`: the combined risk score's statistics."""


@dataclass(frozen=True)
class _Signal:
    signal: str
    kind: str
    direction: str


@dataclass(frozen=True)
class SignalRow(Scores, _Signal):
    """One signal's row: its name, kind and direction, then its scores (fields in that order: a
    dataclass takes its bases' fields last base first)."""

    n_raised: int | None = None


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
    *(Column(f.name, "float", required=False, empty_ok=True) for f in fields(Scores)),
    Column("n_raised", "float", required=False, empty_ok=True, lo=0),
), key=("signal",))
