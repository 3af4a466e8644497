"""QA check `question`: the French asks something and the Dutch became a statement.
Interrogatives that open a question without '?': each language pack's `interrogatives`."""

from __future__ import annotations

import re
from functools import cache

from bbsard_audit.base import languages

from ..findings import Finding
from ..termmatch import Tokens
from .base import Check, Side

FLAGS = {
    "not_a_question": "The French is a question (ends with '?' or starts with an interrogative) but the Dutch "
                      "is a statement.",
}
SCHEMA = {"needs": "words", "optional": "words"}


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
    if not first or text.endswith((".", "!")):
        return False  # "What all the data says is the same thing.": a statement that opens like a question
    # "Puis-je …", "Quel …" without the question mark still asks something; 'WHO' (capitals) is a name
    interrogatives, inversion = _grammar(tokens.lang)
    word = tokens.original[slice(*tokens.spans[0])]
    return (first[0] in interrogatives and not (len(word) > 1 and word.isupper())) or bool(inversion and inversion.match(text))


class QuestionCheck(Check):
    name = "question"
    order = 90
    flags = FLAGS
    categories = {"not_a_question": "mistranslation"}
    weights = {"not_a_question": 0.4}
    columns = ("qa_question_lost",)
    data = "question"

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        if not is_question(source.tokens) or is_question(target.tokens):
            return [], (0,)
        detail = f"the {source.pack.name} asks a question; the {target.pack.name} is a statement"
        return [Finding("not_a_question", detail)], (1,)
