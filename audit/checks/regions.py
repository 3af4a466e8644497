"""QA check `regions`: a Belgian region or city named on one side only (Wallonie, Bruxelles, Flandre,
Belgique) moves the question to another legislation. Word lists: audit/data/regions.yaml."""

from __future__ import annotations

from functools import cache
from typing import Sequence

import pandas as pd

from ..findings import Finding
from .base import Check, Concepts, one_sided, word_lists

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
    order = 30
    flags = FLAGS
    categories = {"region_mismatch": "entity"}
    weights = {"region_mismatch": 0.7}
    data = "regions"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        concepts = regions()
        return one_sided(fr, nl, concepts.find, concepts.table, "region_mismatch", COLUMNS)
