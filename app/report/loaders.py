"""Read whatever stage outputs a work folder holds into one `Workdir` object.

Every exchanged file is read by its contract (bbsard_audit.base.contracts), the same reader the stages
use: a truncated, mistyped or duplicated file is one line naming the file, never a partial report.
JSON outputs become their typed records (no key guessing); tables the contracts do not own yet are
read by the same strict CSV reader, with the columns a section needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from bbsard_audit.app.review_figures import ReviewFigures, estimated_split, illustrative
from bbsard_audit.base.contracts.agreement import Agreement
from bbsard_audit.base.contracts.audit import AUDIT, QUEUE, Layout
from bbsard_audit.base.contracts.calibration import CALIBRATION_CSV, Calibration
from bbsard_audit.base.contracts.error_spans import ERROR_SPANS, error_spans_spec
from bbsard_audit.base.contracts.estimate import Estimate as ErrorRate
from bbsard_audit.base.contracts.eval_tables import (CLEANED, CLEANED_PAIRS, FR_NL_GAP, FRAGILITY, METRICS, PAIRWISE,
                                                     RANK_SETS, RANKING_SHIFT)
from bbsard_audit.base.contracts.selftest import Selftest
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.contracts.table import Column, TableSpec
from bbsard_audit.base.contracts.verdicts import CORRECTED, RAW, VERDICTS_CSV, raw_spec, verdicts_spec
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.transactions import settle
from bbsard_audit.base.redact import redact_record
from bbsard_audit.base.contracts.corpus_audit import NAME as CORPUS_AUDIT, read as read_corpus_audit


CORPUS_LIGHT = ("id", "risk", "severity", "flagged", "flags")
CORPUS_SHOWN = ("reasons", "spans", "source_excerpt", "target_excerpt")


def _corpus_audit(path: Path) -> pd.DataFrame:
    """What the Corpus section shows: every document's id, risk, severity and flags; the excerpts,
    spans and reasons of the flagged ones only (NaN for the others): a report of millions of
    documents does not hold their texts."""
    light = read_corpus_audit(path, columns=CORPUS_LIGHT)
    heavy = read_corpus_audit(path, columns=("id", *CORPUS_SHOWN), flagged_only=True)
    return light.merge(heavy, on="id", how="left", validate="one_to_one")


def _loose(name: str, *required: str) -> TableSpec:
    return TableSpec(name, tuple(Column(c, "any") for c in required))


TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (
    AUDIT, QUEUE, _loose("selftest.csv", "error_type", "recall"), VERDICTS_CSV, RAW, ERROR_SPANS,
    _loose("disagreements.csv", "id"), METRICS, RANKING_SHIFT, PAIRWISE, FRAGILITY, CALIBRATION_CSV,
    _loose("null_model.csv", "metric"), FR_NL_GAP, CLEANED, RANK_SETS, CLEANED_PAIRS)}
RECORDS = {"agreement.json": Agreement, "estimate.json": ErrorRate, "calibration.json": Calibration,
           "selftest.json": Selftest}
REVIEW_FILES = ("verdicts.csv", "annotations_raw.csv", "error_spans.csv", "disagreements.csv", "agreement.json",
                "estimate.json")
"""What a review campaign produces (pull, agreement, estimate): read from the campaign folder when there is one."""
CAMPAIGN_MARK = "campaign.json"
"""Written by `annotate push --campaign DIR`: a direct subfolder holding it is the work folder's campaign."""


@dataclass
class Workdir:
    """The stage outputs found in one folder; an absent file is `None`."""

    root: Path
    layout: Layout
    """The audit's pair and id kind (audit.csv's sidecar): the language-coded columns are read by it."""
    review: Path | None = None
    """The folder the review files came from, when it is not `root` (a campaign folder)."""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    documents: dict[str, Any] = field(default_factory=dict)
    sidecars: dict[str, dict] = field(default_factory=dict)
    outside_audit: int = 0
    """verdicts.csv rows about pairs not in audit.csv, left out of every table and figure."""

    def table(self, name: str) -> pd.DataFrame | None:
        return self.tables.get(name)

    @cached_property
    def figures(self) -> ReviewFigures:
        """The review's figures (reviewed, queued, rates), each with its one definition and scope: every
        section and the Findings read them here (app/review_figures.py)."""
        estimate = self.document("estimate.json")
        split = estimated_split(self.sidecars.get(self.named("estimate.json").removesuffix(".json") + ".meta.json"),
                                self.sidecars.get("audit.meta.json"), estimate.population if estimate else None)
        meta = self.sidecars.get(self.named("verdicts.csv").removesuffix(".csv") + ".meta.json")
        return ReviewFigures.of(self.table("verdicts.csv"), self.table("review_queue.csv"),
                                self.table("annotations_raw.csv"), estimate, split=split,
                                illustrative=illustrative(meta), ignored=self.outside_audit)

    def document(self, name: str) -> Any:
        return self.documents.get(name)

    @property
    def found(self) -> list[str]:
        return sorted(self.named(n) for n in [*self.tables, *self.documents])

    def named(self, name: str) -> str:
        """A file's name relative to the work folder (`review/verdicts.csv` for a campaign's)."""
        if self.review is None or name not in REVIEW_FILES:
            return name
        return _relative(self.review / name, self.root)


