"""The corpus audit's three batch phases, shared by the local and the Ray engine (docs/corpus_checks.md).

- `map_batch`: every document check's per-row columns and findings; a row's output depends on that
  row alone, so any batching gives the same rows.
- `reduce_stats`: the checks' corpus-wide summaries (robust length-ratio and cosine distributions,
  duplicate groups) streamed over the map outputs; memory a few tens of bytes per row at most.
- `score_batch`: the findings that need those summaries, then one explained risk per row, the same
  noisy-OR of flag weights as the question audit (audit/risk.py `combine`), its severity bands and
  `flagged` threshold.

Input batch: a `pyarrow.Table` with `INPUT_COLUMNS` (titles "" when absent). source_text / target_text
hold each whole document, title included (the reader's `document_text`: title, a space, text); the
checks read them, and spans are offsets into them, side = the language code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bbsard_audit.audit.findings import Finding, spans_json
from bbsard_audit.audit.risk import RiskConfig, combine, default_data
from bbsard_audit.base.languages import LanguagePair

from .checks import all_checks
from .checks.base import DocCheck, Docs, Result, check_options, decode_findings, encode_findings

INPUT_COLUMNS = ("id", "source_title", "source_text", "target_title", "target_text")
EXCERPT = 300
"""Characters of each side shown in source_excerpt / target_excerpt, around the first span."""
BEFORE = 100
"""... of which at most this many before the span."""

CHECKS: tuple[DocCheck, ...] = tuple(all_checks())

_BASE_MAP = [("id", pa.string()), ("source_chars", pa.int64()), ("target_chars", pa.int64()),
             ("source_excerpt", pa.string()), ("target_excerpt", pa.string()), ("_findings", pa.string())]
MAP_SCHEMA = pa.schema(_BASE_MAP + [(name, kind) for c in CHECKS for name, kind in c.columns.items()])
"""map_batch's columns: id first; a leading `_` marks a column for the later phases only."""
SIGNAL_COLUMNS: tuple[str, ...] = tuple(
    name for c in CHECKS for name in (*c.columns, *c.scored) if not name.startswith("_"))
OUTPUT_SCHEMA = pa.schema(
    [("id", pa.string()), ("risk", pa.float64()), ("severity", pa.string()), ("flagged", pa.bool_()),
     ("flags", pa.string()), ("reasons", pa.string()), ("spans", pa.string()), ("source_chars", pa.int64()),
     ("target_chars", pa.int64()), ("source_excerpt", pa.string()), ("target_excerpt", pa.string())]
    + [(name, kind) for c in CHECKS for name, kind in (*c.columns.items(), *c.scored.items())
       if not name.startswith("_")])
"""corpus_audit.parquet's columns (base/contracts/corpus_audit.py reads them back)."""
FLAG_ORDER = {flag: c.order for c in CHECKS for flag in c.flags}


@dataclass(frozen=True)
class CorpusContext:
    """What the phases need besides the rows: the pair (its language packs), the embedder (L2-normalised
    rows; None = `--embedder none`: the embedding checks do not run) and option overrides
    (`<check>.<param>` thresholds, `weights.<flag>`), checked when the context is made."""

    pair: LanguagePair
    embedder: Callable[[list[str]], np.ndarray] | None = None
    embedder_id: str = "none"
    options: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_options(self.options, CHECKS)
        object.__setattr__(self, "options", dict(self.options))  # a plain dict pickles (Ray ships the context)


@dataclass
class CorpusStats:
    """reduce_stats' result: the row count and each check's corpus-wide summary, by check name."""

    rows: int = 0
    checks: dict[str, object] = field(default_factory=dict)

    def summary(self) -> dict:
        """The JSON-able part, for the sidecar (each check's summary that is a plain mapping)."""
        out: dict = {"rows": self.rows}
        for name, value in self.checks.items():
            public = value.public() if hasattr(value, "public") else value
            if isinstance(public, Mapping):  # one level of nesting flattened: {"cos": {"median": m}} -> "cos.median"
                flat = {f"{k}.{k2}" if isinstance(v, Mapping) else k: v2
                        for k, v in public.items() for k2, v2 in (v.items() if isinstance(v, Mapping) else [(k, v)])}
                out[name] = {k: v for k, v in flat.items() if isinstance(v, (int, float, str))}
        return out


def check_status(pair: LanguagePair, embedder: bool) -> tuple[list[str], list[str]]:
    """(checks that run, "check: why not" for those that do not) on this pair, for the sidecar."""
    ran, unavailable = [], []
    for check in CHECKS:
        why = check.unavailable(pair) or (None if embedder or not check.embeds else f"{check.name}: not run (no embedder)")
        if why:
            unavailable.append(why)
        else:
            ran.append(check.name)
    return ran, unavailable


def check_partial(pair: LanguagePair, ran: list[str]) -> list[str]:
    """"check: what it ran without" for the checks that run on this pair without an optional resource."""
    return [why for check in CHECKS if check.name in ran for why in [check.partial(pair)] if why]


def _run(check: DocCheck, n: int, ctx: CorpusContext, phase: Callable[[], Result], kinds: Mapping) -> Result:
    if check.unavailable(ctx.pair) or (check.embeds and ctx.embedder is None):
        return Result.none(n, kinds)
    result = phase()
    if len(result.findings) != n or any(len(v) != n for v in result.columns.values()) \
            or set(result.columns) != set(kinds):
        raise ValueError(f"document check {check.name!r} returned the wrong rows or columns")
    return result


