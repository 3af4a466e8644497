"""The QA checks, one signal per module (work in progress: still one signal over qa_checks)."""

from __future__ import annotations

from pathlib import Path

from .. import qa_checks, termmatch
from ..signal_cache import fingerprint
from ..signals import Batch, Signal, SignalResult


class _QaSignal:
    name = "qa_checks"
    flags = qa_checks.FLAGS
    reads = ("fr", "nl")

    def signature(self) -> str:
        return fingerprint([Path(qa_checks.__file__), Path(termmatch.__file__)], ("simplemma", "py3langid"))

    def score(self, batch: Batch) -> SignalResult:
        findings, columns = qa_checks.check_pairs(batch.pairs)
        return SignalResult(findings, columns.assign(qa_sentence_gap=columns["qa_sentences_fr"] - columns["qa_sentences_nl"]))


def all_checks() -> list[Signal]:
    return [_QaSignal()]
