"""QA check `question`: the French asks something and the Dutch became a statement.
Interrogatives that open a question without '?': each language pack's `interrogatives`."""

from __future__ import annotations

import re
from functools import cache
from typing import Sequence

import pandas as pd

from bbsard_audit.base import languages

from ..findings import Finding
from ..termmatch import Tokens, tokenize
from .base import DEFAULT_PAIR, Check, Pair, frame

FLAGS = {
    "not_a_question": "The French is a question (ends with '?' or starts with an interrogative) but the Dutch "
                      "is a statement.",
}
SCHEMA = {"needs": "words", "optional": "words"}
COLUMNS = ["qa_question_lost"]


@cache
def _grammar(lang: str) -> tuple[frozenset[str], re.Pattern | None]:
    """A language's interrogatives, and its verb-subject inversion ('Puis-je', 'Doit-il') if any."""
    pack = languages.get(lang)
    pronouns = pack.data.get("inversion_pronouns")
    inversion = re.compile(r"^\w+-(?:" + "|".join(map(re.escape, pronouns)) + r")\b", re.I) if pronouns else None
    return frozenset(pack.section("interrogatives")), inversion


def is_question(tokens: Tokens) -> bool:
    text = tokens.text.strip()
    if "?" in text:
        return True
    first = tokens.surfaces[:1]
    if not first:
        return False
    # "Puis-je …", "Quel …" without the question mark still asks something
    interrogatives, inversion = _grammar(tokens.lang)
    return first[0] in interrogatives or bool(inversion and inversion.match(text))


class QuestionCheck(Check):
    name = "question"
    order = 90
    flags = FLAGS
    categories = {"not_a_question": "mistranslation"}
    weights = {"not_a_question": 0.4}
    data = "question"

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        src, tgt = pair
        detail = f"the {languages.get(src).name} asks a question; the {languages.get(tgt).name} is a statement"
        for fr_text, nl_text in zip(fr, nl):
            lost = is_question(tokenize(fr_text, src)) and not is_question(tokenize(nl_text, tgt))
            findings.append([Finding("not_a_question", detail)] if lost else [])
            rows.append((int(lost),))
        return findings, frame(rows, COLUMNS)
