"""QA check `regions`: a Belgian region or city named on one side only (Wallonie, Bruxelles, Flandre,
Belgique) moves the question to another legislation. Word lists: audit/data/regions.yaml."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Sequence

import pandas as pd

from ..findings import Finding
from ..termmatch import tokenize
from .base import Check, Concepts, concept_diff, frame, word_lists

FLAGS = {
    "region_mismatch": "A Belgian region or city (Wallonie, Bruxelles, Flandre, Belgique) is named on one side "
                       "but not on the other.",
}
SCHEMA = {"concepts": "concepts", "selftest_names": "words"}
COLUMNS = ["qa_regions_differ"]


@cache
def regions() -> Concepts:
    return Concepts(word_lists("regions", SCHEMA)["concepts"])


def selftest_names() -> tuple[str, ...]:
    """Dutch region names the self-test swaps for one another."""
    return word_lists("regions", SCHEMA)["selftest_names"]


class RegionsCheck(Check):
    name = "regions"
    flags = FLAGS
    data = "regions"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        concepts = regions()
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            fr_t, nl_t = tokenize(fr_text, "fr"), tokenize(nl_text, "nl")
            fr_m, nl_m = concepts.find(fr_t), concepts.find(nl_t)
            fr_c, nl_c = Counter(m.key for m in fr_m), Counter(m.key for m in nl_m)
            findings.append(concept_diff(fr_c, nl_c, concepts.table, "region_mismatch", fr_t, nl_t, fr_m, nl_m))
            rows.append((sum((fr_c[x] > 0) != (nl_c[x] > 0) for x in set(fr_c) | set(nl_c)),))
        return findings, frame(rows, COLUMNS)
