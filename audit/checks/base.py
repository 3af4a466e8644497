"""What every QA check shares: the signal base class, its data files, its language packs and
concept matching. A check sees a pair as two `Side`s named by role (source, target), never by
language code: `Check.score` runs its one per-pair hook, `compare`, over the batch.

Everything language-specific comes from the language packs of the pair (base/languages,
docs/languages.md); `audit/data/<check>.yaml` holds what is not: the pack sections the check
`needs` (a pack without one makes the check "not available" for that language, recorded in the
sidecar) and language-independent data (role counterparts, the self-test's swaps). Each file is
read once and validated against the check's schema; a malformed one is a one-line InputError
naming the file and the key.
"""

from __future__ import annotations

import hashlib
import inspect
from collections import Counter
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import Pack, Unavailable, word_list
from bbsard_audit.base.untrusted import load_yaml, nfc_data

from .. import termmatch
from ..findings import Finding, Role, Span, spans_at
from ..signal_cache import fingerprint
from ..signals import DECLARED, Batch, Declared, SignalResult
from ..termmatch import LEMMAS, Match, TermMatcher, Tokens, fold, longest_first, tokenize

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

Pair = tuple[str, str]
"""(source, target) ISO 639-1 codes."""

Kind = Literal["words", "pairs"]
"""words: a non-empty list of texts; pairs: a list of [text, text]."""


def _validate(raw, schema: Mapping[str, Kind], label: str) -> dict:
    if not isinstance(raw, dict):
        raise InputError("a word-list file must be a mapping of lists", file=label)
    missing, unknown = set(schema) - set(raw), set(raw) - set(schema)
    if missing or unknown:
        raise InputError("; ".join(x for x in (f"missing key(s) {', '.join(sorted(missing))}" if missing else "",
                                               f"unknown key(s) {', '.join(sorted(map(str, unknown)))}" if unknown else "")
                                   if x), file=label)
    out: dict = {}
    for key, kind in schema.items():
        value = raw[key]
        if kind == "words":
            out[key] = word_list(value, key, label)
        elif kind == "pairs":
            if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x.strip() for x in p) for p in value):
                raise InputError(f"`{key}` must be a list of [text, text] pairs", file=label)
            out[key] = [(a.strip(), b.strip()) for a, b in value]
    return out


def read_word_lists(path: Path, schema: Mapping[str, Kind]) -> dict:
    """Read and validate one word-list YAML file (uncached: see `word_lists`)."""
    raw = nfc_data(load_yaml(path, "word list", unreadable="not a readable YAML word list"))
    return _validate(raw, schema, str(path))


@cache
def _cached(name: str, schema: tuple[tuple[str, Kind], ...]) -> dict:
    return read_word_lists(DATA_DIR / f"{name}.yaml", dict(schema))


def word_lists(name: str, schema: Mapping[str, Kind]) -> dict:
    """The shipped `audit/data/<name>.yaml`, read and validated once per process."""
    return _cached(name, tuple(schema.items()))


@dataclass(frozen=True)
class Side:
    """One side of a pair as a check reads it: its role, language and text, tokenised on first use."""

    role: Role
    lang: str
    text: str

    @cached_property
    def tokens(self) -> Tokens:
        return tokenize(self.text, self.lang)

    @property
    def pack(self) -> Pack:
        return languages.get(self.lang)

    @property
    def code(self) -> str:
        """The language code as reasons show it ('FR')."""
        return self.lang.upper()

    def spans(self, offsets: Sequence[tuple[int, int]], flag: str) -> tuple[Span, ...]:
        """Evidence at character offsets of this side's text."""
        return spans_at(self.role, self.text, offsets, flag)

    def match_spans(self, matches: Sequence[Match], flag: str) -> tuple[Span, ...]:
        """Evidence where term matches sit in this side's tokens."""
        return self.spans([self.tokens.offsets(m.start, m.end) for m in matches], flag)


