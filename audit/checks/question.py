"""QA check `question`: the French asks something and the Dutch became a statement.
Word lists (interrogatives that open a question without '?'): audit/data/question.yaml."""

from __future__ import annotations

import re
from functools import cache
from typing import Sequence

import pandas as pd

from ..findings import Finding
from ..termmatch import Tokens, tokenize
from .base import Check, frame, word_lists

FLAGS = {
    "not_a_question": "The French is a question (ends with '?' or starts with an interrogative) but the Dutch "
                      "is a statement.",
}
SCHEMA = {"interrogatives_fr": "words", "interrogatives_nl": "words"}
COLUMNS = ["qa_question_lost"]


@cache
def _interrogatives() -> dict[str, frozenset[str]]:
    data = word_lists("question", SCHEMA)
    return {"fr": frozenset(data["interrogatives_fr"]), "nl": frozenset(data["interrogatives_nl"])}


def is_question(tokens: Tokens) -> bool:
    text = tokens.text.strip()
    if "?" in text:
        return True
    first = tokens.surfaces[:1]
    if not first:
        return False
    if tokens.lang == "fr":
        # "Puis-je …", "Quel …" without the question mark still asks something
        return first[0] in _interrogatives()["fr"] or bool(
            re.match(r"^\w+-(?:je|tu|il|elle|on|nous|vous|ils|elles)\b", text, re.I))
    return first[0] in _interrogatives()["nl"]


class QuestionCheck(Check):
    name = "question"
    order = 90
    flags = FLAGS
    categories = {"not_a_question": "mistranslation"}
    weights = {"not_a_question": 0.4}
    data = "question"

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            lost = is_question(tokenize(fr_text, "fr")) and not is_question(tokenize(nl_text, "nl"))
            findings.append([Finding("not_a_question", "the French asks a question; the Dutch is a statement")]
                            if lost else [])
            rows.append((int(lost),))
        return findings, frame(rows, COLUMNS)
