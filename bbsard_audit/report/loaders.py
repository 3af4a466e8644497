"""Read whatever stage outputs a work folder holds into one `Workdir` object.

Every exchanged file is read by its contract (bbsard_audit.contracts), the same reader the stages
use: a truncated, mistyped or duplicated file is one line naming the file, never a partial report.
JSON outputs become their typed records (no key guessing); tables the contracts do not own yet are
read by the same strict CSV reader, with the columns a section needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..contracts.agreement import Agreement
from ..contracts.audit import AUDIT, QUEUE
from ..contracts.calibration import CALIBRATION_CSV, Calibration
from ..contracts.error_spans import ERROR_SPANS
from ..contracts.estimate import Estimate as ErrorRate
from ..contracts.eval_tables import FR_NL_GAP, FRAGILITY, METRICS, PAIRWISE, RANKING_SHIFT
from ..contracts.selftest import Selftest
from ..contracts.sidecar import read_sidecar
from ..contracts.table import Column, TableSpec
from ..contracts.verdicts import RAW, VERDICTS_CSV
from ..errors import InputError
from ..transactions import settle
from ..redact import redact_record


def _loose(name: str, *required: str) -> TableSpec:
    return TableSpec(name, tuple(Column(c, "any") for c in required))


TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (
    AUDIT, QUEUE, _loose("selftest.csv", "error_type", "recall"), VERDICTS_CSV, RAW, ERROR_SPANS,
    _loose("disagreements.csv", "id"), METRICS, RANKING_SHIFT, PAIRWISE, FRAGILITY, CALIBRATION_CSV,
    _loose("null_model.csv", "metric"), FR_NL_GAP)}
RECORDS = {"agreement.json": Agreement, "estimate.json": ErrorRate, "calibration.json": Calibration,
           "selftest.json": Selftest}


@dataclass
class Workdir:
    """The stage outputs found in one folder; an absent file is `None`."""

    root: Path
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    documents: dict[str, Any] = field(default_factory=dict)
    sidecars: dict[str, dict] = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame | None:
        return self.tables.get(name)

    def document(self, name: str) -> Any:
        return self.documents.get(name)

    @property
    def found(self) -> list[str]:
        return sorted([*self.tables, *self.documents])


def load_workdir(root: str | Path) -> Workdir:
    """Read every known stage output in `root`; raise `InputError` on a malformed one."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("work folder not found", file=str(root))
    settle(root, reading=None)  # a killed or running stage's outputs: its whole previous or new set
    wd = Workdir(root=root)
    for name, spec in TABLES.items():
        path = root / name
        if path.exists():
            wd.tables[name] = spec.read(path)
    for name, record in RECORDS.items():
        path = root / name
        if path.exists():
            wd.documents[name] = record.read(path)
    for path in sorted(root.glob("*.meta.json")):
        if path.name == "report.meta.json":  # our own previous run, not a stage output
            continue
        wd.sidecars[path.name] = redact_record(read_sidecar(path))
    return wd


def fragility(wd: Workdir) -> pd.DataFrame | None:
    """fragility.csv (typed by its contract), most fragile conclusion first."""
    frame = wd.table("fragility.csv")
    if frame is None:
        return None
    return frame.sort_values("removal_fragility", kind="stable", ignore_index=True)
