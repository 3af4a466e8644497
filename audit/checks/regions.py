"""QA check `regions`: a Belgian region or city named on one side only (Wallonie, Bruxelles, Flandre,
Belgique, and communities, provinces, cities) moves the question to another legislation. Names: each
language pack's `regions`."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..findings import Finding
from .base import DEFAULT_PAIR, Check, Concepts, Pair, one_sided, pair_concepts, word_lists

FLAGS = {
    "region_mismatch": "A Belgian region or city (Wallonie, Bruxelles, Flandre, Belgique) is named on one side "
                       "but not on the other.",
}
SCHEMA = {"needs": "words", "optional": "words", "selftest_names": "words"}
COLUMNS = ["qa_regions_differ"]


def regions(pair: Pair = DEFAULT_PAIR) -> Concepts:
    """The regions both packs of the pair name."""
    return pair_concepts("regions", pair)


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

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        concepts = regions(pair)
        return one_sided(fr, nl, concepts.find, concepts, "region_mismatch", COLUMNS)
