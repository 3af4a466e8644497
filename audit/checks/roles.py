"""QA check `roles`: a party role swapped for its counterpart (tenant/landlord, employer/employee, …)
keeps every legal term right but inverts the question. Roles: each language pack's `roles`; their
counterparts: audit/data/roles.yaml."""

from __future__ import annotations

from functools import cache

from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError

from ..findings import Finding
from .base import DATA_DIR, Check, Concepts, Pair, Side, pair_concepts, word_lists

FLAGS = {
    "role_mismatch": "A party role was swapped for its counterpart (tenant/landlord, employer/employee, "
                     "creditor/debtor, buyer/seller, …): the Dutch has more of one role and fewer of the other.",
}
SCHEMA = {"needs": "words", "optional": "words", "counterparts": "pairs", "selftest_swaps": "pairs"}


@cache
def roles(pair: Pair) -> tuple[Concepts, list[tuple[str, str]]]:
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
    columns = ("qa_roles_swapped",)
    data = "roles"

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        concepts, counterparts = roles((source.lang, target.lang))
        (src_c, src_m), (tgt_c, tgt_m) = concepts.find(source.tokens), concepts.find(target.tokens)
        out = []
        for a, b in counterparts:
            for x, y in ((a, b), (b, a)):
                if src_c[x] > tgt_c[x] and tgt_c[y] > src_c[y]:
                    spans = (source.match_spans([m for m in src_m if m.key == x], "role_mismatch")
                             + target.match_spans([m for m in tgt_m if m.key == y], "role_mismatch"))
                    out.append(Finding("role_mismatch", f"{source.code} '{concepts.name(x, 0)}' ({src_c[x]}×) "
                                                        f"became {target.code} '{concepts.name(y, 1)}' "
                                                        f"({tgt_c[y]}× vs {src_c[y]}× in {source.code})", spans))
        return out, (len(out),)
