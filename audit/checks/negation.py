"""QA check `negation`: one side negated and the other not inverts the question.

'ne … que' (= only) is no negation, lexicalised 'sans-abri' / 'classé sans suite' neither; a lexical
negation ('non officiel', 'niet-begeleid') only counts to tell whether both sides negate something.
The evidence spans are the negators of the side with more negations. The cues and their grammar
are in each language pack (base/languages: `negation` + the pack's `negations` hook).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.languages import Negations

from ..findings import Finding, spans_at
from ..termmatch import Tokens, tokenize
from .base import DEFAULT_PAIR, Check, Pair, frame

FLAGS = {
    "negation_mismatch": "One side is negated and the other is not (ne…pas/jamais/aucun/sans/ni vs "
                         "niet/geen/nooit/zonder/noch); 'ne … que' (= only) is not a negation.",
}
SCHEMA = {"needs": "words"}
COLUMNS = ["qa_neg_fr", "qa_neg_nl"]


def count_negations(tokens: Tokens) -> Negations:
    """Clause negations ("ne … pas", "niet", "not", "nicht") and lexical ones ("non officiel",
    "niet-begeleid"), by the grammar hook of the text's language pack."""
    return languages.get(tokens.lang).negations(tokens)


def _spans(side, tokens: Tokens, neg: Negations):
    return spans_at(side, tokens.original, [tokens.spans[i] for i in neg.tokens], "negation_mismatch")


class NegationCheck(Check):
    name = "negation"
    order = 20
    flags = FLAGS
    categories = {"negation_mismatch": "negation"}
    weights = {"negation_mismatch": 0.7}
    data = "negation"

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        src, tgt = pair
        for fr_text, nl_text in zip(fr, nl):
            fr_t, nl_t = tokenize(fr_text, src), tokenize(nl_text, tgt)
            f, n = count_negations(fr_t), count_negations(nl_t)
            fr_any, nl_any = f.clause + f.lexical, n.clause + n.lexical
            out = []
            if ((f.clause > 0) != (n.clause > 0) and (fr_any > 0) != (nl_any > 0)) or (f.clause != n.clause and fr_any != nl_any):
                spans = _spans("fr", fr_t, f) if f.clause > n.clause else _spans("nl", nl_t, n)
                out.append(Finding("negation_mismatch", f"{src.upper()} has {f.clause} negation(s), {tgt.upper()} has {n.clause}", spans))
            findings.append(out)
            rows.append((f.clause, n.clause))
        return findings, frame(rows, COLUMNS)
