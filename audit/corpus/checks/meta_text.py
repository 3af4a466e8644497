"""Document check `doc_meta_text`: what an LLM or MT system said about its work, left in the
translation wherever it sits and in any pack language: prefaces ("Here is the Dutch translation:",
"Hier is de vertaling"), translator's notes and remarks at the end, in brackets or between
paragraphs ("[Note: ...]", "(Opmerking van de vertaler: ...)", a paragraph in English after a blank
line), chat phrases ("I hope this helps", "Laat het me weten") and refusals ("I'm sorry, but I can't").

The rules and their cue words are audit/leftovers.py's (each language pack's `meta_text`, every
pack at once: an English note on a Dutch document is the commonest case); a leftover the source
also holds (a quotation) is none. Screened over the batch in Arrow (RE2, one pattern of every
cue), the rules run in Python on the rows it hits; the target pack must have the section.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bbsard_audit.audit.leftovers import detector
from bbsard_audit.base import languages

from .base import DocCheck, Docs, Result, quoted, spans_in


class MetaTextCheck(DocCheck):
    name = "doc_meta_text"
    order = 20
    flags = {"doc_meta_text": "LLM/MT leftovers in the translation, wherever they sit and in any pack language: a "
                              "preface ('Here is the translation'), a translator's note or remark (bracketed, "
                              "trailing, between paragraphs), a chat phrase ('I hope this helps') or a refusal "
                              "('I cannot translate'); not when the source holds it too (audit/leftovers.py)."}
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
        found_in = detector()
        hit = np.asarray(pc.match_substring_regex(docs.arrow("target_text"), found_in.screen).fill_null(False))
        rows = np.flatnonzero(hit)
        on = {side: _families(found_in, docs.arrow(side).take(pa.array(rows, type=pa.int64())))
              for side in ("target_text", "source_text")}
        counts = np.zeros(len(docs))
        findings = [[] for _ in range(len(docs))]
        src, code = docs.pair.source, docs.pair.target
        for k, i in enumerate(rows):
            text = docs.target[i]
            found = found_in.find(text, code, docs.source[i], src, on=on["target_text"][k], source_on=on["source_text"][k])
            counts[i] = len(found)
            if found:
                shown = "; ".join(f"{x.kind} ({x.lang.upper()}) {quoted(text[x.start:x.end])}" for x in found[:3])
                findings[i] = [self.finding(f"{code.upper()} holds LLM leftovers: {shown}",
                                            spans_in(code, text, [(x.start, x.end) for x in found], self.name))]
        return Result({"doc_meta_text_hits": counts}, findings)


def _families(found_in, texts: pa.Array) -> list[frozenset]:
    """Per text, the cue families it holds (one RE2 pass per family over the rows)."""
    hits = {f: np.asarray(pc.match_substring_regex(texts, pattern).fill_null(False))
            for f, pattern in found_in.screens.items()}
    return [frozenset(f for f, column in hits.items() if column[k]) for k in range(len(texts))]