def excerpt(text: str, starts: list[int]) -> str:
    """At most EXCERPT characters of `text`, from BEFORE characters before the first span (else its start)."""
    start = max(0, min(starts) - BEFORE) if starts else 0
    return text[start:start + EXCERPT]


def map_batch(batch: pa.Table, ctx: CorpusContext) -> pa.Table:
    """Per-row signals: one output row per input row, same order, columns MAP_SCHEMA (id first)."""
    missing = [c for c in INPUT_COLUMNS if c not in batch.column_names]
    if missing:
        raise ValueError(f"a corpus batch needs the columns {', '.join(INPUT_COLUMNS)}; missing {', '.join(missing)}")
    if batch.column("id").null_count:
        raise ValueError("a corpus batch has a row without an id (the reader must refuse it)")
    for column in ("source_text", "target_text"):  # a missing text is an empty document (doc_empty says so)
        index = batch.column_names.index(column)
        batch = batch.set_column(index, column, pc.fill_null(batch.column(column).cast(pa.string()), ""))
    docs, n = Docs(batch, ctx.pair), batch.num_rows
    findings: list[list[Finding]] = [[] for _ in range(n)]
    columns: dict[str, object] = {}
    for check in CHECKS:
        result = _run(check, n, ctx, lambda: check.map(docs, ctx), check.columns)
        columns.update(result.columns)
        for row, found in zip(findings, result.findings):
            row.extend(found)
    # excerpts: each side's start, or around its first span (map-phase findings, else the worst
    # aligned sentence pair)
    source_excerpt = pc.utf8_slice_codeunits(docs.arrow("source_text"), 0, EXCERPT).to_numpy(zero_copy_only=False)
    target_excerpt = pc.utf8_slice_codeunits(docs.arrow("target_text"), 0, EXCERPT).to_numpy(zero_copy_only=False)
    extra_spans = columns.get("_align_spans")
    for i in range(n):
        spans = [s for f in findings[i] for s in f.spans] or (
            [s for f in decode_findings(extra_spans[i]) for s in f.spans] if extra_spans is not None else [])
        if spans:
            source_excerpt[i] = excerpt(docs.source[i], [s.start for s in spans if s.side == ctx.pair.source])
            target_excerpt[i] = excerpt(docs.target[i], [s.start for s in spans if s.side == ctx.pair.target])
    base = {"id": batch.column("id").cast(pa.string()), "source_chars": docs.source_chars, "target_chars": docs.target_chars,
            "source_excerpt": source_excerpt, "target_excerpt": target_excerpt,
            "_findings": [encode_findings(row) for row in findings]}
    return pa.table({name: base[name] if name in base else columns[name] for name in MAP_SCHEMA.names},
                    schema=MAP_SCHEMA)


def reduce_stats(mapped: Iterable[pa.Table], ctx: CorpusContext | None = None) -> CorpusStats:
    """Corpus-wide statistics from the map outputs, streaming: each check's accumulator sees every
    table once, in any order. `ctx` (optional, for option overrides) defaults to the shipped params."""
    accumulators = {c.name: a for c in CHECKS if (a := c.accumulator(ctx)) is not None}
    rows = 0
    for table in mapped:
        rows += table.num_rows
        for accumulator in accumulators.values():
            accumulator.add(table)
    return CorpusStats(rows, {name: a.finish() for name, a in accumulators.items()})


@lru_cache(maxsize=8)
def _risk_config(weights: tuple[tuple[str, float], ...]) -> RiskConfig:
    data = default_data()
    return RiskConfig({**data, "weights": {**data["weights"], **dict(weights)}, "signals": {}})


def risk_config(ctx: CorpusContext) -> RiskConfig:
    """The question audit's [risk] rule (flag threshold, severity bands) with the document checks'
    weights, `weights.<flag>` options applied."""
    weights = {flag: float(ctx.options.get(f"weights.{flag}", c.weights[flag])) for c in CHECKS for flag in c.flags}
    return _risk_config(tuple(sorted(weights.items())))


def score_batch(mapped: pa.Table, stats: CorpusStats, ctx: CorpusContext) -> pa.Table:
    """Final rows, columns OUTPUT_SCHEMA, same order as `mapped`."""
    n = mapped.num_rows
    findings = [decode_findings(text) for text in mapped.column("_findings").to_pylist()]
    scored: dict[str, object] = {}
    for check in CHECKS:
        result = _run(check, n, ctx, lambda: check.score(mapped, stats, ctx), check.scored)
        scored.update(result.columns)
        for row, found in zip(findings, result.findings):
            row.extend(found)
    findings = [sorted(row, key=lambda f: FLAG_ORDER.get(f.flag, 1000)) for row in findings]
    risk = combine(findings, pd.DataFrame(index=range(n)), risk_config(ctx))
    out = {"id": mapped.column("id"), "risk": risk["risk"].to_numpy(float), "severity": risk["severity"].tolist(),
           "flagged": risk["flagged"].to_numpy(bool), "flags": risk["flags"].tolist(),
           "reasons": risk["reasons"].tolist(), "spans": [spans_json(row) for row in findings]}
    return pa.table({name: out[name] if name in out else (scored[name] if name in scored else mapped.column(name))
                     for name in OUTPUT_SCHEMA.names}, schema=OUTPUT_SCHEMA)
