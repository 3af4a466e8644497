"""QA check `regions`: a Belgian region or city named on one side only (Wallonie, Bruxelles, Flandre,
Belgique, and communities, provinces, cities) moves the question to another legislation. Names: each
language pack's `regions`."""

from __future__ import annotations

from .base import ConceptCheck, Concepts, Pair, pair_concepts, word_lists

FLAGS = {
    "region_mismatch": "A Belgian region or city (Wallonie, Bruxelles, Flandre, Belgique) is named on one side "
                       "but not on the other.",
}
SCHEMA = {"needs": "words", "optional": "words", "selftest_names": "words"}


def regions(pair: Pair) -> Concepts:
    """The regions both packs of the pair name."""
    return pair_concepts("regions", pair)


def selftest_names() -> tuple[str, ...]:
    """Dutch region names the self-test swaps for one another."""
    return word_lists("regions", SCHEMA)["selftest_names"]


class RegionsCheck(ConceptCheck):
    name = "regions"
    order = 30
    flags = FLAGS
    categories = {"region_mismatch": "entity"}
    weights = {"region_mismatch": 0.7}
    columns = ("qa_regions_differ",)
    data = section = "regions"
