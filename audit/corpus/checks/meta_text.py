"""Document check `doc_meta_text`: what an LLM or MT system said about its work, left in the
translation: prefaces ("Here is the translation", "Voici la traduction", "Hier is de vertaling",
"Hier ist die Übersetzung"), translator's notes, refusals ("I cannot translate", "As an AI").

The phrases are each language pack's `meta_text` (`anywhere`; `at_start` = only at the start of the
text or of a line), of the pair's two languages and English (LLMs answer in English whatever they
translate into); the target pack must have the section. Screened over the batch in Arrow (RE2),
located with Python's `re` on the rows it hits (the same pattern; its word boundaries are stricter).
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bbsard_audit.base import languages

from .base import DocCheck, Docs, Result, quoted, spans_in


def _phrase(text: str) -> str:
    out = re.sub("['’]", "['’]", re.escape(text.strip().lower()).replace(r"\ ", r"\s+"))
    if text[:1].isascii() and text[:1].isalnum():
        out = r"\b" + out
    if text[-1:].isascii() and text[-1:].isalnum():
        out += r"\b"
    return out


@cache
def pattern(source: str, target: str) -> str:
    """One case-insensitive pattern of every meta-text phrase the pair's packs (and English's) give."""
    anywhere, at_start = [], []
    for code in dict.fromkeys((target, source, "en")):
        if code in languages.codes() and languages.get(code).has("meta_text"):
            section = languages.get(code).section("meta_text")
            anywhere += [_phrase(p) for p in section.get("anywhere", ())]
            at_start += [_phrase(p) for p in section.get("at_start", ())]
    parts = ["(?:" + "|".join(dict.fromkeys(anywhere)) + ")"] if anywhere else []
    if at_start:
        parts.append(r"(?m:^[ \t]*(?:" + "|".join(dict.fromkeys(at_start)) + "))")
    return "(?i)" + "|".join(parts)


class MetaTextCheck(DocCheck):
    name = "doc_meta_text"
    order = 20
    flags = {"doc_meta_text": "LLM/MT meta-text left in the translation: a preface ('Here is the translation', "
                              "'Hier is de vertaling'), a translator's note or a refusal ('I cannot translate', "
                              "'As an AI'); phrases from the language packs' `meta_text`."}
    categories = {"doc_meta_text": "addition"}
    weights = {"doc_meta_text": 0.8}
    needs = ("meta_text",)
    columns = {"doc_meta_text_hits": pa.float64()}

    def unavailable(self, pair) -> str | None:
        """Only the target needs phrases: meta-text is what a translator adds."""
        if pair.target not in languages.codes() or not languages.get(pair.target).has("meta_text"):
            return f"{self.name}: not available for {pair.target} (its language pack has no `meta_text`)"
        return None

    def map(self, docs: Docs, ctx) -> Result:
        regex = pattern(docs.pair.source, docs.pair.target)
        hit = np.asarray(pc.match_substring_regex(docs.arrow("target_text"), regex).fill_null(False))
        counts = np.zeros(len(docs))
        findings = [[] for _ in range(len(docs))]
        compiled = re.compile(regex)
        code = docs.pair.target
        for i in np.flatnonzero(hit):
            text = docs.target[i]
            found = list(compiled.finditer(text))
            counts[i] = len(found)
            if found:
                shown = ", ".join(dict.fromkeys(quoted(m.group().strip()) for m in found[:3]))
                findings[i] = [self.finding(f"{code.upper()} holds meta-text: {shown}",
                                            spans_in(code, text, [(m.start() + len(m.group()) - len(m.group().lstrip()),
                                                                   m.end()) for m in found], self.name))]
        return Result({"doc_meta_text_hits": counts}, findings)
