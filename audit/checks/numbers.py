"""QA check `numbers`: a number, amount, date, age, duration or percentage must survive translation.

Digits, number words and ordinals are compared as values ('3 mois' = 'drie maanden', '1.500' =
'1 500', '4 ans et demi' = 'vierenhalf jaar'); the evidence spans are the mentions of each value
that one side has and the other lacks. Number words: each language pack's `numbers`.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from bbsard_audit.base import languages

from ..findings import Finding
from ..termmatch import Tokens
from .base import Check, Side

FLAGS = {
    "number_mismatch": "A number, amount, date, age, duration or percentage differs between French and Dutch "
                       "(digits, number words and ordinals are compared as values: '3 mois' = 'drie maanden').",
}
SCHEMA = {"needs": "words"}


@cache
def _digits(lang: str) -> re.Pattern:
    """Digits with the language's decimal mark (',' unless its pack says '.': English '1,500.5')
    and thousands separators (space, the other mark), and an ordinal suffix ('3e', '1st')."""
    decimal = languages.get(lang).section("numbers").get("decimal_mark", ",")
    thousands = "," if decimal == "." else "."
    return re.compile(rf"(?<![\w.,])(\d{{1,3}}(?:[ {re.escape(thousands)}\u00a0\u202f]\d{{3}})+|\d+)"
                      rf"(?:{re.escape(decimal)}(\d+))?(?:\s?(?:er|ère|e|ème|de|ste|st|nd|rd|th)\b)?")


@cache
def _joiners(lang: str) -> re.Pattern:
    """'4 ans et demi', 'vier en een half', 'four and a half': the half belongs to the number before it."""
    words = languages.get(lang).section("numbers")["half_joiners"]
    return re.compile("|".join(rf"\b{re.escape(w)}\s*$" for w in words))


def number_mentions(tokens: Tokens) -> list[tuple[int, int, float]]:
    """(start, end, value) of every digit, number word and ordinal, in text order ('1.500' = '1 500'
    = '1500'; 'drie' = 3; '4 ans et demi' = 'vierenhalf jaar' = 4.5, one mention)."""
    pack = languages.get(tokens.lang)
    data = pack.section("numbers")
    found: list[tuple[int, int, float]] = []
    for m in _digits(tokens.lang).finditer(tokens.text):
        integer = re.sub(r"\D", "", m.group(1))
        end = m.end(2) if m.group(2) else m.end(1)  # the number, without an ordinal suffix
        found.append((m.start(), end, float(integer + ("." + m.group(2) if m.group(2) else ""))))
    words, first_words, articles = pack.number_words, _first_words(tokens.lang), set(data["articles"])
    not_numbers = {tuple(p) for p in data.get("not_numbers", ())}
    compound = pack.compound_number if "compound_suffixes" in data or "half_suffix" in data else None
    surfaces, spans = tokens.surfaces, tokens.spans
    i = 0
    while i < len(surfaces):
        w, start = surfaces[i], spans[i][0]
        i += 1
        if w in articles or (i > 1 and (surfaces[i - 2], w) in not_numbers):  # "in acht nemen" = observe
            continue
        if w in first_words:
            # longest multi-word number first ("dix huit", "quatre vingt dix", "twenty one")
            for span in (3, 2, 1):
                phrase = " ".join(surfaces[i - 1:i - 1 + span])
                if phrase in words and len(surfaces[i - 1:i - 1 + span]) == span:
                    found.append((start, spans[i - 2 + span][1], words[phrase]))
                    i += span - 1
                    break
        elif compound is not None and (value := compound(w)) is not None:
            found.append((start, spans[i - 1][1], value))  # "negenjarige" = 9, "vierenhalf" = 4.5
    found.sort(key=lambda f: (f[0], f[2]))
    mentions: list[tuple[int, int, float]] = []
    values: Counter = Counter()
    joiners = _joiners(tokens.lang)
    for k, (start, end, value) in enumerate(found):
        # "4 ans et demi": the half belongs to the number before it
        before = found[k - 1][2] if k else None
        if value == 0.5 and k and joiners.search(tokens.text[:start]) and values[before]:
            values[before] -= 1
            values[before + 0.5] += 1
            j = max(j for j, m in enumerate(mentions) if m[2] == before)
            mentions[j] = (mentions[j][0], end, before + 0.5)
            continue
        values[value] += 1
        mentions.append((start, end, value))
    return sorted(mentions)


@cache
def _first_words(lang: str) -> frozenset[str]:
    return frozenset(phrase.split()[0] for phrase in languages.get(lang).number_words)


def number_values(tokens: Tokens) -> Counter:
    """How many times each value is mentioned."""
    return Counter(value for _, _, value in number_mentions(tokens))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class NumbersCheck(Check):
    name = "numbers"
    order = 10
    flags = FLAGS
    categories = {"number_mismatch": "number"}
    weights = {"number_mismatch": 0.7}
    columns = ("qa_numbers_{source}", "qa_numbers_{target}", "qa_numbers_differ")
    context = ("qa_numbers_{source}", "qa_numbers_{target}")
    data = "numbers"

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        src_m, tgt_m = number_mentions(source.tokens), number_mentions(target.tokens)
        src_v, tgt_v = Counter(v for *_, v in src_m), Counter(v for *_, v in tgt_m)
        # "un"/"een" vs "1": 1 is never compared
        missing = Counter({v: c for v, c in (src_v - tgt_v).items() if v != 1})
        added = Counter({v: c for v, c in (tgt_v - src_v).items() if v != 1})
        out = []
        if missing or added:
            parts = []
            if missing:
                parts.append(f"{source.code} has " + ", ".join(_fmt(v) for v in sorted(missing)) + f" not in {target.code}")
            if added:
                parts.append(f"{target.code} has " + ", ".join(_fmt(v) for v in sorted(added)) + f" not in {source.code}")
            spans = (source.spans([(a, b) for a, b, v in src_m if v in missing], "number_mismatch")
                     + target.spans([(a, b) for a, b, v in tgt_m if v in added], "number_mismatch"))
            out.append(Finding("number_mismatch", "; ".join(parts), spans))
        return out, (sum(src_v.values()), sum(tgt_v.values()), sum(missing.values()) + sum(added.values()))
