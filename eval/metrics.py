"""The benchmark's scoring recipe as vectorised numpy over a (queries x depth) hit matrix.

One `Hits` matrix per (run, qrels, query list) is built once; every metric is then a few array
operations on it, which is what makes 20 systems x 1,108 queries x k=500 take milliseconds.
Formulas, tie-break and edge cases: docs/metrics.md.

Each metric kind is one per-query function registered by `@metric(name, order)` (its name, the
pattern that parses it, its place in reports), so adding a metric is adding one function here or in
any module imported before parsing; `kinds()`, `Metric.parse` and the report's metric order follow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from bbsard_audit.base.errors import InputError

from .runs import Qrels, Run

SIGNATURE = ("bbsard-eval:v1|rel=grade>0,binary|gold=dedup|ties=score-desc,rank-asc,docid-asc|"
             "dup-docs=best-rank|missing-query=0|avg=macro")


@dataclass(frozen=True)
class Hits:
    """hits[i, j]: the document at rank j+1 for query qids[i] is relevant."""

    qids: tuple[str, ...]
    hits: np.ndarray
    n_rel: np.ndarray
    missing: np.ndarray
    """True where the run has no ranking for the query (it scores 0 everywhere)."""

    @property
    def n_missing(self) -> int:
        return int(self.missing.sum())


def hit_matrix(run: Run, qrels: Qrels, qids: Sequence[str] | None = None, depth: int | None = None) -> Hits:
    """Binary hit matrix of `run` over `qids` (default: every judged query), `depth` columns.

    Python touches each query and each relevant document once; the run's documents are only
    handled as the integer codes of its `RunIndex`.
    """
    qids = tuple(qrels.qids if qids is None else qids)
    depth = depth or max(run.depth(), 1)
    n = len(qids)
    index = run.index
    spans = [index.spans.get(q) for q in qids]
    missing = np.fromiter((s is None for s in spans), dtype=bool, count=n)
    starts = np.fromiter((s[0] if s else 0 for s in spans), dtype=np.int64, count=n)
    lengths = np.minimum(np.fromiter((s[1] if s else 0 for s in spans), dtype=np.int64, count=n), depth)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    codes = index.codes[np.repeat(starts, lengths) + cols]

    relevant = [qrels.relevant[q] for q in qids]
    n_rel = np.fromiter(map(len, relevant), dtype=np.int64, count=n)
    lookup = index.vocab.get
    rel_codes = np.fromiter((lookup(d, -1) for rel in relevant for d in rel), dtype=np.int64, count=int(n_rel.sum()))
    rel_rows = np.repeat(np.arange(n), n_rel)
    known = rel_codes >= 0
    hits = np.zeros((n, depth), dtype=bool)
    if known.any():
        width = len(index.vocab)
        relevant_somewhere = np.zeros(width, dtype=bool)
        relevant_somewhere[rel_codes[known]] = True
        candidates = np.flatnonzero(relevant_somewhere[codes])  # usually a small share of the run
        keys = rows[candidates] * width + codes[candidates]
        rel_keys = np.sort(rel_rows[known] * width + rel_codes[known])
        found = np.minimum(np.searchsorted(rel_keys, keys), len(rel_keys) - 1)
        is_hit = candidates[rel_keys[found] == keys]
        hits[rows[is_hit], cols[is_hit]] = True
    return Hits(qids, hits, n_rel, missing)


PerQuery = Callable[[np.ndarray, np.ndarray, int], np.ndarray]
"""(hits, n_rel, k) -> one value per query."""


@dataclass(frozen=True)
class MetricKind:
    """A registered metric kind: a (lowercased, stripped) name matching `pattern` (group 1 = k) parses
    to it; reports list kinds by `order`."""

    name: str
    order: int
    function: PerQuery
    pattern: str


REGISTRY: dict[str, MetricKind] = {}


def metric(name: str, order: int, pattern: str | None = None) -> Callable[[PerQuery], PerQuery]:
    """Register a per-query metric function under `name` (lowercase); `order`: its rank in reports;
    `pattern`: the names it parses from (default `name@k`; group 1 must be k)."""
    def register(function: PerQuery) -> PerQuery:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ValueError(f"metric name {name!r} must be lowercase letters, digits and _")
        clash = [k.name for k in REGISTRY.values() if k.order == order and k.name != name]
        if clash:
            raise ValueError(f"metric {name!r}: order {order} is taken by {clash[0]!r}")
        REGISTRY[name] = MetricKind(name, order, function, pattern or rf"{re.escape(name)}@(\d+)")
        return function
    return register


def kinds() -> tuple[str, ...]:
    """Registered metric kinds in report order."""
    return tuple(k.name for k in sorted(REGISTRY.values(), key=lambda k: k.order))


@metric("recall", order=10)
def recall_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """|relevant in top k| / |relevant|."""
    return hits[:, :k].sum(axis=1) / n_rel


@metric("map", order=20)
def ap_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """sum over relevant ranks r <= k of precision@r, divided by |relevant| (not min(k, |relevant|))."""
    top = hits[:, :k]
    precision = np.cumsum(top, axis=1) / np.arange(1, top.shape[1] + 1)
    return (precision * top).sum(axis=1) / n_rel


@metric("mrr", order=30)
def rr_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """1 / rank of the first relevant document within the top k, else 0."""
    top = hits[:, :k]
    first = top.argmax(axis=1)
    return np.where(top.any(axis=1), 1.0 / (first + 1), 0.0)


@metric("ndcg", order=40)
def ndcg_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """Binary gains, 1/log2(rank+1) discount; ideal DCG puts min(k, |relevant|) hits on top."""
    top = hits[:, :k]
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = top @ discount[:top.shape[1]]
    ideal = np.cumsum(discount)[np.minimum(n_rel, k) - 1]
    return dcg / ideal


@dataclass(frozen=True)
class Metric:
    """One cut-off metric, e.g. `Metric.parse("map@100")`; per-query values are macro-averaged."""

    kind: str
    k: int

    @classmethod
    def parse(cls, name: str) -> "Metric":
        text = name.strip().lower()
        for kind in REGISTRY.values():
            match = re.fullmatch(kind.pattern, text)
            if match and int(match.group(1)) >= 1:
                return cls(kind.name, int(match.group(1)))
        names = [f"{k}@k" for k in kinds()]
        raise InputError(f"unknown metric {name!r}; use {', '.join(names[:-1])} or {names[-1]} (k >= 1)")

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.k}"

    @property
    def signature(self) -> str:
        return f"{self.name}|{SIGNATURE}"

    def per_query(self, hits: Hits) -> np.ndarray:
        return REGISTRY[self.kind].function(hits.hits, hits.n_rel, self.k)

    def __call__(self, hits: Hits) -> float:
        return float(self.per_query(hits).mean()) if len(hits.qids) else float("nan")


def metric_sort_key(name: str) -> tuple:
    """Report order of a metric name: registered kind order, then k (unknown kinds last)."""
    base, _, k = str(name).partition("@")
    kind = REGISTRY.get(base)
    return kind.order if kind else float("inf"), base, int(k) if k.isdigit() else 0


def parse_metrics(names: Sequence[str]) -> tuple[Metric, ...]:
    """Metric names (a comma list is split) in first-seen order, each once."""
    metrics = [Metric.parse(n) for name in names for n in name.split(",") if n.strip()]
    return tuple(dict.fromkeys(metrics))


def per_query_matrix(hits: Hits, metrics: Sequence[Metric]) -> np.ndarray:
    """(len(metrics) x n_queries) per-query values, the input of bootstrap and tests."""
    return np.stack([m.per_query(hits) for m in metrics]) if metrics else np.zeros((0, len(hits.qids)))
