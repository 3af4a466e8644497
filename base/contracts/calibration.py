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


@dataclass(frozen=True)
class ReliabilityBin:
    """Pairs whose predicted probability lies in [lo, hi): their mean prediction and observed error share."""

    lo: float
    hi: float
    n: int
    predicted: float
    observed: float
    errors: int


@dataclass(frozen=True)
class Reliability:
    """A reliability curve and its expected calibration error (audit/perror.py `reliability`):
    `score` is the probability judged (p_error, or risk for an audit without it), `scope` which pairs."""

    score: str
    scope: str
    n: int
    ece: float | None = None
    bins: list[ReliabilityBin] = field(default_factory=list)


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
    reliability: Reliability | None = None
    """The audit's own probability against the verdicts (absent in files before p_error)."""
    reliability_refit: Reliability | None = None
    """The refitted p_error model, each reviewed pair predicted by a fit without its fold (5-fold)."""

    def named_values(self) -> list[NamedValue]:
        return [NamedValue(k, v) for k, v in self.combined.__dict__.items() if v is not None]


CALIBRATION_CSV = TableSpec("calibration.csv", (
    Column("signal", "text"),
    Column("kind", "enum", choices=KINDS),
    Column("direction", "text"),
    *(Column(f.name, "float", required=False, empty_ok=True) for f in fields(Scores)),
    Column("n_raised", "float", required=False, empty_ok=True, lo=0),
), key=("signal",))
