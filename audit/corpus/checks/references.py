"""Document check `doc_references_changed`: the article references of the source ('art. 12',
'article 1er', 'articles 3, 4 et 5bis', '§ 2') are not those of the translation ('artikel 12',
'artikelen 3, 4 en 5bis', '§ 2').

A reference is a pack word that introduces an article number (`references.words`: article, art.,
artikel, Artikel, section) followed by its number, with a Latin insertion suffix
(`references.suffixes`: bis, ter, ...) and sub-numbers ('12/1'); a list continues it ('3, 4 et
5'). '§ N' is a reference in every language. The two sides' references are compared as multisets
of normalised numbers ('1er' = '1', '5 bis' = '5bis'); the spans are the references one side has
and the other lacks. Only pairs whose digit runs differ are parsed (`Docs.digits_equal`): a changed,
lost or added reference number changes them; a number moved between a reference and the text does
not, and is missed.
"""

from __future__ import annotations

import re
from functools import cache

import pyarrow as pa

from bbsard_audit.base import languages

from .base import DocCheck, Docs, Result

_JOINERS = r"(?:,|;|et|ou|en|of|and|or|und|oder|tot|à|to|bis zu|-)"


@cache
def _patterns(lang: str) -> tuple[re.Pattern, re.Pattern]:
    section = languages.get(lang).section("references")
    words = "|".join(sorted(map(re.escape, section["words"]), key=len, reverse=True))
    suffixes = "|".join(sorted(map(re.escape, section["suffixes"]), key=len, reverse=True))
    number = rf"(\d+(?:/\d+)*)(?:(?:er|re|ère|e|ste|st|nd|rd|th)\b)?(?:[\s-]?({suffixes})\b)?"
    head = re.compile(rf"(?i)(?<!\w)(?:(?:{words})\.?|§)\s*{number}")
    more = re.compile(rf"(?i)\s*{_JOINERS}\s*{number}")
    return head, more


def references(text: str, lang: str) -> list[tuple[int, int, str]]:
    """(start, end, normalised number) of every article reference, a list's numbers one by one."""
    head, more = _patterns(lang)
    out = []
    for m in head.finditer(text):
        prefix = "§" if m.group().lstrip().startswith("§") else ""
        out.append((m.start(), m.end(), prefix + m.group(1) + (m.group(2) or "").lower()))
        pos = m.end()
        while (n := more.match(text, pos)) is not None:
            out.append((n.start(1), n.end(), prefix + n.group(1) + (n.group(2) or "").lower()))
            pos = n.end()
    return out


class ReferencesCheck(DocCheck):
    name = "doc_references_changed"
    order = 60
    flags = {"doc_references_changed": "An article reference ('art. 12', 'article 1er', '§ 2') of the source is "
                                       "missing or different in the translation, or one was added "
                                       "(words from the packs' `references`)."}
    categories = {"doc_references_changed": "entity"}
    weights = {"doc_references_changed": 0.7}
    needs = ("references",)
    columns = {"doc_references_differ": pa.float64()}

    def map(self, docs: Docs, ctx) -> Result:
        return self.compare_values(docs, references, "article references", "doc_references_differ")
