"""`sample`: the small bBSARD-shaped dataset embedded in the package (its README.md), for offline runs."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .bsard_csv import folder_corpus, load_dir
from .corpus import CorpusPair
from .model import SAMPLE, Dataset
from .registry import source

BACKTRANSLATIONS = "backtranslations_nl_fr.jsonl"
"""The sample's shipped back-translations (its Dutch into French): the name the examples copy it under."""


def sample_dir() -> Path:
    return Path(str(resources.files("bbsard_audit.base") / "sample"))


def corpus(src: str, max_doc_chars: int) -> CorpusPair:
    return folder_corpus(sample_dir(), SAMPLE, max_doc_chars)


@source(SAMPLE, "the embedded sample (a CSV folder inside the package)", matches=lambda src: src == SAMPLE, order=0,
        corpus=corpus)
def load(src: str, with_corpus: bool) -> Dataset:
    return load_dir(sample_dir(), with_corpus, label=SAMPLE)
