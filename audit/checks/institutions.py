"""QA check `institutions`: a public body (CPAS/OCMW, ONEM/RVA, SPF/FOD, …) named on one side only.
Names: each language pack's `institutions`."""

from __future__ import annotations

from collections import Counter

from bbsard_audit.base import languages

from ..termmatch import Match, Tokens
from .base import ConceptCheck, Concepts, Pair, pair_concepts, word_lists

FLAGS = {
    "institution_mismatch": "A public body (CPAS/OCMW, ONEM/RVA, SPF/FOD, Office des étrangers/DVZ, "
                            "INAMI/RIZIV, mutuelle/ziekenfonds, commune/gemeente, …) is named on one side only.",
}
SCHEMA = {"needs": "words", "optional": "words", "selftest_swaps": "pairs"}


def institutions(pair: Pair) -> Concepts:
    """The institutions both packs of the pair name."""
    return pair_concepts("institutions", pair)


def selftest_swaps() -> list[tuple[str, str]]:
    """Dutch (name, replacement) pairs the self-test injects."""
    return word_lists("institutions", SCHEMA)["selftest_swaps"]


def _is_adjective(tokens: Tokens, i: int, determiners: frozenset[str]) -> bool:
    """'commune' without a determiner before it is the adjective "commun(e)" ("la vie commune")."""
    s = tokens.surfaces
    return s[i] == "commune" and (i == 0 or s[i - 1] not in determiners)


def find_institutions(tokens: Tokens, pair: Pair) -> tuple[Counter, list[Match]]:
    """Counts and matches of each institution, the French adjective 'commune' left out."""
    counts, matches = institutions(pair).find(tokens)
    pack = languages.get(tokens.lang)
    if pack.has("determiners_before_commune") and counts.get("commune"):
        determiners = pack.folded("determiners_before_commune")
        adjective = sum(1 for i in range(len(tokens)) if _is_adjective(tokens, i, determiners))
        counts["commune"] -= adjective
        if counts["commune"] <= 0:
            del counts["commune"]
        matches = [m for m in matches if not (m.key == "commune" and _is_adjective(tokens, m.start, determiners))]
    return counts, matches


class InstitutionsCheck(ConceptCheck):
    name = "institutions"
    order = 40
    flags = FLAGS
    categories = {"institution_mismatch": "entity"}
    weights = {"institution_mismatch": 0.6}
    columns = ("qa_institutions_differ",)
    data = section = "institutions"

    def find(self, tokens: Tokens, pair: Pair) -> tuple[Counter, list[Match]]:
        return find_institutions(tokens, pair)
