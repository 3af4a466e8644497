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
        on = _families(found_in, docs.arrow("target_text").take(pa.array(rows, type=pa.int64())))
        keep = [k for k, families in enumerate(on) if families & STRONG]
        if len(keep) < len(rows):
            parallel = _parallel(docs, rows, found_in.run_on_screen)
            keep = sorted(set(keep) | {k for k in range(len(rows)) if not parallel[k]})
        rows, on = rows[keep], [on[k] for k in keep]
        counts = np.zeros(len(docs))
        findings = [[] for _ in range(len(docs))]
        src, code = docs.pair.source, docs.pair.target
        for k, i in enumerate(rows):
            text = docs.target[i]
            found = found_in.find(text, code, docs.source[i], src, on=on[k], source_on=frozenset())
            counts[i] = len(found)
            if found:
                shown = "; ".join(f"{x.kind} ({x.lang.upper()}) {quoted(text[x.start:x.end])}" for x in found[:3])
                findings[i] = [self.finding(f"{code.upper()} holds LLM leftovers: {shown}",
                                            spans_in(code, text, [(x.start, x.end) for x in found], self.name))]
        return Result({"doc_meta_text_hits": counts}, findings)


STRONG = frozenset({"chat", "anywhere", "at_start", "apology"})
"""Cue families that name a leftover outright; the others (first person, a language, a note head,
talk about terms) need a segment the source does not account for."""
MARKS = ("?", "!", ":", " (", "[", "\n")
_SENTENCES = r"[.!?…](?:\s|$)"
RATIO = (0.67, 1.5)


def _parallel(docs: Docs, rows: np.ndarray, run_on: str) -> np.ndarray:
    """Per row, whether the target has no more sentences, lines, questions, exclamations, colons,
    brackets and sentences run on without a mark (`run_on`: a remark whose full stop is missing)
    than its source, and lengths in proportion (RATIO): a target so parallel to its source has no
    segment of its own for a weak cue to mark (a leftover adds one; bBSARD's real translations
    often drop a context sentence: "Je suis parent. Puis-je ...?" -> "Kan ik ...?"). Vectorised;
    the rows sent to the Python rules on weak cues alone drop from most to few on documents of
    questions."""
    take = pa.array(rows, type=pa.int64())
    source, target = docs.arrow("source_text").take(take), docs.arrow("target_text").take(take)
    same = np.ones(len(rows), dtype=bool)
    for mark in MARKS:
        same &= np.asarray(pc.less_equal(pc.count_substring(target, mark), pc.count_substring(source, mark)))
    for pattern in (_SENTENCES, run_on):
        same &= np.asarray(pc.less_equal(pc.count_substring_regex(target, pattern), pc.count_substring_regex(source, pattern)))
    ratio = docs.target_chars[rows] / np.maximum(docs.source_chars[rows], 1)
    return same & (ratio >= RATIO[0]) & (ratio <= RATIO[1])


def _families(found_in, texts: pa.Array) -> list[frozenset]:
    """Per text, the cue families it holds (one RE2 pass per family over the rows; one frozenset
    per distinct combination)."""
    names = list(found_in.screens)
    bits = np.zeros(len(texts), dtype=np.int64)
    for k, pattern in enumerate(found_in.screens.values()):
        bits |= np.asarray(pc.match_substring_regex(texts, pattern).fill_null(False)).astype(np.int64) << k
    sets = {b: frozenset(n for k, n in enumerate(names) if b >> k & 1) for b in np.unique(bits).tolist()}
    return [sets[b] for b in bits.tolist()]
