"""Optional signal: does one retrieval system find the gold articles as well from the Dutch question
as from the French one? A Dutch question that lost its legal term may rank the gold far lower.

Runs are TREC (`qid Q0 docid rank score tag`) or JSON `{qid: [docid, ...]}` files. The signal is a
column only, with no flag: on bBSARD the FR/NL rank gap mostly reflects the system's own language
gap, not translation errors (measured in benchmarks/bench_audit.py), so it must not raise risk alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.runs import Run

from .findings import Finding
from .signals import Batch, ScorerSignal, SignalResult

FLAGS: dict[str, str] = {}


def load_run(path: str | Path) -> dict[str, list[str]]:
    """{qid: [docid in rank order]} from a TREC or JSON run, read by eval's reader so the audit and
    the evaluation agree on ordering, tie-breaks, duplicates and errors."""
    return {qid: list(docs) for qid, docs in Run.read(path).ranking.items()}


def gold_rank(run: dict[str, list[str]], qid: int, gold: Sequence[int]) -> float:
    """1-based rank of the best-ranked gold article; depth + 1 when none is retrieved, NaN if no run."""
    docs = run.get(str(qid))
    if docs is None:
        return float("nan")
    wanted = {str(a) for a in gold}
    return float(next((i for i, d in enumerate(docs, start=1) if d in wanted), len(docs) + 1))


class RetrievalConsistency:
    """The columns of `RetrievalConsistencySignal` (rc_log2_rank_ratio > 0: the target question ranks
    gold lower)."""

    def __init__(self, source_run: str | Path, target_run: str | Path) -> None:
        """One system's run on the source questions and its run on their translations."""
        self.paths = (str(source_run), str(target_run))
        self.source, self.target = load_run(source_run), load_run(target_run)

    def check(self, ids: Sequence[int], gold: Sequence[Sequence[int]]) -> tuple[list[list[Finding]], pd.DataFrame]:
        source = np.array([gold_rank(self.source, q, g) for q, g in zip(ids, gold)])
        target = np.array([gold_rank(self.target, q, g) for q, g in zip(ids, gold)])
        columns = pd.DataFrame(dict(zip(RetrievalConsistencySignal.columns, (source, target, np.log2(target / source)))))
        return [[] for _ in ids], columns


class RetrievalConsistencySignal(ScorerSignal[RetrievalConsistency]):
    """Retrieval consistency as an audit signal (columns only); needs the batch's ids and gold."""

    name = "retrieval_consistency"
    flags = FLAGS
    columns = ("rc_rank_{source}", "rc_rank_{target}", "rc_log2_rank_ratio")
    context = ("rc_rank_{source}", "rc_rank_{target}")
    reads = ("ids", "gold")

    def score(self, batch: Batch) -> SignalResult:
        if batch.ids is None or batch.gold is None:
            raise ValueError("retrieval consistency needs the batch's ids and gold articles")
        return SignalResult(*self.scorer.check(batch.ids, batch.gold))
