"""CHANGELOG.csv of a release: one row per corrected or excluded pair."""

from __future__ import annotations

from functools import cache

from .audit import BBSARD_LAYOUT, Layout
from .table import Column, TableSpec
from .verdicts import GOLD_LABELS_APPLY, VERDICTS

CHANGE_STATUSES = ("corrected", "excluded", "removed")


@cache
def changelog_spec(layout: Layout) -> TableSpec:
    """CHANGELOG.csv for a dataset's pair: `old_<target>`, `new_<target>` (old_nl, new_nl for bBSARD)."""
    tgt = layout.pair.target
    return TableSpec("CHANGELOG.csv", (
        Column("id", "id"),
        Column("split", "text"),
        Column(f"old_{tgt}", "text"),
        Column(f"new_{tgt}", "text"),
        Column("verdict", "enum", choices=VERDICTS),
        Column("annotators", "text"),
        Column("date", "text"),
        Column("verification", "enum", choices=CHANGE_STATUSES),
        Column("gold_labels_apply", "enum", choices=GOLD_LABELS_APPLY, empty_ok=True),
    ), key=("id",)).with_string_ids(layout.string_ids)


CHANGELOG = changelog_spec(BBSARD_LAYOUT)
"""bBSARD's CHANGELOG.csv (old_nl, new_nl)."""
