"""Document check `doc_numbers_changed`: a number, amount, date or duration of the source is not in
the translation (or one was added), article references aside (`doc_references_changed` has them).

Screen (vectorised, `Docs.digits_equal`): the multisets of digit runs ('1.500', '1 500' and
'1,500' all give 1 and 500) are equal on both sides for nearly every pair. The others are compared as
the question check `numbers` compares them (its `number_mentions`: digits and the packs' number
words, '3 mois' = 'drie maanden'; 1 is never compared, 'un'/'een' is an article), leaving out the
mentions inside an article reference; the spans are the values one side has and the other lacks.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from bbsard_audit import languages
from bbsard_audit.audit.checks.numbers import number_mentions
from bbsard_audit.audit.termmatch import tokenize

from .base import DocCheck, Docs, Result, spans_in
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
        src, tgt = docs.pair.source, docs.pair.target
        n = len(docs)
        differ = np.zeros(n)
        findings = [[] for _ in range(n)]
        for i in np.flatnonzero(~docs.digits_equal):  # the same digits: number words alone rarely change
            source, target = docs.source[i], docs.target[i]
            a, b = values_outside_references(source, src), values_outside_references(target, tgt)
            va, vb = Counter(v for *_, v in a), Counter(v for *_, v in b)
            missing = Counter({v: c for v, c in (va - vb).items() if v != 1})
            added = Counter({v: c for v, c in (vb - va).items() if v != 1})
            if not missing and not added:
                continue
            differ[i] = sum(missing.values()) + sum(added.values())
            parts = [f"{side.upper()} has {', '.join(_fmt(v) for v in sorted(c))} not in {other.upper()}"
                     for side, other, c in ((src, tgt, missing), (tgt, src, added)) if c]
            spans = (spans_in(src, source, [(s, e) for s, e, v in a if v in missing], self.name)
                     + spans_in(tgt, target, [(s, e) for s, e, v in b if v in added], self.name))
            findings[i] = [self.finding("numbers differ: " + "; ".join(parts), spans)]
        return Result({"doc_numbers_differ": differ}, findings)
