"""Read whatever stage outputs a work folder holds into one `Workdir` object.

Readers are tolerant of extra columns and unknown JSON keys (stages grow), and strict on missing
required columns (a renamed column must fail loudly, with one line naming the file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..errors import InputError

# file -> columns a section cannot do without (the rest of docs/formats.md is optional here)
REQUIRED: dict[str, tuple[str, ...]] = {
    "audit.csv": ("id", "question_fr", "question_nl", "risk", "flagged", "flags", "reasons"),
    "review_queue.csv": ("id", "queue"),
    "selftest.csv": ("error_type", "recall"),
    "verdicts.csv": ("id", "verdict"),
    "annotations_raw.csv": ("id", "annotator", "verdict"),
    "disagreements.csv": ("id",),
    "metrics.csv": ("system", "subset", "metric", "value"),
    "ranking_shift.csv": ("metric", "subset_a", "subset_b", "kendall_tau"),
    "pairwise.csv": ("metric", "system_a", "system_b"),
    "calibration.csv": ("signal",),
    "null_model.csv": ("metric",),
    "fr_nl_gap.csv": ("system",),
}
JSON_FILES = ("selftest.json", "calibration.json", "agreement.json", "estimate.json")
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
    for name, required in REQUIRED.items():
        path = root / name
        if path.exists():
            wd.tables[name] = read_table(path, required)
    for name in JSON_FILES:
        path = root / name
        if path.exists():
            wd.documents[name] = read_json(path)
    for path in sorted(root.glob("*.meta.json")):
        if path.name == "report.meta.json":  # our own previous run, not a stage output
            continue
        wd.sidecars[path.name] = redact(read_json(path))
    return wd


def read_table(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 ({exc.reason})", file=str(path)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"unreadable CSV ({str(exc).splitlines()[0]})", file=str(path)) from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} "
                         f"(found: {', '.join(map(str, frame.columns)) or 'none'})", file=str(path))
    for column in ("id",):
        if column in frame.columns and column in required:
            ids = pd.to_numeric(frame[column], errors="coerce")
            bad = ids.isna()
            if bad.any():
                row = int(bad.to_numpy().nonzero()[0][0])
                raise InputError(f"id {frame[column].iloc[row]!r} is not an integer", file=str(path),
                                 row=row + 2)
            frame[column] = ids.astype(int)
    return frame


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", file=str(path)) from None


def redact(obj: Any) -> Any:
    """Drop anything that looks like a credential, however deeply nested (sidecars hold config)."""
    if isinstance(obj, Mapping):
        return {k: redact(v) for k, v in obj.items()
                if not any(m in str(k).lower() for m in SECRET_MARKERS)}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


@dataclass(frozen=True)
class Estimate:
    """A point estimate with an optional confidence interval, found somewhere in a JSON document."""

    name: str
    value: float | int
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


VALUE_KEYS = ("value", "estimate", "point", "rate", "kappa", "alpha", "mean", "recall", "precision",
              "roc_auc", "auc", "share", "proportion", "error_rate")
LOW_KEYS = ("ci_low", "low", "lower", "ci_lower", "lo")
HIGH_KEYS = ("ci_high", "high", "upper", "ci_upper", "hi")
N_KEYS = ("n", "n_items", "n_pairs", "n_questions", "count", "support")


SKIP_KEYS = frozenset({"config", "dataset", "inputs", "signatures", "timings", "timings_s", "seed", "seeds",
                       "draws", "level", "resamples", "n_boot"})


def find_estimates(doc: Any, prefix: str = "", skip: frozenset[str] = SKIP_KEYS) -> list[Estimate]:
    """Every number (with its CI when one sits next to it) in a stage's JSON, named by its path.

    The stages' JSON layouts are theirs to evolve; this finds `{"kappa": .6, "ci": [.4, .8]}`,
    `{"value": .1, "ci_low": .05, "ci_high": .2}` and plain `{"roc_auc": .9}` alike.
    """
    out: list[Estimate] = []
    if isinstance(doc, Mapping):
        ci = _ci(doc)
        value_key = next((k for k in VALUE_KEYS if _is_number(doc.get(k))), None)
        if value_key is not None and ci is not None:
            n = next((int(doc[k]) for k in N_KEYS if _is_number(doc.get(k))), None)
            name = prefix or value_key
            out.append(Estimate(name if value_key in ("value", "estimate", "point") or not prefix
                                else f"{prefix}.{value_key}", doc[value_key], *ci, n=n))
            used = {value_key, *LOW_KEYS, *HIGH_KEYS, "ci", *N_KEYS}
        else:
            used = set()
        for key, value in doc.items():
            if key in used or key in skip:
                continue
            path = f"{prefix}.{key}" if prefix else str(key)
            if _is_number(value):
                out.append(Estimate(path, value))
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


# ---------------------------------------------------------------- fragility.csv (eval stage, issue 11)
# Kept apart from the table above so the contracts migration can move it as one block.

FRAGILITY_REQUIRED = ("metric", "system_a", "system_b", "delta", "n_queries", "removal_fragility")
REQUIRED["fragility.csv"] = FRAGILITY_REQUIRED


def fragility(wd: Workdir) -> pd.DataFrame | None:
    """fragility.csv with typed columns (`robust`: True/False, or NA without an estimate), most fragile first."""
    frame = wd.table("fragility.csv")
    if frame is None:
        return None
    frame = frame.copy()
    for column in ("delta", "removal_fragility", "n_queries", "p_value", "expected_errors_unverified",
                   "expected_errors_unverified_high"):
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    if "robust" in frame.columns:
        text = frame["robust"].astype(str).str.strip().str.lower()
        frame["robust"] = text.map({"true": True, "false": False}).astype("boolean")
    return frame.sort_values("removal_fragility", kind="stable", ignore_index=True)
