"""QA check `untranslated`: French left in the Dutch.

Language id (py3langid, restricted to fr/nl/en/de) on the whole Dutch text, and French-only function
words outside quotes, parentheses and proper names; a single such word counts when the 3-word window
it starts reads as French ("pour motif grave"). The evidence spans are those words or windows. A Dutch
text identical to the French is the `identical` check's, not this one's. Word lists:
audit/data/untranslated.yaml.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import NamedTuple, Sequence

import pandas as pd

from ..findings import Finding, spans_at
from ..termmatch import Tokens, fold, tokenize
from .base import Check, frame, word_lists
from .identical import is_identical

FLAGS = {
    "untranslated": "French was left in the Dutch: language id says French, or French-only function words "
                    "appear outside quotes, parentheses and proper names.",
}
SCHEMA = {"french_only_words": "words", "dutch_function_words": "words"}
COLUMNS = ["qa_nl_french_prob", "qa_french_words"]
LANGS = ["fr", "nl", "en", "de"]
TEXT_FRENCH_PROB = 0.9
"""py3langid P(French) of the whole Dutch text above which it is called untranslated."""
WINDOW_FRENCH_PROB = 0.75
"""... or of the 3-word window starting at a French-only function word ("pour motif grave")."""

_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|“[^”]*”|„[^”“]*[”“]|'[^']{3,}'|\([^)]*\)|\[[^\]]*\]")
_LETTERS = re.compile(r"[^\W\d_]+")


@cache
def _lists() -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in word_lists("untranslated", SCHEMA).items()}


@lru_cache(maxsize=1)
def _language_identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(LANGS)
    return identifier


class FrenchWord(NamedTuple):
    word: str
    window: str
    """The 3 words it starts."""
    start: int
    window_end: int


def french_words_outside_names(nl_text: str) -> list[FrenchWord]:
    """French-only function words in the Dutch, ignoring quotes, parentheses and Capitalised names."""
    # blanked, not removed: offsets stay those of nl_text
    stripped = _QUOTED.sub(lambda m: " " * len(m.group()), nl_text).replace("\u2019", "'")
    words = list(_LETTERS.finditer(stripped))
    french_only = _lists()["french_only_words"]
    found = []
    for i, m in enumerate(words):
        w = m.group()
        if fold(w) not in french_only:
            continue
        inside_name = 0 < i < len(words) - 1 and words[i - 1].group()[:1].isupper() and words[i + 1].group()[:1].isupper()
        capitalised_mid_sentence = w[:1].isupper() and i > 0  # "La Louvière", "Le Forem"
        if not inside_name and not capitalised_mid_sentence:
            window = words[i:i + 3]
            found.append(FrenchWord(w, " ".join(x.group() for x in window), m.start(), window[-1].end()))
    return found


def french_probability(nl_text: str, tokens: Tokens, french_words: list[FrenchWord]) -> float:
    """py3langid's P(French) for the Dutch text; only asked when there is some sign of French.

    Loading the language-id model costs ~1 s, and a text with Dutch function words and no
    French-only word cannot be mostly French, so it gets 0 without asking.
    """
    if not nl_text.strip() or (not french_words and _lists()["dutch_function_words"] & set(tokens.surfaces)):
        return 0.0
    return dict(_language_identifier().rank(nl_text)).get("fr", 0.0)


def untranslated_windows(french_words: list[FrenchWord]) -> list[FrenchWord]:
    """Windows that language id reads as French: "pour motif grave" left in a Dutch sentence."""
    if not french_words:
        return []
    identifier = _language_identifier()
    return [f for f in french_words
            if len(f.window.split()) > 1 and dict(identifier.rank(f.window)).get("fr", 0.0) >= WINDOW_FRENCH_PROB]


class UntranslatedCheck(Check):
    name = "untranslated"
    order = 70
    flags = FLAGS
    categories = {"untranslated": "untranslated"}
    weights = {"untranslated": 0.7}
    data = "untranslated"
    packages = ("simplemma", "py3langid")

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        for fr_text, nl_text in zip(fr, nl):
            french_words = french_words_outside_names(nl_text)
            french_prob = french_probability(nl_text, tokenize(nl_text, "nl"), french_words)
            windows = untranslated_windows(french_words) if len(french_words) == 1 else []
            out = []
            if not is_identical(fr_text, nl_text) and (
                    french_prob >= TEXT_FRENCH_PROB or len(french_words) >= 2 or windows):
                detail, offsets = "", []
                if len(french_words) >= 2:
                    detail = f"French words: {', '.join(dict.fromkeys(f.word for f in french_words))}"
                    offsets = [(f.start, f.start + len(f.word)) for f in french_words]
                elif french_words and windows:
                    detail = f"French left in: '{windows[0].window}'"
                    offsets = [(windows[0].start, windows[0].window_end)]
                out.append(Finding("untranslated", "; ".join(x for x in (
                    f"language id: French {french_prob:.2f}" if french_prob >= 0.5 else "", detail) if x),
                    spans_at("nl", nl_text, offsets, "untranslated")))
            findings.append(out)
            rows.append((french_prob, len(french_words)))
        return findings, frame(rows, COLUMNS)
