"""QA check `numbers`: a number, amount, date, age, duration or percentage must survive translation.

Digits, number words and ordinals are compared as values ('3 mois' = 'drie maanden', '1.500' =
'1 500', '4 ans et demi' = 'vierenhalf jaar'); the evidence spans are the mentions of each value
that one side has and the other lacks. Word lists: audit/data/numbers.yaml.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Callable, Mapping, Sequence

import pandas as pd

from ..findings import Finding, spans_at
from ..termmatch import Tokens, fold, tokenize
from .base import Check, frame, word_lists

FLAGS = {
    "number_mismatch": "A number, amount, date, age, duration or percentage differs between French and Dutch "
                       "(digits, number words and ordinals are compared as values: '3 mois' = 'drie maanden').",
}
SCHEMA = {"fr_units": "words", "fr_tens": "numbers", "fr_extra": "numbers", "nl_units": "words",
          "nl_tens": "numbers", "nl_extra": "numbers", "articles_fr": "words", "articles_nl": "words",
          "nl_compound_suffixes": "words"}
COLUMNS = ["qa_numbers_fr", "qa_numbers_nl", "qa_numbers_differ"]

_DIGITS = re.compile(r"(?<![\w.,])(\d{1,3}(?:[ .\u00a0\u202f]\d{3})+|\d+)(?:,(\d+))?(?:\s?(?:er|ère|e|ème|de|ste|ste)\b)?")


@dataclass(frozen=True)
class _Words:
    values: dict[str, dict[str, float]]
    """language -> folded number phrase (words joined by spaces) -> value"""
    first_words: dict[str, set[str]]
    articles: dict[str, set[str]]
    nl_compound: re.Pattern


def _units_and_tens(units: Sequence[str], tens: Mapping[str, float],
                    compound: Callable[[str, int], str]) -> dict[str, float]:
    """Units, tens, and each ten with a unit 1-9 written as `compound(ten word, unit)`."""
    words: dict[str, float] = {w: i for i, w in enumerate(units)}
    for word, ten in tens.items():
        words[word] = ten
        for unit in range(1, 10):
            words[compound(word, unit)] = ten + unit
    return words


def _french_number_words(data: dict) -> dict[str, float]:
    units = data["fr_units"]
    # "vingt-et-un", "vingt-deux"
    words = _units_and_tens(units, data["fr_tens"],
                            lambda ten, unit: f"{ten}{'-et-' if unit == 1 else '-'}{units[unit]}")
    for base, word in ((60, "soixante"), (80, "quatre-vingt")):
        for unit in range(0 if base == 80 else 10, 20):
            sep = "-et-" if unit in (1, 11) and base == 60 else "-"
            words[f"{word}{sep}{units[unit]}" if unit else "quatre-vingts"] = base + unit
    words.update(data["fr_extra"])
    return {fold(k).replace("-", " "): v for k, v in words.items()}


def _dutch_number_words(data: dict) -> dict[str, float]:
    units = data["nl_units"]
    # "drieëntwintig", "vierentwintig"
    words = _units_and_tens(units, data["nl_tens"],
                            lambda ten, unit: f"{units[unit]}{'ën' if units[unit].endswith('e') else 'en'}{ten}")
    words.update(data["nl_extra"])
    return {fold(k): v for k, v in words.items()}


@cache
def number_words() -> _Words:
    data = word_lists("numbers", SCHEMA)
    values = {"fr": _french_number_words(data), "nl": _dutch_number_words(data)}
    compound = re.compile("(" + "|".join(sorted(map(re.escape, values["nl"]), key=len, reverse=True)) + ")"
                          "(" + "|".join(data["nl_compound_suffixes"]) + ")")
    return _Words(values, {lang: {phrase.split()[0] for phrase in words} for lang, words in values.items()},
                  {"fr": set(data["articles_fr"]), "nl": set(data["articles_nl"])}, compound)


def number_mentions(tokens: Tokens) -> list[tuple[int, int, float]]:
    """(start, end, value) of every digit, number word and ordinal, in text order ('1.500' = '1 500'
    = '1500'; 'drie' = 3; '4 ans et demi' = 'vierenhalf jaar' = 4.5, one mention)."""
    lang, nw = tokens.lang, number_words()
    found: list[tuple[int, int, float]] = []
    for m in _DIGITS.finditer(tokens.text):
        integer = re.sub(r"\D", "", m.group(1))
        end = m.end(2) if m.group(2) else m.end(1)  # the number, without an ordinal suffix
        found.append((m.start(), end, float(integer + ("." + m.group(2) if m.group(2) else ""))))
    words, first_words, articles = nw.values[lang], nw.first_words[lang], nw.articles[lang]
    surfaces, spans = tokens.surfaces, tokens.spans
    i = 0
    while i < len(surfaces):
        w, start = surfaces[i], spans[i][0]
        i += 1
        if w in articles or (w == "acht" and surfaces[i - 2:i - 1] == ("in",)):  # "in acht nemen" = observe
            continue
        if w in first_words:
            # longest French multi-word number first ("dix huit", "quatre vingt dix")
            for span in (3, 2, 1):
                phrase = " ".join(surfaces[i - 1:i - 1 + span])
                if phrase in words and len(surfaces[i - 1:i - 1 + span]) == span:
                    found.append((start, spans[i - 2 + span][1], words[phrase]))
                    i += span - 1
                    break
        elif lang == "nl" and (m := nw.nl_compound.fullmatch(w)):
            found.append((start, spans[i - 1][1], words[m.group(1)]))  # "negenjarige" = 9, "tweedelijns" = 2
        elif lang == "nl" and w.endswith("enhalf") and w[:-6] in words:
            found.append((start, spans[i - 1][1], words[w[:-6]] + 0.5))  # "vierenhalf" = 4.5
    found.sort(key=lambda f: (f[0], f[2]))
    mentions: list[tuple[int, int, float]] = []
    values: Counter = Counter()
    for k, (start, end, value) in enumerate(found):
        # "4 ans et demi": the half belongs to the number before it
        before = found[k - 1][2] if k else None
        if value == 0.5 and k and re.search(r"\bet\s*$|\ben\s*$", tokens.text[:start]) and values[before]:
            values[before] -= 1
            values[before + 0.5] += 1
            j = max(j for j, m in enumerate(mentions) if m[2] == before)
            mentions[j] = (mentions[j][0], end, before + 0.5)
            continue
        values[value] += 1
        mentions.append((start, end, value))
    return sorted(mentions)


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
    data = "numbers"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            fr_m, nl_m = number_mentions(tokenize(fr_text, "fr")), number_mentions(tokenize(nl_text, "nl"))
            fr_v, nl_v = Counter(v for *_, v in fr_m), Counter(v for *_, v in nl_m)
            # "un"/"een" vs "1": 1 is never compared
            missing = Counter({v: c for v, c in (fr_v - nl_v).items() if v != 1})
            added = Counter({v: c for v, c in (nl_v - fr_v).items() if v != 1})
            out = []
            if missing or added:
                parts = []
                if missing:
                    parts.append("FR has " + ", ".join(_fmt(v) for v in sorted(missing)) + " not in NL")
                if added:
                    parts.append("NL has " + ", ".join(_fmt(v) for v in sorted(added)) + " not in FR")
                spans = (spans_at("fr", fr_text, [(a, b) for a, b, v in fr_m if v in missing], "number_mismatch")
                         + spans_at("nl", nl_text, [(a, b) for a, b, v in nl_m if v in added], "number_mismatch"))
                out.append(Finding("number_mismatch", "; ".join(parts), spans))
            findings.append(out)
            rows.append((sum(fr_v.values()), sum(nl_v.values()), sum(missing.values()) + sum(added.values())))
        return findings, frame(rows, COLUMNS)