def load_workdir(root: str | Path, campaign: str | Path | None = None) -> Workdir:
    """Read every known stage output in `root` (the review files from its campaign folder, see
    `review_folder`); raise `InputError` on a malformed one."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("work folder not found", file=str(root))
    settle(root, reading=None)  # a killed or running stage's outputs: its whole previous or new set
    review = review_folder(root, campaign)
    if review != root:
        settle(review, reading=None)
    wd = Workdir(root=root, review=None if review == root else review, layout=Layout.of(root / "audit.csv"))
    folder = lambda name: review if name in REVIEW_FILES else root
    for name, spec in _tables(wd.layout).items():
        path = folder(name) / name
        if path.exists():  # the corrected translation is `corrected_target` in the frames, whatever the pair
            wd.tables[name] = spec.read(path).rename(columns={wd.layout.corrected: CORRECTED})
    wd.outside_audit = _outside_audit(wd)
    if (root / CORPUS_AUDIT).exists():  # `audit corpus`'s table, read by its own contract
        wd.tables[CORPUS_AUDIT] = _corpus_audit(root / CORPUS_AUDIT)
    for name, record in RECORDS.items():
        path = folder(name) / name
        if path.exists():
            wd.documents[name] = record.read(path)
    for base in dict.fromkeys((root, review)):
        for path in sorted(base.glob("*.meta.json")):
            if path.name == "report.meta.json":  # our own previous run, not a stage output
                continue
            wd.sidecars[_relative(path, root)] = redact_record(read_sidecar(path))
    return wd


AUDITED_REVIEW = ("verdicts.csv", "annotations_raw.csv", "error_spans.csv")
"""Review tables whose rows are about one audited pair each: rows of pairs not in the audit are left out."""


def _outside_audit(wd: Workdir) -> int:
    """Leave out the review rows of pairs the audit does not hold (a verdicts.csv of a bigger audit, or
    of another split): the report's figures are about this audit's pairs. Returns the verdicts left out."""
    audit = wd.table("audit.csv")
    if audit is None:
        return 0
    ignored = 0
    for name in AUDITED_REVIEW:
        frame = wd.table(name)
        if frame is not None:
            inside = frame["id"].isin(audit["id"])
            wd.tables[name] = frame[inside].reset_index(drop=True)
            ignored = int((~inside).sum()) if name == "verdicts.csv" else ignored
    return ignored


def _tables(layout: Layout) -> dict[str, TableSpec]:
    """TABLES with the audit, queue and review tables read for the audit's layout."""
    return {**TABLES, **{spec.name: spec for spec in (layout.audit, layout.queue, verdicts_spec(layout),
                                                      raw_spec(layout), error_spans_spec(layout))}}


def review_folder(root: Path, campaign: str | Path | None = None) -> Path:
    """Where the review files are: `campaign` when given; else the one direct subfolder of `root`
    holding campaign.json (several: InputError) once it holds a review file; else `root`. Two verdicts.csv (the work folder's and
    its campaign's) are refused: the report never silently picks one of two reviews."""
    if campaign is not None:
        campaign = Path(campaign)
        if not campaign.is_dir():
            raise InputError("campaign folder not found", file=str(campaign))
        return campaign
    found = sorted(p for p in root.iterdir() if p.is_dir() and (p / CAMPAIGN_MARK).is_file())
    if len(found) > 1:
        raise InputError(f"several campaign folders ({', '.join(p.name for p in found)}): choose one with "
                         "--campaign DIR", file=str(root))
    if not found or not any((found[0] / name).exists() for name in REVIEW_FILES):
        return root  # no campaign, or one not pulled yet: the work folder's own review files, if any
    if (root / "verdicts.csv").exists() and (found[0] / "verdicts.csv").exists():
        raise InputError(f"two verdicts.csv, this folder's and its campaign's ({found[0].name}/verdicts.csv): choose "
                         f"with --campaign {found[0]} (or --campaign {root} for this folder's own)", file=str(root))
    return found[0]


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:  # --campaign outside the work folder: named by its folder
        return f"{path.parent.name}/{path.name}"


def fragility(wd: Workdir) -> pd.DataFrame | None:
    """fragility.csv (typed by its contract), most fragile conclusion first."""
    frame = wd.table("fragility.csv")
    if frame is None:
        return None
    return frame.sort_values("removal_fragility", kind="stable", ignore_index=True)
