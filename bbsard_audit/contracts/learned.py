"""learned_conflicts.csv and learned_rules.csv (written by `audit learn` / `campaign simulate`);
learned_glossary.yaml itself is the glossary format (read by audit.glossary)."""

from __future__ import annotations

from .table import Column, TableSpec

RULE_METHODS = ("span", "glossary", "dice")

RULE = (Column("fr", "text"), Column("accepted", "text"), Column("rejected", "text"), Column("source", "text"))
"""A rule's columns, first in both files."""

LEARNED_CONFLICTS = TableSpec("learned_conflicts.csv", (
    *RULE,
    Column("conflicts_with", "text"),
    Column("why", "text"),
))

LEARNED_RULES = TableSpec("learned_rules.csv", (
    *RULE,
    Column("method", "enum", choices=RULE_METHODS),
    Column("round", "int", lo=0),
    Column("n_other_flagged", "int", lo=0),
))
