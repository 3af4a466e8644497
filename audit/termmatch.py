"""Tokenise a French or Dutch text once and find (multi-word) terms in it, lemmatised.

Both the glossary (signal 3) and the QA checks (signal 4) ask "does this text contain term X?"
thousands of times per batch; tokenising and lemmatising each text once (`Tokens`) and indexing the
terms by their first word (`TermMatcher`) keeps the 1,108-pair audit well under a second.

Matching rules (documented in docs/glossary.md):
- case- and accent-insensitive (`fold`), word-boundary aware (token based; apostrophes and hyphens
  split words: "l'état" -> l + etat, "Bruxelles-Capitale" -> bruxelles + capitale);
- each word of a term matches a text word when their surface forms or their simplemma lemmas agree,
  so "juges de paix" matches "juge de paix" and "huurders" matches "huurder";
- compounds (`compound="head"`, Dutch and German): a one-word term also matches as the head (last
  part, with one of its language pack's `plural_endings`) of a longer word, with at least 3 letters before it: "huurcontract" matches "studentenhuurcontract"
  (a kind of huurcontract) but "vrederechter" never matches "vredegerecht"; the word itself with such an
  ending matches too ("Polizeigericht" in the genitive "Polizeigerichts", which simplemma leaves as is);
  `compound="part"` also accepts it as the first part (modifier) of a word: "huurwaarborg" matches
  "huurwaarborgrekening", "huur" matches "huurbetalingen". Terms shorter than 4 letters (acronyms
  like "ind") only ever match whole words.
  A term written with a leading "=" (e.g. "=loon") matches whole words only ("leefloon" is not a "loon").
- small gaps (a pack's `term_gaps`, English and German): articles and possessives inside a multi-word
  term are optional and up to `max` of them may stand between its words, so "administration of
  property" matches "administration of their property" and "custody of the children" matches
  "custody of my children". French and Dutch have no `term_gaps`: their words stay adjacent.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Hashable, Iterable, Literal, Sequence

import simplemma

from bbsard_audit.base import languages
from bbsard_audit.base.io import write_json
from bbsard_audit.base.languages import fold

from bbsard_audit.base.embeddings import default_cache_dir
from bbsard_audit.base.untrusted import INVISIBLE, visible

Compound = Literal["exact", "head", "part"]

_WORD = re.compile(rf"[^\W_]+(?:[{INVISIBLE}]+[^\W_]+)*", re.UNICODE)
"""A word: letters and digits, with any invisible format character inside it (dropped from its forms)."""
_MIN_COMPOUND_PREFIX = 3
_MIN_HEAD_LEN = 4
_MIN_MODIFIER_LEN = 4


class LemmaCache:
    """word -> folded simplemma lemma, kept on disk so a warm run never loads simplemma's dictionaries.

    Decoding simplemma's French and Dutch dictionaries costs ~1.5 s per process; a batch of questions
    only needs a few thousand words, so their lemmas are stored (per simplemma version) in
    `<cache>/lemmas/simplemma-<version>.json` and simplemma is asked only about new words.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self._lemmas: dict[str, dict[str, str]] | None = None
        self._new = 0

    def _load(self) -> dict[str, dict[str, str]]:
        if self._lemmas is None:
            self._lemmas = {}
            if self.path is not None and self.path.exists():
                try:
                    self._lemmas = json.loads(self.path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    self._lemmas = {}  # a damaged cache is rebuilt, never trusted
        return self._lemmas

    def lemma(self, word: str, lang: str) -> str:
        table = self._load().setdefault(lang, {})
        found = table.get(word)
        if found is None:
            found = table[word] = fold(languages.get(lang).lemma(word))
            self._new += 1
        return found

    def flush(self) -> None:
        """Write new lemmas back (atomically); called once at the end of a batch."""
        if self._new and self.path is not None:
            try:
                write_json(self.path, self._lemmas)
            except OSError:
                return  # a read-only cache folder only costs speed
            self._new = 0


def _cache_path() -> Path | None:
    if os.environ.get("BBSARD_AUDIT_NO_LEMMA_CACHE"):
        return None
    return default_cache_dir().parent / "lemmas" / f"simplemma-{simplemma.__version__}.json"


LEMMAS = LemmaCache(_cache_path())


@dataclass(frozen=True)
class Tokens:
    """One text, tokenised once: folded surface forms, folded lemmas and character spans.

    `text` is the input with typographic apostrophes made plain (same length), `original` the input
    itself: `spans` are offsets into both, so evidence quotes `original[start:end]`.
    """

    text: str
    lang: str
    surfaces: tuple[str, ...]
    lemmas: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    original: str

    def __len__(self) -> int:
        return len(self.surfaces)

    def offsets(self, start: int, end: int) -> tuple[int, int]:
        """Character offsets of the token range [start, end)."""
        return self.spans[start][0], self.spans[end - 1][1]

    def words(self) -> set[str]:
        return set(self.surfaces) | set(self.lemmas)


@lru_cache(maxsize=32768)
def tokenize(text: str, lang: str) -> Tokens:
    """Tokenise once per (text, language): the glossary and each QA check share the result. Each
    check scans the whole batch in turn, so the cache holds a self-test's ~20,000 texts (a smaller
    LRU would evict every text before the next check reads it)."""
    original, text = text, text.replace("\u2019", "'")
    matches = list(_WORD.finditer(text))
    lower = [visible(m.group()).lower() for m in matches]
    return Tokens(
        original=original,
        text=text,
        lang=lang,
        surfaces=tuple(fold(w) for w in lower),
        lemmas=tuple(LEMMAS.lemma(w, lang) for w in lower),
        spans=tuple(m.span() for m in matches),
    )


def lemma_key(term: str, lang: str) -> str:
    """A term's lemmas, its exact-match '=' dropped: spellings and inflections of one term share it."""
    return " ".join(tokenize(term.lstrip("="), lang).lemmas)


@dataclass(frozen=True)
class Match:
    key: Hashable
    """What the caller registered the term under (e.g. an entry id, a concept name)."""
    term: str
    start: int
    end: int
    """Token positions [start, end)."""

    def overlaps(self, other: "Match") -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class _Term:
    key: Hashable
    term: str
    surfaces: tuple[str, ...]
    lemmas: tuple[str, ...]
    compound: Compound


class TermMatcher:
    """Finds registered terms (one or more words) in `Tokens` of one language."""

    def __init__(self, terms: Iterable[tuple[Hashable, str]], lang: str, compound: Compound = "exact"):
        self.lang = lang
        gaps = languages.get(lang).term_gaps
        self._skip, self._max_gap = gaps if gaps else (frozenset(), 0)
        self._by_first: dict[str, list[_Term]] = {}
        self._heads: dict[str, list[_Term]] = {}
        self._modifiers: dict[str, list[_Term]] = {}
        self._compound_cache: dict[str, tuple[_Term, ...]] = {}
        for key, term in terms:
            self.add(key, term, compound)

    def add(self, key: Hashable, term: str, compound: Compound = "exact") -> None:
        whole_words = term.startswith("=")
        toks = tokenize(term.lstrip("="), self.lang)
        if not len(toks):
            raise ValueError(f"empty term {term!r}")
        mode: Compound = "exact" if whole_words else compound
        surfaces, lemmas = toks.surfaces, toks.lemmas
        if self._skip and len(toks) > 1:  # its articles/possessives are optional (`term_gaps`)
            keep = [0] + [j for j in range(1, len(toks)) if surfaces[j] not in self._skip]
            surfaces, lemmas = tuple(surfaces[j] for j in keep), tuple(lemmas[j] for j in keep)
        entry = _Term(key, term.lstrip("="), surfaces, lemmas, mode)
        for first in {toks.surfaces[0], toks.lemmas[0]}:
            self._by_first.setdefault(first, []).append(entry)
        self._compound_cache.clear()
        if len(toks) == 1 and mode != "exact":
            endings = languages.get(self.lang).plural_endings
            for form in {toks.surfaces[0], toks.lemmas[0]} - {""}:
                if len(form) < _MIN_HEAD_LEN:
                    continue
                for ending in endings:
                    self._heads.setdefault(form + ending, []).append(entry)
                if mode == "part" and len(form) >= _MIN_MODIFIER_LEN:
                    self._modifiers.setdefault(form, []).append(entry)

    def find(self, tokens: Tokens) -> list[Match]:
        """Every occurrence of every term (overlaps included)."""
        found: dict[tuple, Match] = {}
        surfaces, lemmas = tokens.surfaces, tokens.lemmas
        n = len(surfaces)
        by_first, compounds = self._by_first, bool(self._heads or self._modifiers)
        for i in range(n):
            surface, lemma = surfaces[i], lemmas[i]
            candidates = by_first.get(surface, ())
            if lemma != surface and lemma in by_first:
                candidates = (*candidates, *by_first[lemma])
            for t in candidates:
                k = len(t.surfaces)
                if self._skip:
                    end = self._gapped(surfaces, lemmas, i, t)
                    if end:
                        found[(t.key, t.term, i)] = Match(t.key, t.term, i, end)
                elif i + k <= n and all(
                    surfaces[i + j] in (t.surfaces[j], t.lemmas[j]) or lemmas[i + j] in (t.surfaces[j], t.lemmas[j])
                    for j in range(1, k)
                ):
                    found[(t.key, t.term, i)] = Match(t.key, t.term, i, i + k)
            if compounds:
                for t in self._compound_parts(surface):
                    found.setdefault((t.key, t.term, i), Match(t.key, t.term, i, i + 1))
        return sorted(found.values(), key=lambda m: (m.start, -m.end))

    def _gapped(self, surfaces, lemmas, i: int, t: _Term) -> int:
        """End of `t` matched from token i with up to `max_gap` skippable words before each of its
        later words (0: no match)."""
        pos = i + 1
        for j in range(1, len(t.surfaces)):
            want, skipped = (t.surfaces[j], t.lemmas[j]), 0
            while pos < len(surfaces) and surfaces[pos] not in want and lemmas[pos] not in want \
                    and surfaces[pos] in self._skip and skipped < self._max_gap:
                pos, skipped = pos + 1, skipped + 1
            if pos >= len(surfaces) or (surfaces[pos] not in want and lemmas[pos] not in want):
                return 0
            pos += 1
        return pos

    def _compound_parts(self, word: str) -> tuple[_Term, ...]:
        """Terms found as the head or first part of `word`, memoised: words repeat across texts."""
        cached = self._compound_cache.get(word)
        if cached is None:
            # the word itself with a plural/genitive ending the lemmatiser missed ('Polizeigerichts')
            out: list[_Term] = list(self._heads.get(word, ()))
            for cut in range(_MIN_COMPOUND_PREFIX, len(word) - 2):
                out.extend(self._heads.get(word[cut:], ()))
            for cut in range(_MIN_MODIFIER_LEN, len(word) - _MIN_COMPOUND_PREFIX + 1):
                out.extend(self._modifiers.get(word[:cut], ()))
            cached = self._compound_cache[word] = tuple(out)
        return cached


def longest_first(matches: Sequence[Match]) -> list[Match]:
    """Non-overlapping matches, preferring longer ones: 'bail de résidence principale' hides 'bail'."""
    chosen: list[Match] = []
    for m in sorted(matches, key=lambda m: (-(m.end - m.start), m.start)):
        if not any(m.overlaps(c) for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: m.start)
