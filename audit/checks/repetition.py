"""QA check `repetition`: the translation repeats a source word more often than the source says it
('Galaxies form, and ... in those galaxies' -> 'In diesen Galaxien bilden sich Galaxien, und in diesen
Galaxien ...'): a hallucinated doubling of neural MT. Only words the two sides share as a cognate (the
same first letters, folded) are compared, so a repeated target word that no source word explains
stays silent, and only a word said at least three times: twice against once is ordinary style ('als
benadeelde partij of burgerlijke partij', bBSARD 507; 2 of 4,404 clean MQM TED pairs), three times
fired on 0 clean MQM pairs and 0 of the 1,108 bBSARD pairs. The evidence spans are the target's
occurrences of the repeated word."""

from __future__ import annotations

from collections import Counter

from ..findings import Finding
from .base import Check, Side

FLAGS = {
    "repeated_word": "The translation says a word it shares with the source (a cognate: 'galaxies' / "
                     "'Galaxien') more often than the source does: a doubled, hallucinated phrase.",
}
SCHEMA = {"needs": "words"}
STEM = 5
"""Letters two words share at their start to count as one cognate ('galax'); shorter words are skipped."""
TIMES = 3
"""A repeated word fires from this many occurrences in the target."""


def _content(side: Side) -> Counter:
    """Content-word lemmas of a side (not a stopword, function word or pronoun; >= STEM letters)."""
    pack, tokens = side.pack, side.tokens
    skip = pack.folded("stopwords") | pack.folded("function_words") | pack.folded("pronouns")
    return Counter(lemma for surface, lemma in zip(tokens.surfaces, tokens.lemmas)
                   if len(surface) >= STEM and surface not in skip and lemma not in skip and surface.isalpha())


class RepetitionCheck(Check):
    name = "repetition"
    order = 98
    flags = FLAGS
    categories = {"repeated_word": "addition"}
    weights = {"repeated_word": 0.5}
    columns = ("qa_repeated",)
    data = "repetition"

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        stems = Counter()
        for lemma, n in _content(source).items():
            stems[lemma[:STEM]] += n
        repeated = [(lemma, n) for lemma, n in _content(target).items()
                    if n >= TIMES and len(lemma) >= STEM and 0 < stems[lemma[:STEM]] < n]
        if not repeated:
            return [], (0,)
        lemma, n = repeated[0]
        tokens = target.tokens
        where = [tokens.spans[i] for i, l in enumerate(tokens.lemmas) if l == lemma]
        word = tokens.original[slice(*where[0])]
        detail = (f"{target.code} says '{word}' {n} times; {source.code} says it {stems[lemma[:STEM]]} "
                  f"time{'s' if stems[lemma[:STEM]] > 1 else ''}")
        return [Finding("repeated_word", detail, target.spans(where, "repeated_word"))], (len(repeated),)
