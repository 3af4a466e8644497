"""The benchmark's scoring recipe as vectorised numpy over a (queries x depth) hit matrix.

One `Hits` matrix per (run, qrels, query list) is built once; every metric is then a few array
operations on it, which is what makes 20 systems x 1,108 queries x k=500 take milliseconds.
Formulas, tie-break and edge cases: docs/metrics.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bbsard_audit.errors import InputError

from .runs import Qrels, Run

KINDS = ("recall", "map", "mrr", "ndcg")
DEFAULT_METRICS = ("recall@100", "recall@200", "recall@500", "map@100", "mrr@100", "ndcg@10")
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
    """Binary hit matrix of `run` over `qids` (default: every judged query), `depth` columns."""
    qids = tuple(qrels.qids if qids is None else qids)
    depth = depth or max(run.depth(), 1)
    hits = np.zeros((len(qids), depth), dtype=bool)
    n_rel = np.empty(len(qids), dtype=np.int64)
    missing = np.zeros(len(qids), dtype=bool)
    ranking = run.ranking
    for i, qid in enumerate(qids):
        rel = qrels.relevant[qid]
        n_rel[i] = len(rel)
        docs = ranking.get(qid)
        if docs is None:
            missing[i] = True
            continue
        top = docs[:depth]
        hits[i, :len(top)] = np.fromiter(map(rel.__contains__, top), dtype=bool, count=len(top))
    return Hits(qids, hits, n_rel, missing)


def recall_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """|relevant in top k| / |relevant|."""
    return hits[:, :k].sum(axis=1) / n_rel


def ap_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """sum over relevant ranks r <= k of precision@r, divided by |relevant| (not min(k, |relevant|))."""
    top = hits[:, :k]
    precision = np.cumsum(top, axis=1) / np.arange(1, top.shape[1] + 1)
    return (precision * top).sum(axis=1) / n_rel


def rr_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """1 / rank of the first relevant document within the top k, else 0."""
    top = hits[:, :k]
    first = top.argmax(axis=1)
    return np.where(top.any(axis=1), 1.0 / (first + 1), 0.0)


def ndcg_at_k(hits: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """Binary gains, 1/log2(rank+1) discount; ideal DCG puts min(k, |relevant|) hits on top."""
    top = hits[:, :k]
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = top @ discount[:top.shape[1]]
    ideal = np.cumsum(discount)[np.minimum(n_rel, k) - 1]
    return dcg / ideal


_FUNCTIONS = {"recall": recall_at_k, "map": ap_at_k, "mrr": rr_at_k, "ndcg": ndcg_at_k}


@dataclass(frozen=True)
class Metric:
    """One cut-off metric, e.g. `Metric.parse("map@100")`; per-query values are macro-averaged."""

    kind: str
    k: int

    @classmethod
    def parse(cls, name: str) -> "Metric":
        match = re.fullmatch(r"\s*(recall|map|mrr|ndcg)@(\d+)\s*", name.lower())
        if not match or int(match.group(2)) < 1:
            raise InputError(f"unknown metric {name!r}; use recall@k, map@k, mrr@k or ndcg@k (k >= 1)")
        return cls(match.group(1), int(match.group(2)))

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.k}"

    @property
    def signature(self) -> str:
        return f"{self.name}|{SIGNATURE}"

    def per_query(self, hits: Hits) -> np.ndarray:
        return _FUNCTIONS[self.kind](hits.hits, hits.n_rel, self.k)

    def __call__(self, hits: Hits) -> float:
        return float(self.per_query(hits).mean()) if len(hits.qids) else float("nan")


def parse_metrics(names: Sequence[str]) -> tuple[Metric, ...]:
    """Metric names (a comma list is split) in first-seen order, each once."""
    metrics = [Metric.parse(n) for name in names for n in name.split(",") if n.strip()]
    return tuple(dict.fromkeys(metrics))


def per_query_matrix(hits: Hits, metrics: Sequence[Metric]) -> np.ndarray:
    """(len(metrics) x n_queries) per-query values, the input of bootstrap and tests."""
    return np.stack([m.per_query(hits) for m in metrics]) if metrics else np.zeros((0, len(hits.qids)))
