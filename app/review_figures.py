"""The review's figures, each computed once, with one definition and its scope named beside it.

The report's sections, the release card and the terminal summaries state how many pairs were
reviewed, queued, verified, judged legally inaccurate, and the error rate. Each of those is read from
`ReviewFigures` rather than counted where it is printed, so one word always means one number:

- reviewed: a pair with a final expert verdict in verdicts.csv (an unresolved disagreement is not
  reviewed yet; an annotation is not a review: a pair may hold several);
- queued: a pair of review_queue.csv (reviewed or not);
- the share of reviewed pairs judged legally inaccurate (over those pairs only) is never called the
  legal-error rate, which is estimate.json's, estimated over every pair of its population.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.io import sidecar_path
from bbsard_audit.base.stats import wilson

REVIEWED = "a final expert verdict in verdicts.csv (an unresolved disagreement is not reviewed yet)"
"""What "reviewed" means everywhere (report, release card, terminal)."""
ILLUSTRATIVE = "an illustrative verdict, not a real expert review"
"""What a verdict of illustrative verdicts (the demo's, the sample's) is called wherever it is counted."""
VERIFIED = "reviewed and judged correct or minor"
"""A verified pair (the release's `verified` + `corrected` standing; eval's `verified` subset with its default keep)."""


@dataclass(frozen=True)
class Figure:
    """One reported number: `value` (with its interval when it has one) and the pairs it is about."""

    value: float
    label: str
    """What it is (`legal-error rate`)."""
    scope: str
    """Which pairs (and split) it is computed over (`estimated over all 222 test pairs`), said next to it."""
    low: float | None = None
    high: float | None = None
    level: float = 0.95

    @property
    def named(self) -> str:
        """`legal-error rate, estimated over all 222 test pairs`."""
        return f"{self.label}, {self.scope}"

    @property
    def interval(self) -> str:
        """`95% CI 8.1%–26.6%` (empty without an interval)."""
        if self.low is None or self.high is None:
            return ""
        return f"{100 * self.level:g}% CI {100 * self.low:.1f}%–{100 * self.high:.1f}%"

    def percent(self) -> str:
        """`14.6% (95% CI 8.1%–26.6%)`."""
        return f"{100 * self.value:.1f}%" + (f" ({self.interval})" if self.interval else "")


def illustrative(meta: dict | None) -> bool:
    """Are these verdicts illustrative (verdicts.csv's sidecar says so: `illustrative: true`, or a `source`
    naming them illustrative, as the demo's did before the key)?"""
    meta = meta or {}
    return meta.get("illustrative") is True or "illustrative" in str(meta.get("source") or "").lower()


def verdicts_illustrative(path: Path | None) -> bool:
    """`illustrative` from a verdicts.csv's own sidecar (the release and the terminal)."""
    meta = sidecar_path(path) if path is not None else None
    return illustrative(read_sidecar(meta)) if meta is not None and meta.is_file() else False


def final_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The rows of verdicts.csv that count as reviewed (REVIEWED)."""
    return verdicts[verdicts["verdict"].astype(str).str.strip() != ""]


def population_label(population: int, split: str | None) -> str:
    """`all 222 test pairs`, `all 40 pairs of every split`, or `all 40 pairs of the audit` (split unknown)."""
    if split in ("train", "test"):
        return f"all {population:,} {split} pairs"
    return f"all {population:,} pairs of every split" if split == "all" else f"all {population:,} pairs of the audit"


def estimated_split(estimate_meta: dict | None, audit_meta: dict | None = None, population: int | None = None
                    ) -> str | None:
    """The split an estimate.json covers: its sidecar's `--split` when train or test; else (`all`, or not
    recorded) the audit's split when the estimate covers all its pairs; else what the sidecar says (None: unknown)."""
    split = (estimate_meta or {}).get("split")
    if split in ("train", "test"):
        return str(split)
    audit = audit_meta or {}
    if audit.get("split") and population is not None and audit.get("n_pairs") == population:
        return str(audit["split"])
    return str(split) if split else None


