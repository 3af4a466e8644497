"""QA check `leftover_text`: what an LLM translator said about its work, left in the translated
question (a preface "Here is the translation:", a note "(Opmerking: ...)", a chat phrase "I hope this
helps", a refusal "I'm sorry, but I can't"), in any pack language; not when the source question holds
it too. The rules and cue words are audit/leftovers.py's (the packs' `meta_text`), as for corpus
documents, without the two that read a question's own voice wrongly: first-person words (the asker's
'I') and paragraphs in another language.
"""

from __future__ import annotations

from pathlib import Path

from .. import leftovers
from ..findings import Finding
from ..signal_cache import fingerprint
from .base import Check, Side

FLAGS = {
    "leftover_text": "LLM leftovers in the translation: a preface ('Here is the translation:'), a translator's "
                     "note or remark, a chat phrase ('I hope this helps') or a refusal ('I cannot translate'), in "
                     "any pack language, that the source does not hold (audit/leftovers.py).",
}


class LeftoversCheck(Check):
    name = "leftovers"
    order = 95
    flags = FLAGS
    categories = {"leftover_text": "addition"}
    weights = {"leftover_text": 0.8}
    columns = ("qa_leftovers",)
    target_needs = ("meta_text",)
    packages = ()

    def pack_sections(self) -> tuple[str, ...]:
        return ("meta_text", "stopwords", "function_words", "pronouns")

    def signature(self) -> str:
        return super().signature() + fingerprint([Path(leftovers.__file__)], ())[:16]

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        text = target.text
        found = leftovers.detector().find(text, target.lang, source.text, source.lang, document=False)
        if not found:
            return [], (0,)
        shown = "; ".join(f"{x.kind} ({x.lang.upper()}) '{text[x.start:x.end][:60]}'" for x in found[:3])
        spans = target.spans([(x.start, x.end) for x in found], "leftover_text")
        return [Finding("leftover_text", f"leftover LLM text: {shown}", spans)], (len(found),)
