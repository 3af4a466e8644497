"""QA check `roles`: a party role swapped for its counterpart (tenant/landlord, employer/employee, …)
keeps every legal term right but inverts the question. Roles: each language pack's `roles`; their
counterparts: audit/data/roles.yaml."""

from __future__ import annotations

from functools import cache
from typing import Sequence

import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError

from ..findings import Finding
from ..termmatch import tokenize
from .base import DATA_DIR, DEFAULT_PAIR, Check, Concepts, Pair, frame, match_spans, pair_concepts, word_lists

FLAGS = {
    "role_mismatch": "A party role was swapped for its counterpart (tenant/landlord, employer/employee, "
                     "creditor/debtor, buyer/seller, …): the Dutch has more of one role and fewer of the other.",
}
SCHEMA = {"needs": "words", "optional": "words", "counterparts": "pairs", "selftest_swaps": "pairs"}
COLUMNS = ["qa_roles_swapped"]


@cache
def roles(pair: Pair = DEFAULT_PAIR) -> tuple[Concepts, list[tuple[str, str]]]:
    """The roles both packs of the pair name, and the counterpart pairs among them."""
    counterparts = word_lists("roles", SCHEMA)["counterparts"]
    for code in pair:
        named = set(languages.get(code).section("roles"))
        unknown = {r for p in counterparts for r in p} - named
        if unknown:
            raise InputError(f"`counterparts` names role(s) {', '.join(sorted(unknown))} that the {code} "
                             "language pack lacks", file=str(DATA_DIR / "roles.yaml"))
    return pair_concepts("roles", pair), counterparts


def selftest_swaps() -> list[tuple[str, str]]:
    """Dutch role-word pairs the self-test swaps."""
    return word_lists("roles", SCHEMA)["selftest_swaps"]


class RolesCheck(Check):
    name = "roles"
    order = 50
    flags = FLAGS
    categories = {"role_mismatch": "role"}
    weights = {"role_mismatch": 0.75}
    data = "roles"

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        concepts, counterparts = roles(pair)
        src, tgt = pair
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            fr_t, nl_t = tokenize(fr_text, src), tokenize(nl_text, tgt)
            (fr_c, fr_m), (nl_c, nl_m) = concepts.find(fr_t), concepts.find(nl_t)
            out, swapped = [], 0
            for a, b in counterparts:
                for x, y in ((a, b), (b, a)):
                    if fr_c[x] > nl_c[x] and nl_c[y] > fr_c[y]:
                        swapped += 1
                        spans = (match_spans("fr", fr_t, [m for m in fr_m if m.key == x], "role_mismatch")
                                 + match_spans("nl", nl_t, [m for m in nl_m if m.key == y], "role_mismatch"))
                        out.append(Finding("role_mismatch", f"{src.upper()} '{concepts.name(x, 0)}' ({fr_c[x]}×) "
                                                            f"became {tgt.upper()} '{concepts.name(y, 1)}' "
                                                            f"({nl_c[y]}× vs {fr_c[y]}× in {src.upper()})", spans))
            findings.append(out)
            rows.append((swapped,))
        return findings, frame(rows, COLUMNS)
