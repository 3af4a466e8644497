"""QA check `numbers`: a number, amount, date, age, duration or percentage must survive translation.

Digits, number words and ordinals are compared as values ('3 mois' = 'drie maanden', '1.500' =
'1 500', '4 ans et demi' = 'vierenhalf jaar'); the evidence spans are the mentions of each value
that one side has and the other lacks. Number words: each language pack's `numbers`. A digit string
written the same on both sides is one value whatever the decimal marks ('[1,1]' copied into German);
when one side measures in imperial units and the other in metric ones ('15-foot boat' = 'fünf
Meter'), the numbers attached to a unit are a conversion and are not compared.
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
VULGAR = {"½": 0.5, "¼": 0.25, "¾": 0.75}


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
        value = float(integer + ("." + m.group(2) if m.group(2) else ""))
        fraction = VULGAR.get(tokens.text[end:end + 1])
        found.append((m.start(), end + (fraction is not None), value + (fraction or 0)))  # '3½'
    words, first_words, articles = pack.number_words, _first_words(tokens.lang), set(data["articles"])
    not_numbers = {tuple(p) for p in data.get("not_numbers", ())}
    unit_senses, function_words = set(data.get("unit_senses", ())), set(pack.data.get("function_words", ()))
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
                    if span == 1 and w in unit_senses and not _before_word(tokens, i - 1, function_words):
                        break  # "for a second", "100 times a second": the time unit, not the ordinal
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


def _before_word(tokens: Tokens, i: int, function_words: set[str]) -> bool:
    """Token i is followed, within its clause, by a content word ('a second test' = an ordinal)."""
    if i + 1 >= len(tokens.surfaces) or tokens.surfaces[i + 1] in function_words:
        return False
    return not re.search(r"[^\w\s-]", tokens.text[tokens.spans[i][1]:tokens.spans[i + 1][0]])


@cache
def _units(lang: str) -> tuple[frozenset[str], frozenset[str]]:
    """A language's (imperial, metric) unit words (its pack's `numbers`), folded."""
    data = languages.get(lang).section("numbers")
    return tuple(frozenset(languages.fold(w) for w in data.get(key, ())) for key in ("imperial_units", "metric_units"))


def _unit_after(tokens: Tokens, end: int, units: frozenset[str]) -> bool:
    """A unit word right after character `end` ('120 feet', '15-foot', '30cm', '44 degrees')."""
    m = re.match(r"[\s\u00a0-]*([^\W\d_]+)", tokens.text[end:])
    return bool(m) and languages.fold(m.group(1)) in units


def converted(source: Tokens, target: Tokens) -> bool:
    """One side measures in imperial units, the other in metric ones: a translator's conversion."""
    (s_imp, s_met), (t_imp, t_met) = _units(source.lang), _units(target.lang)
    s_words, t_words = ({w.lstrip("0123456789") for w in t.surfaces} for t in (source, target))  # '30cm'
    return bool((s_words & s_imp and t_words & t_met) or (s_words & s_met and t_words & t_imp))


def comparable(tokens: Tokens, mentions, conversion: bool) -> list[tuple[int, int, float]]:
    """The mentions to compare: without the measures of a converted pair."""
    if not conversion:
        return list(mentions)
    imperial, metric = _units(tokens.lang)
    return [m for m in mentions if not _unit_after(tokens, m[1], imperial | metric)]


def copied_digits(a: str, a_m: list, b: str, b_m: list) -> tuple[list, list]:
    """Drop the digits written identically on both sides with a separator ('[1,1]', '1.5') that the
    two languages' decimal marks read as different values: one copied string, one value."""
    drop_a, drop_b = set(), set()
    for text, mentions, other, other_m, drop, drop_other in ((a, a_m, b, b_m, drop_a, drop_b), (b, b_m, a, a_m, drop_b, drop_a)):
        for k, (start, end, value) in enumerate(mentions):
            surface = text[start:end]
            if not re.search(r"\d[.,]\d", surface):
                continue
            for occ in re.finditer(rf"(?<![\d.,]){re.escape(surface)}(?![\d]|[.,]\d)", other):
                inside = [j for j, m in enumerate(other_m) if occ.start() <= m[0] and m[1] <= occ.end()]
                if inside and any(other_m[j][2] != value for j in inside) or not inside:
                    drop.add(k)
                    drop_other.update(inside)
    return ([m for k, m in enumerate(a_m) if k not in drop_a], [m for k, m in enumerate(b_m) if k not in drop_b])


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
        conversion = converted(source.tokens, target.tokens)
        src_m = comparable(source.tokens, number_mentions(source.tokens), conversion)
        tgt_m = comparable(target.tokens, number_mentions(target.tokens), conversion)
        src_m, tgt_m = copied_digits(source.text, src_m, target.text, tgt_m)
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
