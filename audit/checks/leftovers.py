"""QA check `leftover_text`: what an LLM translator said about its work, left in the translated
question (a preface "Here is the translation:", a note "(Opmerking: ...)", a chat phrase "I hope this
helps", a refusal "I'm sorry, but I can't"), in any pack language; not when the source question holds
it too. The rules and cue words are audit/leftovers.py's (the packs' `meta_text`), as for corpus
documents, without the two that read a question's own voice wrongly: first-person words (the asker's
'I') and paragraphs in another language.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.languages import Unavailable

from .. import leftovers
from ..findings import Finding, spans_at
from ..signal_cache import fingerprint
from .base import DEFAULT_PAIR, Check, Pair, frame

FLAGS = {
    "leftover_text": "LLM leftovers in the translation: a preface ('Here is the translation:'), a translator's "
                     "note or remark, a chat phrase ('I hope this helps') or a refusal ('I cannot translate'), in "
                     "any pack language, that the source does not hold (audit/leftovers.py).",
}
COLUMNS = ["qa_leftovers"]


class LeftoversCheck(Check):
    name = "leftovers"
    order = 95
    flags = FLAGS
    categories = {"leftover_text": "addition"}
    weights = {"leftover_text": 0.8}
    packages = ()

    def pack_sections(self) -> tuple[str, ...]:
        return ("meta_text", "stopwords", "function_words", "pronouns")

    def signature(self) -> str:
        return super().signature() + fingerprint([Path(leftovers.__file__)], ())[:16]

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        if not languages.get(pair[1]).has("meta_text"):
            raise Unavailable(pair[1], "meta_text")
        found_in = leftovers.detector()
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            found = found_in.find(nl_text, pair[1], fr_text, pair[0], document=False)
            shown = "; ".join(f"{x.kind} ({x.lang.upper()}) '{nl_text[x.start:x.end][:60]}'" for x in found[:3])
            findings.append([Finding("leftover_text", f"leftover LLM text: {shown}",
                                     spans_at("nl", nl_text, [(x.start, x.end) for x in found], "leftover_text"))]
                            if found else [])
            rows.append((len(found),))
        return findings, frame(rows, COLUMNS)
