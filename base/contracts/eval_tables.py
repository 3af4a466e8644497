"""metrics.csv, ranking_shift.csv, pairwise.csv, fr_nl_gap.csv and fragility.csv: the evaluation tables
read by the report."""

from __future__ import annotations

from .table import Column, TableSpec

METRICS = TableSpec("metrics.csv", (
    Column("system", "text"),
    Column("subset", "text"),
    Column("metric", "text"),
    Column("value", "float"),
    Column("ci_low", "float", required=False, empty_ok=True),
    Column("ci_high", "float", required=False, empty_ok=True),
    Column("n_queries", "int", required=False, lo=0),
    Column("n_missing", "int", required=False, lo=0),
    Column("signature", "text", required=False),
), key=("system", "subset", "metric"))

RANKING_SHIFT = TableSpec("ranking_shift.csv", (
    Column("metric", "text"),
    Column("subset_a", "text"),
    Column("subset_b", "text"),
    Column("kendall_tau", "float", empty_ok=True, lo=-1.0, hi=1.0),
    Column("tau_ap", "float", required=False, empty_ok=True, lo=-1.0, hi=1.0),
    Column("n_flips", "int", required=False, lo=0),
    Column("n_flips_significant", "int", required=False, lo=0),
    Column("n_systems", "int", required=False, lo=0),
    Column("n_queries_a", "int", required=False, lo=0),
    Column("n_queries_b", "int", required=False, lo=0),
    Column("order_a", "text", required=False),
    Column("order_b", "text", required=False),
    Column("rank_changes", "text", required=False),
    Column("flips", "text", required=False),
), key=("metric", "subset_a", "subset_b"))

PAIRWISE = TableSpec("pairwise.csv", (
    Column("metric", "text"),
    Column("subset", "text", required=False),
    Column("system_a", "text"),
    Column("system_b", "text"),
    *(Column(name, "float", required=False, empty_ok=True)
      for name in ("value_a", "value_b", "diff", "p_value", "p_holm")),
    Column("significant", "bool", required=False),
    Column("n_queries", "int", required=False, lo=0),
    Column("flips_vs_full", "bool", required=False),
))

FRAGILITY = TableSpec("fragility.csv", (
    Column("metric", "text"),
    Column("system_a", "text"),
    Column("system_b", "text"),
    Column("delta", "float"),
    Column("n_queries", "int", lo=0),
    Column("removal_fragility", "int", lo=0),
    Column("p_value", "float", empty_ok=True, lo=0.0, hi=1.0),
    Column("expected_errors_unverified", "float", required=False, empty_ok=True, lo=0.0),
    Column("expected_errors_unverified_high", "float", required=False, empty_ok=True, lo=0.0),
    Column("robust", "bool", required=False, empty_ok=True),
), key=("metric", "system_a", "system_b"))
"""One row per pairwise conclusion (a beats b on the full set); `robust` is empty without an estimate."""

FR_NL_GAP = TableSpec("fr_nl_gap.csv", (
    Column("system", "text"),
    Column("system_fr", "text"),
    Column("system_nl", "text"),
    Column("metric", "text"),
    Column("level", "enum", choices=("all", "verdict", "flag", "question")),
    Column("group", "text"),
    Column("n_queries", "int", lo=0),
    Column("fr", "float"),
    Column("nl", "float"),
    Column("gap", "float"),
    Column("ci_low", "float", empty_ok=True),
    Column("ci_high", "float", empty_ok=True),
    Column("verdict", "text", required=False),
    Column("flagged", "bool", required=False, empty_ok=True),
), key=("system", "metric", "level", "group"))
"""Per FR/NL system pair and metric: mean FR - NL overall, by verdict, by flag and per question."""

CLEANED = TableSpec("cleaned.csv", (
    Column("system", "text"),
    Column("metric", "text"),
    Column("full", "float"),
    Column("cleaned", "float"),
    Column("ci_low", "float"),
    Column("ci_high", "float"),
    Column("change", "float"),
    Column("change_low", "float"),
    Column("change_high", "float"),
    Column("reviewed", "int", lo=0),
    Column("unreviewed", "int", lo=0),
), key=("system", "metric"))
"""Per system and metric: the metric on the full judged set and on the cleaned benchmark (judged questions
whose translation is not a legal error), estimated from a campaign's draws (eval/cleaned.py), with 95 %
intervals; `change` = cleaned − full."""

RANK_SETS = TableSpec("rank_sets.csv", (
    Column("metric", "text"),
    Column("system", "text"),
    Column("rank", "int", lo=1),
    Column("rank_low", "int", lo=1),
    Column("rank_high", "int", lo=1),
), key=("metric", "system"))
"""Per metric: each system's rank on the cleaned estimate and its simultaneous 95 % rank set [rank_low, rank_high]."""

CLEANED_PAIRS = TableSpec("cleaned_pairs.csv", (
    Column("metric", "text"),
    Column("system_a", "text"),
    Column("system_b", "text"),
    Column("full_delta", "float"),
    Column("cleaned_delta", "float"),
    Column("ci_low", "float"),
    Column("ci_high", "float"),
    Column("conclusion", "enum", choices=("holds", "tied", "flips")),
), key=("metric", "system_a", "system_b"))
"""Each full-set conclusion "a beats b" (a ahead on the full set) on the cleaned benchmark: holds (a ahead,
simultaneous 95 %), flips (b ahead) or tied (neither shown)."""
