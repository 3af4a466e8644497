"""French grammar hooks: the 'ne ... pas' negation state machine and compound number words."""

from __future__ import annotations

from typing import Any, Mapping

from . import Negations, continues, fold, standalone, units_and_tens


def negations(tokens, data: Mapping[str, Any]) -> Negations:
    """'ne ... pas/jamais/rien/aucun', 'sans', 'ni ... ni' negate; 'ne ... que' (= only) and the
    expletive 'ne' ('avant qu'il ne parte') do not; 'non' negates standing alone ('ou non ?') and is
    lexical before a word ('non officiel')."""
    negators, ne_complements = set(data["negators"]), set(data["ne_complements"])
    not_negation = {tuple(p) for p in data["not_negation"]}
    s = tokens.surfaces
    clause: list[int] = []
    lexical = 0
    ne_open = False
    for i, w in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if w in ("ne", "n"):
            ne_open = True
        elif w == "pas" and (s[i - 1:i] == ("faux",) or s[i + 1:i + 3] == ("a", "pas") or s[max(i - 2, 0):i] == ("pas", "a")):
            continue  # "faux pas", "pas à pas"
        elif w in negators and (w, nxt) not in not_negation:
            if not (w == "ni" and continues(s, i, negators)):
                clause.append(i)
            ne_open = False
        elif w in ne_complements and ne_open:
            clause.append(i)
            ne_open = False
        elif w == "non":
            if standalone(tokens, i):
                clause.append(i)
            else:
                lexical += 1
        elif w == "que" and ne_open:  # "ne … que" = only: a restriction, not a negation
            ne_open = False
    return Negations(len(clause), lexical, tuple(clause))


def number_words(data: Mapping[str, Any]) -> dict[str, float]:
    """'vingt-et-un', 'vingt-deux', 'soixante-dix', 'quatre-vingt-dix' (hyphens read as spaces)."""
    units = data["units"]
    words = units_and_tens(units, data["tens"],
                           lambda ten, unit: f"{ten}{'-et-' if unit == 1 else '-'}{units[unit]}")
    for base, word in ((60, "soixante"), (80, "quatre-vingt")):
        for unit in range(0 if base == 80 else 10, 20):
            sep = "-et-" if unit in (1, 11) and base == 60 else "-"
            words[f"{word}{sep}{units[unit]}" if unit else "quatre-vingts"] = base + unit
    words.update(data["extra"])
    return {fold(k).replace("-", " "): v for k, v in words.items()}
