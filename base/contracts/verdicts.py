"""The ONE verdict vocabulary, verdicts.csv and annotations_raw.csv (docs/formats.md).

The corrected translation's column is language-coded in the files (`corrected_nl` for bBSARD,
`corrected_<target>` for another pair, the audit's `Layout`, recorded in each sidecar); the frames
these readers return call it `corrected_target` whatever the pair, so the stages have one name for it."""

from __future__ import annotations

import hashlib

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache, cached_property
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.untrusted import nfc

from .audit import BBSARD_LAYOUT, Layout
from .table import Column, TableSpec

CORRECTED = "corrected_target"
"""The corrected translation's column in the frames (the file's `corrected_<target>`)."""

VERDICTS = ("correct", "minor", "legal")
"""Expert verdicts, mildest first: correct < minor issue (legal meaning preserved) < legally inaccurate."""
SEVERITY = {v: i for i, v in enumerate(VERDICTS)}
GOLD_LABELS_APPLY = ("yes", "no", "unsure")
AGREEMENT_STATUSES = ("single", "agreed", "adjudicated", "unresolved")


def check_known(values: Iterable[object]) -> None:
    """A verdict outside the vocabulary in frames built in memory: an error, never a dropped row."""
    unknown = sorted({str(v) for v in values} - set(VERDICTS))
    if unknown:
        raise InputError(f"verdict {unknown[0]!r} is not one of {', '.join(VERDICTS)}")


def canonical_name(name: object) -> str:
    """An annotator name as stored and compared: NFC, trimmed, inner spaces collapsed, case-folded
    (" Alice@X.org" is "alice@x.org"); every reader of an `annotator` column applies it."""
    return " ".join(nfc(str(name)).split()).casefold()


def _adjudicated_by(text: str) -> str:
    if text in ("majority",) or (text.startswith("rule:") and len(text) > 5):
        return text
    raise ValueError(f"{text!r} is not majority or rule:<name>")


def _unresolved_only(row: dict) -> str | None:
    """An empty verdict is only for a disagreement nobody resolved yet (agreement_status unresolved)."""
    if row["verdict"] == "" and row.get("agreement_status") != "unresolved":
        return "verdict is empty but agreement_status is not unresolved"
    if row.get("agreement_status") == "unresolved" and row["verdict"] != "":
        return "agreement_status is unresolved but a verdict is given"
    return None


@cache
def verdicts_spec(layout: Layout) -> TableSpec:
    """verdicts.csv for an audit's layout (its `corrected_<target>` column and id kind)."""
    return TableSpec("verdicts.csv", (
        Column("id", "id"),
        Column("verdict", "enum", choices=VERDICTS, empty_ok=True),
        Column(layout.corrected, "text", required=False, parse=nfc),  # a hand-made file may be NFD
        Column("gold_labels_apply", "enum", choices=GOLD_LABELS_APPLY, required=False, empty_ok=True),
        Column("n_annotations", "int", required=False, lo=0),
        Column("annotators", "text", required=False, parse=nfc),
        Column("agreement_status", "enum", choices=AGREEMENT_STATUSES, required=False),
        Column("adjudicated_by", "text", required=False, parse=_adjudicated_by),
    ), key=("id",), row_checks=(_unresolved_only,)).with_string_ids(layout.string_ids)


VERDICTS_CSV = verdicts_spec(BBSARD_LAYOUT)
"""bBSARD's verdicts.csv (fr -> nl, integer ids), as docs/formats.md shows it."""
FRAME_VERDICT_COLUMNS = [CORRECTED if c == BBSARD_LAYOUT.corrected else c for c in VERDICTS_CSV.names]
"""verdicts.csv's columns as the readers' frames name them (its `corrected_<target>` as `CORRECTED`)."""

def utc_time(value: object) -> str:
    """An ISO 8601 time (offset and fraction honoured; naive = UTC) as `YYYY-MM-DDTHH:MM:SS.ffffffZ`
    in UTC, '' when missing. Fixed width, so text order is time order. ValueError on anything else."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()
    if not text:
        return ""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time") from None
    when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


RAW_COLUMNS = ["id", "task_id", "annotation_id", "annotator", "verdict", CORRECTED,
               "gold_labels_apply", "created_at", "updated_at"]
@cache
def raw_spec(layout: Layout) -> TableSpec:
    """annotations_raw.csv for an audit's layout."""
    return TableSpec("annotations_raw.csv", (
        Column("id", "id"),
        Column("task_id", "text"),
        Column("annotation_id", "text"),
        Column("annotator", "text", parse=canonical_name),  # an older file may have "Alice@X.org"
        Column("verdict", "enum", choices=VERDICTS),
        Column(layout.corrected, "text", parse=nfc),
        Column("gold_labels_apply", "enum", choices=GOLD_LABELS_APPLY, empty_ok=True),
        Column("created_at", "text", parse=utc_time),  # normalised on read: annotate pull compares times
        Column("updated_at", "text", parse=utc_time),
    )).with_string_ids(layout.string_ids)


RAW = raw_spec(BBSARD_LAYOUT)
"""bBSARD's annotations_raw.csv."""


