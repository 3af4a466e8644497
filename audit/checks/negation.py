"""QA check `negation`: one side negated and the other not inverts the question.

'ne … que' (= only) is no negation, lexicalised 'sans-abri' / 'classé sans suite' neither; a lexical
negation ('non officiel', 'niet-begeleid') only counts to tell whether both sides negate something.
The evidence spans are the negators of the side with more negations. Word lists:
audit/data/negation.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Sequence

import pandas as pd

from ..findings import Finding, spans_at
from ..termmatch import Tokens, tokenize
from .base import Check, frame, word_lists

FLAGS = {
    "negation_mismatch": "One side is negated and the other is not (ne…pas/jamais/aucun/sans/ni vs "
                         "niet/geen/nooit/zonder/noch); 'ne … que' (= only) is not a negation.",
}
SCHEMA = {"negators_fr": "words", "ne_complements": "words", "not_negation_fr": "pairs", "negators_nl": "words"}
COLUMNS = ["qa_neg_fr", "qa_neg_nl"]
COORDINATION_WINDOW = 6
"""A 'ni' / 'noch' this close after another negator continues it ('sans préavis ni indemnité')."""


@cache
def _lists() -> dict:
    return word_lists("negation", SCHEMA)


@dataclass(frozen=True)
class Negations:
    clause: int
    lexical: int
    tokens: tuple[int, ...]
    """Token positions of the clause negators."""


def count_negations(tokens: Tokens) -> Negations:
    """Clause negations ("ne … pas", "niet") and lexical ones ("non officiel", "niet-begeleid")."""
    lists = _lists()
    negators_fr, negators_nl, ne_complements = lists["negators_fr"], lists["negators_nl"], lists["ne_complements"]
    not_negation = set(lists["not_negation_fr"])
    s, text = tokens.surfaces, tokens.text

    def hyphenated(i: int) -> bool:
        end = tokens.spans[i][1]
        return text[end:end + 1] == "-"

    def standalone(i: int) -> bool:  # "… ou non ?" vs "bail non officiel"
        return i + 1 == len(s) or not re.match(r"\s*\w", text[tokens.spans[i][1]:])

    def continues(i: int, negators) -> bool:  # "sans préavis ni indemnité", "noch ik noch de moeder"
        return any(w in negators for w in s[max(0, i - COORDINATION_WINDOW):i])

    clause: list[int] = []
    lexical = 0
    if tokens.lang == "nl":
        for i, w in enumerate(s):
            if w in negators_nl:
                if w == "niet" and hyphenated(i):
                    lexical += 1
                elif not (w == "noch" and continues(i, negators_nl)):
                    clause.append(i)
        return Negations(len(clause), lexical, tuple(clause))
    ne_open = False
    for i, w in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if w in ("ne", "n"):
            ne_open = True
        elif w == "pas" and (s[i - 1:i] == ("faux",) or s[i + 1:i + 3] == ("a", "pas") or s[max(i - 2, 0):i] == ("pas", "a")):
            continue  # "faux pas", "pas à pas"
        elif w in negators_fr and (w, nxt) not in not_negation:
            if not (w == "ni" and continues(i, negators_fr)):
                clause.append(i)
            ne_open = False
        elif w in ne_complements and ne_open:
            clause.append(i)
            ne_open = False
        elif w == "non":
            if standalone(i):
                clause.append(i)
            else:
                lexical += 1
        elif w == "que" and ne_open:  # "ne … que" = only: a restriction, not a negation
            ne_open = False
    return Negations(len(clause), lexical, tuple(clause))


def _spans(side, tokens: Tokens, neg: Negations):
    return spans_at(side, tokens.original, [tokens.spans[i] for i in neg.tokens], "negation_mismatch")


class NegationCheck(Check):
    name = "negation"
    order = 20
    flags = FLAGS
    categories = {"negation_mismatch": "negation"}
    weights = {"negation_mismatch": 0.7}
    data = "negation"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            fr_t, nl_t = tokenize(fr_text, "fr"), tokenize(nl_text, "nl")
            f, n = count_negations(fr_t), count_negations(nl_t)
            fr_any, nl_any = f.clause + f.lexical, n.clause + n.lexical
            out = []
            if ((f.clause > 0) != (n.clause > 0) and (fr_any > 0) != (nl_any > 0)) or (f.clause != n.clause and fr_any != nl_any):
                spans = _spans("fr", fr_t, f) if f.clause > n.clause else _spans("nl", nl_t, n)
                out.append(Finding("negation_mismatch", f"FR has {f.clause} negation(s), NL has {n.clause}", spans))
            findings.append(out)
            rows.append((f.clause, n.clause))
        return findings, frame(rows, COLUMNS)
