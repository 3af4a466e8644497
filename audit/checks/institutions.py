"""QA check `institutions`: a public body (CPAS/OCMW, ONEM/RVA, SPF/FOD, …) named on one side only.
Word lists: audit/data/institutions.yaml."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Sequence

import pandas as pd

from ..findings import Finding
from ..termmatch import Match, Tokens
from .base import Check, Concepts, one_sided, word_lists

FLAGS = {
    "institution_mismatch": "A public body (CPAS/OCMW, ONEM/RVA, SPF/FOD, Office des étrangers/DVZ, "
                            "INAMI/RIZIV, mutuelle/ziekenfonds, commune/gemeente, …) is named on one side only.",
}
SCHEMA = {"concepts": "concepts", "determiners_before_commune": "words", "selftest_swaps": "pairs"}
COLUMNS = ["qa_institutions_differ"]


@cache
def institutions() -> Concepts:
    return Concepts(word_lists("institutions", SCHEMA)["concepts"])


def selftest_swaps() -> list[tuple[str, str]]:
    """Dutch (name, replacement) pairs the self-test injects."""
    return word_lists("institutions", SCHEMA)["selftest_swaps"]


def _is_adjective(tokens: Tokens, i: int, determiners: frozenset[str]) -> bool:
    """'commune' without a determiner before it is the adjective "commun(e)" ("la vie commune")."""
    s = tokens.surfaces
    return s[i] == "commune" and (i == 0 or s[i - 1] not in determiners)


def find_institutions(tokens: Tokens) -> tuple[Counter, list[Match]]:
    """Counts and matches of each institution, the adjective 'commune' left out."""
    counts, matches = institutions().find(tokens)
    if tokens.lang == "fr" and counts.get("commune"):
        determiners = frozenset(word_lists("institutions", SCHEMA)["determiners_before_commune"])
        adjective = sum(1 for i in range(len(tokens)) if _is_adjective(tokens, i, determiners))
        counts["commune"] -= adjective
        if counts["commune"] <= 0:
            del counts["commune"]
        matches = [m for m in matches if not (m.key == "commune" and _is_adjective(tokens, m.start, determiners))]
    return counts, matches


class InstitutionsCheck(Check):
    name = "institutions"
    order = 40
    flags = FLAGS
    categories = {"institution_mismatch": "entity"}
    weights = {"institution_mismatch": 0.6}
    data = "institutions"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        return one_sided(fr, nl, find_institutions, institutions().table, "institution_mismatch", COLUMNS)
