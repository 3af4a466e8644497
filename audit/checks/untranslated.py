"""QA check `untranslated`: source text (French) left in the target (Dutch).

Language id (py3langid, restricted to the languages with a pack) on the whole target text, and the
source pack's cue words that are no target word, outside quotes, parentheses and proper names; a
single such word counts when the 3-word window it starts reads as the source ("pour motif grave").
The evidence spans are those words or windows. A target text identical to the source is the
`identical` check's, not this one's. Cue words: each language pack's `untranslated`.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import NamedTuple

from bbsard_audit.base import languages

from ..findings import Finding
from ..termmatch import Tokens, fold
from .base import Check, Pair, Side
from .identical import is_identical

FLAGS = {
    "untranslated": "French was left in the Dutch: language id says French, or French-only function words "
                    "appear outside quotes, parentheses and proper names.",
}
SCHEMA = {"needs": "words", "optional": "words"}
TEXT_SOURCE_PROB = 0.9
"""py3langid P(source language) of the whole target text above which it is called untranslated."""
WINDOW_SOURCE_PROB = 0.75
"""... or of the 3-word window starting at a source-only function word ("pour motif grave")."""

_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|“[^”]*”|„[^”“]*[”“]|'[^']{3,}'|\([^)]*\)|\[[^\]]*\]")
_LETTERS = re.compile(r"[^\W\d_]+")


@cache
def cues(pair: Pair) -> frozenset[str]:
    """Source-language cue words that are no word of the target language ('de', 'en', 'die' are
    French and Dutch, so no French cue in a Dutch text)."""
    src, tgt = (languages.get(c) for c in pair)
    target_words = (tgt.folded("function_words") | tgt.folded("pronouns") | tgt.folded("stopwords")
                    | frozenset(fold(w) for section in ("cues", "common") for w in tgt.data.get("untranslated", {}).get(section, ())))
    return frozenset(fold(w) for w in src.section("untranslated")["cues"]) - target_words


@cache
def _common(lang: str) -> frozenset[str]:
    return frozenset(fold(w) for w in languages.get(lang).section("untranslated")["common"])


@lru_cache(maxsize=1)
def _language_identifier():
    """py3langid restricted to the languages that have a pack."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(languages.codes()))
    return identifier


class SourceWord(NamedTuple):
    word: str
    window: str
    """The 3 words it starts."""
    start: int
    window_end: int


def source_words_outside_names(target_text: str, pair: Pair) -> list[SourceWord]:
    """Source-only function words in the target text (French in the Dutch), ignoring quotes,
    parentheses and Capitalised names."""
    # blanked, not removed: offsets stay those of target_text
    stripped = _QUOTED.sub(lambda m: " " * len(m.group()), target_text).replace("\u2019", "'")
    words = list(_LETTERS.finditer(stripped))
    source_only = cues(pair)
    found = []
    for i, m in enumerate(words):
        w = m.group()
        if fold(w) not in source_only:
            continue
        inside_name = 0 < i < len(words) - 1 and words[i - 1].group()[:1].isupper() and words[i + 1].group()[:1].isupper()
        capitalised_mid_sentence = w[:1].isupper() and i > 0  # "La Louvière", "Le Forem"
        if not inside_name and not capitalised_mid_sentence:
            window = words[i:i + 3]
            found.append(SourceWord(w, " ".join(x.group() for x in window), m.start(), window[-1].end()))
    return found


def source_probability(target_text: str, tokens: Tokens, source_words: list[SourceWord], source: str) -> float:
    """py3langid's P(source language) for the target text; only asked when there is some sign of it.

    Loading the language-id model costs ~1 s, and a text with target function words and no
    source-only word cannot be mostly the source language, so it gets 0 without asking.
    """
    if not target_text.strip() or (not source_words and _common(tokens.lang) & set(tokens.surfaces)):
        return 0.0
    return dict(_language_identifier().rank(target_text)).get(source, 0.0)


def untranslated_windows(source_words: list[SourceWord], source: str) -> list[SourceWord]:
    """Windows that language id reads as the source: "pour motif grave" left in a Dutch sentence."""
    if not source_words:
        return []
    identifier = _language_identifier()
    return [f for f in source_words
            if len(f.window.split()) > 1 and dict(identifier.rank(f.window)).get(source, 0.0) >= WINDOW_SOURCE_PROB]


class UntranslatedCheck(Check):
    name = "untranslated"
    order = 70
    flags = FLAGS
    categories = {"untranslated": "untranslated"}
    weights = {"untranslated": 0.7}
    data = "untranslated"
    columns = ("qa_{target}_{source_language}_prob", "qa_{source_language}_words")
    packages = ("simplemma", "py3langid")

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        src, text, name = source.lang, target.text, source.pack.name
        words = source_words_outside_names(text, (src, target.lang))
        prob = source_probability(text, target.tokens, words, src)
        windows = untranslated_windows(words, src) if len(words) == 1 else []
        out = []
        if not is_identical(source.text, text) and (prob >= TEXT_SOURCE_PROB or len(words) >= 2 or windows):
            detail, offsets = "", []
            if len(words) >= 2:
                detail = f"{name} words: {', '.join(dict.fromkeys(f.word for f in words))}"
                offsets = [(f.start, f.start + len(f.word)) for f in words]
            elif words and windows:
                detail = f"{name} left in: '{windows[0].window}'"
                offsets = [(windows[0].start, windows[0].window_end)]
            out.append(Finding("untranslated", "; ".join(x for x in (
                f"language id: {name} {prob:.2f}" if prob >= 0.5 else "", detail) if x),
                target.spans(offsets, "untranslated")))
        return out, (prob, len(words))
