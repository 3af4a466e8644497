"""English grammar hooks: clause negation (with "n't") and compound number words ('twenty-one')."""

from __future__ import annotations

from typing import Any, Mapping

from . import Negations, continues, fold, hyphenated, units_and_tens


def _contracted(tokens, i: int) -> bool:
    """Token i is the 't' of "n't" ("don't" -> don + t, "can't", "won't", "isn't")."""
    s = tokens.surfaces
    if s[i] != "t" or i == 0 or not s[i - 1].endswith("n"):
        return False
    start = tokens.spans[i][0]
    return tokens.text[start - 1:start] == "'" and tokens.spans[i - 1][1] == start - 1


def negations(tokens, data: Mapping[str, Any]) -> Negations:
    """'not', "n't", 'no', 'never', 'nothing', 'without', 'neither ... nor' (once) negate; 'nothing
    but' (= only) does not; 'not only ... but also' (`additive`: it adds, it negates nothing) and
    'non-' / 'no-' before a hyphen ('non-resident') are lexical, like French 'non seulement'."""
    negators = set(data["negators"])
    not_negation = {tuple(p) for p in data["not_negation"]}
    additive = {tuple(p) for p in data.get("additive", ())}
    s = tokens.surfaces
    clause: list[int] = []
    lexical = 0
    for i, w in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if w in ("non", "no") and hyphenated(tokens, i):
            lexical += 1
        elif _contracted(tokens, i):
            clause.append(i)
        elif (w, nxt) in additive:
            lexical += 1
        elif w in negators and (w, nxt) not in not_negation:
            if not (w == "nor" and continues(s, i, negators)):
                clause.append(i)
    return Negations(len(clause), lexical, tuple(clause))


def number_words(data: Mapping[str, Any]) -> dict[str, float]:
    """Units, tens, 'twenty-one' (hyphen read as a space), and the ordinals and fractions of `extra`."""
    units = data["units"]
    words = units_and_tens(units, data["tens"], lambda ten, unit: f"{ten}-{units[unit]}")
    words.update(data["extra"])
    return {fold(k).replace("-", " "): v for k, v in words.items()}
