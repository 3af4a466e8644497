"""Document check `doc_numbers_changed`: a number, amount, date or duration of the source is not in
the translation (or one was added), article references aside (`doc_references_changed` has them).

Screen (vectorised, `Docs.digits_equal`): the multisets of digit runs ('1.500', '1 500' and
'1,500' all give 1 and 500) are equal on both sides for nearly every pair. The others are compared as
the question check `numbers` compares them (its `number_mentions`: digits and the packs' number
words, '3 mois' = 'drie maanden'; 1 is never compared, 'un'/'een' is an article), leaving out the
mentions inside an article reference; the spans are the values one side has and the other lacks.
"""

from __future__ import annotations

import pyarrow as pa

from bbsard_audit.base import languages
from bbsard_audit.audit.checks.numbers import number_mentions
from bbsard_audit.audit.termmatch import tokenize

from .base import DocCheck, Docs, Result
from .references import references

def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def values_outside_references(text: str, lang: str) -> list[tuple[int, int, float]]:
    """The number mentions of `text` (question check `numbers`) outside its article references."""
    refs = references(text, lang) if languages.get(lang).has("references") else []
    return [(s, e, v) for s, e, v in number_mentions(tokenize(text, lang))
            if not any(a <= s < b for a, b, _ in refs)]


class NumbersCheck(DocCheck):
    name = "doc_numbers_changed"
    order = 50
    flags = {"doc_numbers_changed": "A number, amount, date or duration of the source differs in the translation "
                                    "(digits and the packs' number words compared as values; article references "
                                    "are doc_references_changed's)."}
    categories = {"doc_numbers_changed": "number"}
    weights = {"doc_numbers_changed": 0.6}
    needs = ("numbers",)
    columns = {"doc_numbers_differ": pa.float64()}

    def map(self, docs: Docs, ctx) -> Result:
        # "un"/"een" vs "1": 1 is never compared (as in the question check)
        return self.compare_values(docs, values_outside_references, "numbers", "doc_numbers_differ",
                                   skip=lambda v: v == 1, show=_fmt)
