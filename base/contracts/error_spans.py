"""error_spans.csv (written by `annotate pull`): one row per error span an annotator kept or added."""

from __future__ import annotations

from functools import cache

from .audit import BBSARD_LAYOUT, SPAN_CATEGORIES, Layout
from .table import Column, TableSpec
from .verdicts import canonical_name


def _ordered(row: dict) -> str | None:
    return None if row["start"] <= row["end"] else f"start {row['start']} is after end {row['end']}"


@cache
def error_spans_spec(layout: Layout) -> TableSpec:
    """error_spans.csv for an audit's layout: `side` is one of its pair's codes."""
    return TableSpec("error_spans.csv", (
        Column("id", "id"),
        Column("annotator", "text", parse=canonical_name),  # as annotations_raw.csv names them
        Column("side", "enum", choices=layout.sides),
        Column("start", "int", lo=0),
        Column("end", "int", lo=0),
        Column("text", "text"),
        Column("category", "enum", choices=SPAN_CATEGORIES),
        Column("note", "text"),
    ), row_checks=(_ordered,)).with_string_ids(layout.string_ids)


ERROR_SPANS = error_spans_spec(BBSARD_LAYOUT)
"""bBSARD's error_spans.csv (sides fr, nl)."""
