"""CHANGELOG.csv of a release: one row per corrected or excluded pair."""

from __future__ import annotations

from .table import Column, TableSpec
from .verdicts import GOLD_LABELS_APPLY, VERDICTS

CHANGE_STATUSES = ("corrected", "excluded", "removed")
CHANGELOG = TableSpec("CHANGELOG.csv", (
    Column("id", "id"),
    Column("split", "text"),
    Column("old_nl", "text"),
    Column("new_nl", "text"),
    Column("verdict", "enum", choices=VERDICTS),
    Column("annotators", "text"),
    Column("date", "text"),
    Column("verification", "enum", choices=CHANGE_STATUSES),
    Column("gold_labels_apply", "enum", choices=GOLD_LABELS_APPLY, empty_ok=True),
), key=("id",))
COLUMNS = CHANGELOG.names