class Check(Declared):
    """Base of the QA check signals: cached on (source, target), its signature hashes the check's
    module, this base, the term matcher, its data file and the libraries it uses.

    A check declares (signals.Declared) its flags' categories and default weights (or rules), its
    `columns` (one value per pair each; a side's column named by role, `qa_numbers_{source}`) and its
    `order`: checks run, and their flags and reasons appear in a row, by ascending `order`. It
    implements one hook, `compare(source, target)`: a pair's findings and column values; `score`
    runs it over the batch. A check whose verdict depends on the batch (the length check's z-scores)
    also gives `prepare`: batch statistics, handed to each pair's `compare`."""

    name: str
    flags: Mapping[str, str]
    order: int
    data: str | None = None
    """Its word-list file, `audit/data/<data>.yaml`."""
    target_needs: tuple[str, ...] = ()
    """Pack sections the target's pack must have (its data file's `needs`: both packs)."""
    packages: tuple[str, ...] = ("simplemma",)
    reads = ("source", "target")

    def _own(self) -> dict:
        return word_lists(self.data, inspect.getmodule(self).SCHEMA) if self.data else {}

    def pack_sections(self) -> tuple[str, ...]:
        """The language-pack sections this check reads (its data file's `needs` and `optional`)."""
        own = self._own()
        return (*own.get("needs", ()), *own.get("optional", ()))

    def __init_subclass__(cls, **kwargs) -> None:
        if "name" in cls.__dict__:
            order = cls.__dict__.get("order")
            if not isinstance(order, int) or isinstance(order, bool):
                raise TypeError(f"check {cls.__module__}.{cls.__qualname__} declares no integer `order`")
            taken = [c for c in Check.registered() if c.order == order and c.__module__ != cls.__module__]
            if taken:
                raise TypeError(f"check {cls.__module__}.{cls.__qualname__}: order {order} is taken by "
                                f"{taken[0].__module__}")
        super().__init_subclass__(**kwargs)

    @staticmethod
    def registered() -> list[type["Check"]]:
        """The declared checks, by `order`."""
        return sorted((c for c in DECLARED.values() if issubclass(c, Check)), key=lambda c: c.order)

    def signature(self) -> str:
        files = [Path(inspect.getfile(type(self))), Path(__file__), Path(termmatch.__file__)]
        if self.data:
            files.append(DATA_DIR / f"{self.data}.yaml")
        files.append(Path(languages.__file__))
        packs = "".join(languages.get(c).fingerprint(self.pack_sections()) for c in languages.codes())
        return fingerprint(files, self.packages) + hashlib.sha256(packs.encode()).hexdigest()[:16]

    def packs(self, pair: Pair) -> tuple[Pack, Pack]:
        """(source, target) packs; `Unavailable` when one lacks a section the check needs."""
        src, tgt = languages.get(pair[0]), languages.get(pair[1])
        for pack in (src, tgt):
            for section in self._own().get("needs", ()):
                pack.section(section)
        for section in self.target_needs:
            tgt.section(section)
        return src, tgt

    def score(self, batch: Batch) -> SignalResult:
        src, tgt = batch.pair
        try:
            self.packs(batch.pair)
            findings, rows = [], []
            for s, t, stats in zip(batch.source, batch.target, self.prepare(batch.source, batch.target, batch.pair)):
                found, row = self.compare(Side("source", src, s), Side("target", tgt, t), stats)
                findings.append(found)
                rows.append(row)
        except Unavailable as exc:  # never a silent pass: the sidecar says which check did not run
            n = len(batch)
            columns = pd.DataFrame(np.nan, index=range(n), columns=list(self.columns))
            return SignalResult([[] for _ in range(n)], columns, {"checks_unavailable": [f"{self.name}: {exc}"]})
        LEMMAS.flush()
        return SignalResult(findings, pd.DataFrame(rows, columns=list(self.columns)))

    def prepare(self, source: Sequence[str], target: Sequence[str], pair: Pair) -> Sequence[object]:
        """Batch statistics, one item per pair, handed to its `compare` (none by default)."""
        return [None] * len(source)

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        """One pair: what is wrong with the target (findings), and the pair's value of each of `columns`."""
        raise NotImplementedError


class Concepts:
    """Finds named concepts (regions, institutions, roles) on either side of a pair: the concepts
    both packs name, each side's forms matched as words, and also as the head of a compound word
    in a language with compounds (Dutch, German). A pack's `capitalised_only` forms ('Luik',
    'Namen') count only when written with a capital letter."""

    def __init__(self, table: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]], pair: Pair):
        self.table, self.pair = table, pair
        self.matchers = {}
        for side, code in enumerate(pair):
            pack = languages.get(code)
            self.matchers[code] = (TermMatcher(((k, t) for k, forms in table.items() for t in forms[side]), code,
                                               "head" if pack.compounds else "exact"), pack.folded("capitalised_only"))

    def find(self, tokens: Tokens) -> tuple[Counter, list[Match]]:
        """How many times each concept is named, and where."""
        matcher, capitalised = self.matchers[tokens.lang]
        matches = longest_first(matcher.find(tokens))
        if capitalised:
            matches = [m for m in matches if fold(m.term) not in capitalised
                       or tokens.original[tokens.spans[m.start][0]].isupper()]
        return Counter(m.key for m in matches), matches

    def name(self, key: str, side: int) -> str:
        return self.table[key][side][0].lstrip("=")


@cache
def pair_concepts(section: str, pair: Pair) -> Concepts:
    """The concepts of a pack section (regions, institutions, roles) that both packs of the pair name."""
    src, tgt = (languages.get(c).section(section) for c in pair)
    return Concepts({k: (forms, tgt[k]) for k, forms in src.items() if k in tgt}, pair)


class ConceptCheck(Check):
    """A check for concepts named on one side only (regions, institutions): per pair, each concept
    one side names and the other does not, with the spans where it is named, and their number."""

    section: str
    """The pack section of its concepts."""

    def concepts(self, pair: Pair) -> Concepts:
        return pair_concepts(self.section, pair)

    def find(self, tokens: Tokens, pair: Pair) -> tuple[Counter, list[Match]]:
        return self.concepts(pair).find(tokens)

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        pair = (source.lang, target.lang)
        concepts, (flag,) = self.concepts(pair), self.flags
        (src_c, src_m), (tgt_c, tgt_m) = self.find(source.tokens, pair), self.find(target.tokens, pair)
        out = []
        for key in sorted(set(src_c) | set(tgt_c)):
            if (src_c[key] > 0) != (tgt_c[key] > 0):
                src_name, tgt_name = concepts.name(key, 0), concepts.name(key, 1)
                if src_c[key]:
                    where = f"{source.code} names '{src_name}' but {target.code} has no '{tgt_name}'"
                    spans = source.match_spans([m for m in src_m if m.key == key], flag)
                else:
                    where = f"{target.code} names '{tgt_name}' but {source.code} has no '{src_name}'"
                    spans = target.match_spans([m for m in tgt_m if m.key == key], flag)
                out.append(Finding(flag, where, spans))
        return out, (sum((src_c[x] > 0) != (tgt_c[x] > 0) for x in set(src_c) | set(tgt_c)),)

