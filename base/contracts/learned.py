"""learned_conflicts.csv, learned_confirming.csv and learned_rules.csv (written by `audit learn` /
`campaign simulate`), learned_ranking.json (`audit learn`); learned_glossary.yaml itself is the
glossary format (read by audit.glossary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bbsard_audit.base.errors import InputError

from .jsonfile import Record, read_checked
from .table import Column, TableSpec

RULE_METHODS = ("span", "glossary", "dice")

RULE = (Column("fr", "text"), Column("accepted", "text"), Column("rejected", "text"), Column("source", "text"))
"""A rule's columns, first in both files."""

LEARNED_CONFLICTS = TableSpec("learned_conflicts.csv", (
    *RULE,
    Column("conflicts_with", "text"),
    Column("why", "text"),
))

LEARNED_CONFIRMING = TableSpec("learned_confirming.csv", (
    *RULE,
    Column("confirms", "text"),
))

LEARNED_RULES = TableSpec("learned_rules.csv", (
    *RULE,
    Column("method", "enum", choices=RULE_METHODS),
    Column("round", "int", lo=0),
    Column("n_other_flagged", "int", lo=0),
))


@dataclass(frozen=True)
class RankingModel(Record):
    """learned_ranking.json (written by `audit learn`, applied by `audit --learned`): the refitted
    review ranking of audit/ranking.py — coefficients on standardised features and their posterior
    covariance; `coefficients[0]` is the intercept."""

    features: list[str]
    means: list[float]
    scales: list[float]
    coefficients: list[float]
    covariance: list[list[float]]
    risk_column: str
    explore_share: float
    explore_z: float
    prior_precision: float
    n_verdicts: int
    n_positive: int
    learned_from: dict[str, str] = field(default_factory=dict)
    format: str = "bbsard-audit learned ranking 1"

    def __post_init__(self) -> None:
        n = len(self.features)
        if len(self.means) != n or len(self.scales) != n or any(s <= 0 for s in self.scales):
            raise ValueError("means and scales need one positive entry per feature")
        if self.coefficients and (len(self.coefficients) != n + 1 or len(self.covariance) != n + 1
                                  or any(len(row) != n + 1 for row in self.covariance)):
            raise ValueError(f"a fitted model needs {n + 1} coefficients and a {n + 1}x{n + 1} covariance")
        if not 0 <= self.explore_share < 1:
            raise ValueError("explore_share must be in [0, 1)")

    @classmethod
    def read(cls, path: str | Path) -> "RankingModel":
        """Strict: unknown keys, wrong types, mismatched sizes or an unfitted model -> one-line InputError."""
        model = read_checked(cls, path, "a learned ranking")
        if not model.coefficients or model.format != cls.format:
            raise InputError("not a learned ranking (no coefficients, or another format)", file=str(path))
        return model
