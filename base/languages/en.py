"""English grammar hooks: clause negation (with "n't") and compound number words ('twenty-one')."""

from __future__ import annotations

import re
from typing import Any, Mapping

from . import Negations, cue_negations, fold, units_and_tens


def _contracted(tokens, i: int) -> bool:
    """Token i is the 't' of "n't" ("don't" -> don + t, "can't", "won't", "isn't")."""
    s = tokens.surfaces
    if s[i] != "t" or i == 0 or not s[i - 1].endswith("n"):
        return False
    start = tokens.spans[i][0]
    return tokens.text[start - 1:start] == "'" and tokens.spans[i - 1][1] == start - 1


def _number_sign(tokens, i: int) -> bool:
    """'No. 5', 'no 12': the abbreviation of 'number' before a digit, not the negator."""
    return tokens.surfaces[i] == "no" and re.match(r"\.?\s*\d", tokens.text[tokens.spans[i][1]:]) is not None


def _stop_doing(tokens, data: Mapping[str, Any]) -> int:
    """'stop paying', 'ceased working': an aspectual verb before an -ing form negates lexically (the
    Dutch says 'niet meer betalen', the French 'ne plus payer')."""
    verbs, s = set(data.get("before_ing", ())), tokens.surfaces
    return sum(1 for i, w in enumerate(s[:-1]) if w in verbs and s[i + 1].endswith("ing") and len(s[i + 1]) > 4)


def negations(tokens, data: Mapping[str, Any]) -> Negations:
    """'not', "n't", 'no', 'never', 'nothing', 'without', 'neither ... nor' (once) negate; 'nothing
    but' (= only) does not; 'not only ... but also' (`additive`: it adds, it negates nothing) and
    'non-' / 'no-' before a hyphen ('non-resident') are lexical, like French 'non seulement'; so are the
    pack's `implicit` words ('undocumented', 'withhold') and 'stop' + -ing ('stop paying'); 'No. 5'
    is a number sign."""
    found = cue_negations(tokens, data, lexical_before_hyphen=("non", "no"), coordinator="nor",
                          contracted=_contracted, no_negation=_number_sign)
    return Negations(found.clause, found.lexical + _stop_doing(tokens, data), found.tokens)


def number_words(data: Mapping[str, Any]) -> dict[str, float]:
    """Units, tens, 'twenty-one' (hyphen read as a space), and the ordinals and fractions of `extra`."""
    units = data["units"]
    words = units_and_tens(units, data["tens"], lambda ten, unit: f"{ten}-{units[unit]}")
    words.update(data["extra"])
    return {fold(k).replace("-", " "): v for k, v in words.items()}
