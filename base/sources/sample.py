"""`sample`: the small bBSARD-shaped dataset embedded in the package (its README.md), for offline runs."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .bsard_csv import load_dir
from .model import SAMPLE, Dataset
from .registry import source


def sample_dir() -> Path:
    return Path(str(resources.files("bbsard_audit.base") / "sample"))


@source(SAMPLE, "the embedded sample (a CSV folder inside the package)", matches=lambda src: src == SAMPLE, order=0)
def load(src: str, with_corpus: bool) -> Dataset:
    return load_dir(sample_dir(), with_corpus, label=SAMPLE)
