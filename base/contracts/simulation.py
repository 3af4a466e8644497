"""campaign_curve.csv, campaign_seeds.csv and review_order.csv (written by `campaign simulate`, read
by the report)."""

from __future__ import annotations

from .audit import QUEUES
from .table import Column, TableSpec

CAMPAIGN_CURVE = TableSpec("campaign_curve.csv", (
    Column("round", "int", lo=0),
    Column("reviewed", "int", lo=0),
    Column("reviewed_risk", "int", lo=0),
    Column("reviewed_control", "int", lo=0),
    Column("found_legal", "int", lo=0),
    Column("found_minor", "int", lo=0),
    Column("flagged_unreviewed", "int", lo=0),
    Column("estimate", "float", empty_ok=True, lo=0.0, hi=1.0),
    Column("ci_low", "float", empty_ok=True, lo=0.0, hi=1.0),
    Column("ci_high", "float", empty_ok=True, lo=0.0, hi=1.0),
    Column("unknown", "int", lo=0, required=False),
    Column("cs_low", "float", empty_ok=True, lo=0.0, hi=1.0, required=False),   # the stopping bound (design `draw`)
    Column("cs_high", "float", empty_ok=True, lo=0.0, hi=1.0, required=False),
), key=("round",))

CAMPAIGN_SEEDS = TableSpec("campaign_seeds.csv", (Column("seed", "int"), *CAMPAIGN_CURVE.columns),
                           key=("seed", "round"))
"""Every seed's campaign curve (`campaign simulate --seeds N`)."""

REVIEW_ORDER = TableSpec("review_order.csv", (
    Column("round", "int", lo=0),
    Column("id", "id"),
    Column("queue", "enum", choices=QUEUES),
), key=("id",))