def recorded_split(estimate: Path | None) -> str | None:
    """`estimated_split` from an estimate.json's own sidecar (the release reads no audit)."""
    meta = sidecar_path(estimate) if estimate is not None else None
    return estimated_split(read_sidecar(meta)) if meta is not None and meta.is_file() else None


@dataclass(frozen=True)
class ReviewFigures:
    """Every review figure of one work folder (or one release), from the files it holds."""

    reviewed: int | None = None
    unresolved: int = 0
    reviewed_legal: int = 0
    queued: int | None = None
    queued_reviewed: int | None = None
    annotations: int | None = None
    legal_rate: Figure | None = None
    """estimate.json's share legal, over its whole population."""
    reviewed_legal_share: Figure | None = None
    """The share of the reviewed pairs judged legal (Wilson CI), over those pairs only."""
    estimate_found_legal: int | None = None
    illustrative: bool = False
    """The verdicts are illustrative (the demo's): every count of reviewed pairs says so (`verdict_kind`)."""

    @property
    def verdict_kind(self) -> str:
        """What one reviewed pair's verdict is: `a final expert verdict`, or ILLUSTRATIVE."""
        return ILLUSTRATIVE if self.illustrative else "a final expert verdict"

    @classmethod
    def of(cls, verdicts: pd.DataFrame | None = None, queue: pd.DataFrame | None = None,
           raw: pd.DataFrame | None = None, estimate=None, split: str | None = None,
           illustrative: bool = False) -> "ReviewFigures":
        """`estimate`: an estimate.json record (read through share_legal, ci_low, ci_high, population,
        found_legal); `split`: the split it was estimated on (its sidecar), None when unknown;
        `illustrative`: the verdicts are illustrative (their sidecar, `illustrative`)."""
        reviewed = unresolved = legal = None
        share = None
        done = None
        if verdicts is not None:
            final = final_verdicts(verdicts)
            reviewed, unresolved = len(final), len(verdicts) - len(final)
            legal = int((final["verdict"].astype(str) == "legal").sum())
            if reviewed:
                low, high = wilson(legal, reviewed)
                share = Figure(legal / reviewed, "share judged legally inaccurate",
                               f"over the {reviewed:,} reviewed pairs only (the review queue over-samples suspect "
                               "pairs, so this is not the split's rate)", low, high)
            if queue is not None:
                done = int(queue["id"].isin(final["id"]).sum())
        rate = None
        if estimate is not None:
            rate = Figure(float(estimate.share_legal), "legal-error rate",
                          "estimated over " + population_label(int(estimate.population), split),
                          float(estimate.ci_low), float(estimate.ci_high), float(getattr(estimate, "level", 0.95)))
        return cls(reviewed=reviewed, unresolved=unresolved or 0, reviewed_legal=legal or 0,
                   queued=None if queue is None else len(queue), queued_reviewed=done,
                   annotations=None if raw is None else len(raw), legal_rate=rate, reviewed_legal_share=share,
                   estimate_found_legal=getattr(estimate, "found_legal", None) if estimate is not None else None,
                   illustrative=illustrative)

    @property
    def reviewed_text(self) -> str:
        """`21` or `21 (2 unresolved disagreements not counted)`."""
        if self.reviewed is None:
            return "–"
        extra = f" ({self.unresolved:,} unresolved disagreement(s) not counted)" if self.unresolved else ""
        return f"{self.reviewed:,}{extra}"

    @property
    def progress_text(self) -> str | None:
        """`12 of the 16 queued pairs (75%); 9 reviewed pairs were not queued`."""
        if self.queued is None or self.queued_reviewed is None:
            return None
        text = (f"{self.queued_reviewed:,} of the {self.queued:,} queued pairs "
                f"({100 * self.queued_reviewed / max(self.queued, 1):.0f}%)")
        outside = (self.reviewed or 0) - self.queued_reviewed
        return text + (f"; {outside:,} reviewed pair(s) were not in the queue" if outside > 0 else "")
