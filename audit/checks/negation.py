"""QA check `negation`: one side negated and the other not inverts the question.

'ne … que' (= only) is no negation, lexicalised 'sans-abri' / 'classé sans suite' neither; a lexical
negation ('non officiel', 'niet-begeleid') only counts to tell whether both sides negate something.
The evidence spans are the negators of the side with more negations. The cues and their grammar
are in each language pack (base/languages: `negation` + the pack's `negations` hook).
"""

from __future__ import annotations

from bbsard_audit.base import languages
from bbsard_audit.base.languages import Negations

from ..findings import Finding
from ..termmatch import Tokens
from .base import Check, Side

FLAGS = {
    "negation_mismatch": "One side is negated and the other is not (ne…pas/jamais/aucun/sans/ni vs "
                         "niet/geen/nooit/zonder/noch); 'ne … que' (= only) is not a negation.",
}
SCHEMA = {"needs": "words"}


def count_negations(tokens: Tokens) -> Negations:
    """Clause negations ("ne … pas", "niet", "not", "nicht") and lexical ones ("non officiel",
    "niet-begeleid"), by the grammar hook of the text's language pack."""
    return languages.get(tokens.lang).negations(tokens)


def _spans(side: Side, neg: Negations):
    return side.spans([side.tokens.spans[i] for i in neg.tokens], "negation_mismatch")


class NegationCheck(Check):
    name = "negation"
    order = 20
    flags = FLAGS
    categories = {"negation_mismatch": "negation"}
    weights = {"negation_mismatch": 0.7}
    columns = ("qa_neg_{source}", "qa_neg_{target}")
    context = columns
    data = "negation"

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        s, t = count_negations(source.tokens), count_negations(target.tokens)
        s_any, t_any = s.clause + s.lexical, t.clause + t.lexical
        out = []
        if ((s.clause > 0) != (t.clause > 0) and (s_any > 0) != (t_any > 0)) or (s.clause != t.clause and s_any != t_any):
            spans = _spans(source, s) if s.clause > t.clause else _spans(target, t)
            out.append(Finding("negation_mismatch", f"{source.code} has {s.clause} negation(s), "
                                                    f"{target.code} has {t.clause}", spans))
        return out, (s.clause, t.clause)
