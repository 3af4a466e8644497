"""Read whatever stage outputs a work folder holds into one `Workdir` object.

Every exchanged file is read by its contract (bbsard_audit.contracts), the same reader the stages
use: a truncated, mistyped or duplicated file is one line naming the file, never a partial report.
JSON outputs become their typed records (no key guessing); tables the contracts do not own yet are
read by the same strict CSV reader, with the columns a section needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..contracts.agreement import Agreement
from ..contracts.audit import AUDIT, QUEUE
from ..contracts.calibration import CALIBRATION_CSV, Calibration
from ..contracts.error_spans import ERROR_SPANS
from ..contracts.estimate import Estimate as ErrorRate
from ..contracts.eval_tables import METRICS, PAIRWISE, RANKING_SHIFT
from ..contracts.jsonfile import NamedValue, read_json
from ..contracts.sidecar import read_sidecar
from ..contracts.table import Column, TableSpec
from ..contracts.verdicts import RAW, VERDICTS_CSV
from ..errors import InputError


def _loose(name: str, *required: str) -> TableSpec:
    return TableSpec(name, tuple(Column(c, "any") for c in required))


TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (
    AUDIT, QUEUE, _loose("selftest.csv", "error_type", "recall"), VERDICTS_CSV, RAW, ERROR_SPANS,
    _loose("disagreements.csv", "id"), METRICS, RANKING_SHIFT, PAIRWISE, CALIBRATION_CSV,
    _loose("null_model.csv", "metric"), _loose("fr_nl_gap.csv", "system"))}
RECORDS = {"agreement.json": Agreement, "estimate.json": ErrorRate, "calibration.json": Calibration}
JSON_FILES = ("selftest.json", *RECORDS)
SECRET_MARKERS = ("token", "api_key", "apikey", "password", "passwd", "secret", "authorization",
                  "credential")


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
    wd = Workdir(root=root)
    for name, spec in TABLES.items():
        path = root / name
        if path.exists():
            wd.tables[name] = spec.read(path)
    for name in JSON_FILES:
        path = root / name
        if path.exists():
            wd.documents[name] = RECORDS[name].read(path) if name in RECORDS else read_json(path)
    for path in sorted(root.glob("*.meta.json")):
        if path.name == "report.meta.json":  # our own previous run, not a stage output
            continue
        wd.sidecars[path.name] = redact(read_sidecar(path))
    return wd


def redact(obj: Any) -> Any:
    """Drop anything that looks like a credential, however deeply nested (sidecars hold config)."""
    if isinstance(obj, Mapping):
        return {k: redact(v) for k, v in obj.items()
                if not any(m in str(k).lower() for m in SECRET_MARKERS)}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


VALUE_KEYS = ("value", "estimate", "point", "rate", "kappa", "alpha", "mean", "recall", "precision",
              "roc_auc", "auc", "share", "proportion", "error_rate")
LOW_KEYS = ("ci_low", "low", "lower", "ci_lower", "lo")
HIGH_KEYS = ("ci_high", "high", "upper", "ci_upper", "hi")
N_KEYS = ("n", "n_items", "n_pairs", "n_questions", "count", "support")


SKIP_KEYS = frozenset({"config", "dataset", "inputs", "signatures", "timings", "timings_s", "seed", "seeds",
                       "draws", "level", "resamples", "n_boot"})


def find_estimates(doc: Any, prefix: str = "", skip: frozenset[str] = SKIP_KEYS) -> list[NamedValue]:
    """Every number (with its CI when one sits next to it) in a JSON document without a contract
    (selftest.json), named by its path: `{"kappa": .6, "ci": [.4, .8]}`, `{"value": .1, "ci_low":
    .05, "ci_high": .2}` and plain `{"roc_auc": .9}` alike. Files with a contract use their record."""
    out: list[NamedValue] = []
    if isinstance(doc, Mapping):
        ci = _ci(doc)
        value_key = next((k for k in VALUE_KEYS if _is_number(doc.get(k))), None)
        if value_key is not None and ci is not None:
            n = next((int(doc[k]) for k in N_KEYS if _is_number(doc.get(k))), None)
            name = prefix or value_key
            out.append(NamedValue(name if value_key in ("value", "estimate", "point") or not prefix
                                else f"{prefix}.{value_key}", doc[value_key], *ci, n=n))
            used = {value_key, *LOW_KEYS, *HIGH_KEYS, "ci", *N_KEYS}
        else:
            used = set()
        for key, value in doc.items():
            if key in used or key in skip:
                continue
            path = f"{prefix}.{key}" if prefix else str(key)
            if _is_number(value):
                out.append(NamedValue(path, value))
            elif isinstance(value, (Mapping, list)):
                out.extend(find_estimates(value, path, skip))
    elif isinstance(doc, list) and all(isinstance(v, Mapping) for v in doc):
        for i, item in enumerate(doc):
            label = next((str(item[k]) for k in ("name", "stratum", "metric", "error_type", "signal")
                          if k in item), str(i))
            out.extend(find_estimates(item, f"{prefix}[{label}]" if prefix else label, skip))
    return out


def _ci(doc: Mapping) -> tuple[float, float] | None:
    ci = doc.get("ci") or doc.get("ci95") or doc.get("confidence_interval")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(map(_is_number, ci)):
        return float(ci[0]), float(ci[1])
    if isinstance(ci, Mapping):
        return _ci({**ci, "ci": None})
    low = next((doc[k] for k in LOW_KEYS if _is_number(doc.get(k))), None)
    high = next((doc[k] for k in HIGH_KEYS if _is_number(doc.get(k))), None)
    if low is not None and high is not None:
        return float(low), float(high)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
