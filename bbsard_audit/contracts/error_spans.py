"""error_spans.csv (written by `annotate pull`): one row per error span an annotator kept or added."""

from __future__ import annotations

from .audit import SPAN_CATEGORIES, SPAN_SIDES
from .table import Column, TableSpec
from .verdicts import canonical_name


def _ordered(row: dict) -> str | None:
    return None if row["start"] <= row["end"] else f"start {row['start']} is after end {row['end']}"


ERROR_SPANS = TableSpec("error_spans.csv", (
    Column("id", "id"),
    Column("annotator", "text", parse=canonical_name),  # as annotations_raw.csv names them
    Column("side", "enum", choices=SPAN_SIDES),
    Column("start", "int", lo=0),
    Column("end", "int", lo=0),
    Column("text", "text"),
    Column("category", "enum", choices=SPAN_CATEGORIES),
    Column("note", "text"),
), row_checks=(_ordered,))