def read_verdicts(path: str | Path, layout: Layout | None = None) -> pd.DataFrame:
    """verdicts.csv (or any CSV with `id, verdict`): typed, one row per question, vocabulary checked.
    Rows with an empty verdict are unresolved disagreements: present, but no final verdict. `layout`:
    the audit's (default: the one the file's sidecar records; none = fr -> nl, integer ids)."""
    layout = layout or Layout.of(path)
    frame = verdicts_spec(layout).read(path).rename(columns={layout.corrected: CORRECTED})
    for column, default in ((CORRECTED, ""), ("gold_labels_apply", ""), ("annotators", "")):
        if column not in frame.columns:
            frame[column] = default
    return frame


def read_raw(path: str | Path, *, missing_ok: bool = False, layout: Layout | None = None) -> pd.DataFrame:
    """annotations_raw.csv (its corrected column as `corrected_target`); a first pull has none yet (`missing_ok`).
    `layout`: the audit's (default: the one the file's sidecar records; none = fr -> nl, integer ids)."""
    layout = layout or Layout.of(path)
    if missing_ok and not Path(path).exists():
        kind = object if layout.string_ids else "int64"
        return pd.DataFrame({c: pd.Series(dtype=kind if c == "id" else object) for c in RAW_COLUMNS})
    return raw_spec(layout).read(path).rename(columns={layout.corrected: CORRECTED})


@dataclass(frozen=True)
class Verdict:
    """One final expert verdict on a question pair (an unresolved disagreement has none yet)."""

    id: int | str
    verdict: str
    corrected_target: str = ""
    """The experts' corrected translation (the file's `corrected_<target>` column)."""
    gold_labels_apply: str = ""
    annotators: str = ""
    adjudicated_by: str = ""

    @property
    def annotator(self) -> str:
        """Who decided: the adjudication when there was one, else the annotators."""
        return self.adjudicated_by or self.annotators


FRAME_COLUMNS = ["id", "verdict", CORRECTED, "annotator"]


@dataclass(frozen=True)
class Verdicts:
    """The final verdicts of one verdicts.csv: the ONE reading every stage goes through (eval,
    calibrate, estimate, learn, the simulator's oracle, release), so one file means one thing to all."""

    by_id: Mapping[int | str, Verdict]
    source: str = "<memory>"

    @classmethod
    def read(cls, path: str | Path, known_ids: Iterable[int | str] | None = None,
             where: str = "the audit", layout: Layout | None = None) -> "Verdicts":
        """`read_verdicts` (its contract), unresolved rows left out, text trimmed; with `known_ids`,
        a row whose id is not among them (`where` names them) is an error naming file, row and id."""
        frame = read_verdicts(path, layout)
        key = str if (layout or Layout.of(path)).string_ids else int
        if known_ids is not None:
            known = {key(i) for i in known_ids}
            for row_no, qid in zip(range(2, len(frame) + 2), frame["id"]):
                if key(qid) not in known:
                    raise InputError(f"verdict for a question that is not in {where}", file=str(path), row=row_no,
                                     id=key(qid))
        final = frame[frame["verdict"] != ""]
        judge = final["adjudicated_by"] if "adjudicated_by" in final.columns else pd.Series("", index=final.index)
        text = {c: final[c].fillna("").astype(str).str.strip() for c in (CORRECTED, "annotators")}
        rows = zip(final["id"], final["verdict"], text[CORRECTED], final["gold_labels_apply"], text["annotators"],
                   judge.fillna("").astype(str).str.strip())
        return cls({key(i): Verdict(key(i), v, c, str(g), a, j) for i, v, c, g, a, j in rows}, str(path))

    @cached_property
    def fingerprint(self) -> tuple[int, str]:
        """(count, sha256) of the final verdicts (`fingerprint`)."""
        return fingerprint((i, v.verdict) for i, v in self.by_id.items())

    @cached_property
    def verdict(self) -> dict[str, str]:
        """Question id (as a string, like run ids) -> verdict."""
        return {str(i): v.verdict for i, v in self.by_id.items()}

    @cached_property
    def corrected_target(self) -> dict[str, str]:
        """Question id (as a string) -> the experts' corrected target question, where they gave one."""
        return {str(i): v.corrected_target for i, v in self.by_id.items() if v.corrected_target}

    @property
    def _id_dtype(self):
        return object if any(isinstance(i, str) for i in self.by_id) else "int64"

    def frame(self) -> pd.DataFrame:
        """`id, verdict, corrected_target, annotator`, one row per final verdict in file order."""
        return pd.DataFrame([(v.id, v.verdict, v.corrected_target, v.annotator) for v in self.by_id.values()],
                            columns=FRAME_COLUMNS).astype({"id": self._id_dtype, "verdict": object, CORRECTED: object,
                                                           "annotator": object})


def fingerprint(final: Iterable[tuple[int | str, str]]) -> tuple[int, str]:
    """(count, sha256 of the sorted `id<TAB>verdict` lines) of final verdicts, whatever the file order or
    the other columns: what an estimate records of the verdicts it came from (contracts/estimate.py)."""
    lines = sorted(f"{i}\t{str(v).strip()}\n" for i, v in final)
    return len(lines), hashlib.sha256("".join(lines).encode()).hexdigest()
