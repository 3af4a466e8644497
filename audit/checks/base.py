"""What every QA check shares: the signal base class, its data files, its language packs and
concept matching.

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
from functools import cache
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import Pack, Unavailable, word_list
from bbsard_audit.base.untrusted import load_yaml, nfc_data

from .. import termmatch
from ..findings import Finding, spans_at
from ..signal_cache import fingerprint
from ..signals import DECLARED, Batch, Declared, SignalResult
from ..termmatch import LEMMAS, Match, TermMatcher, Tokens, fold, longest_first, tokenize

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

Pair = tuple[str, str]
"""(source, target) ISO 639-1 codes; the audit's columns `fr` / `nl` hold the source / target texts."""
DEFAULT_PAIR: Pair = ("fr", "nl")

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


class Check(Declared):
    """Base of the QA check signals: cached on (French, Dutch), its signature hashes the check's
    module, this base, the term matcher, its data file and the libraries it uses.

    A check declares (signals.Declared) its flags' categories and default weights (or rules) and its
    `order`: checks run, and their flags and reasons appear in a row, by ascending `order`."""

    name: str
    flags: Mapping[str, str]
    order: int
    data: str | None = None
    """Its word-list file, `audit/data/<data>.yaml`."""
    packages: tuple[str, ...] = ("simplemma",)
    reads = ("fr", "nl")

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
        return src, tgt

    def score(self, batch: Batch) -> SignalResult:
        pair = batch.pair
        try:
            self.packs(pair)
            findings, columns = self.check(batch.fr, batch.nl, pair)
        except Unavailable as exc:  # never a silent pass: the sidecar says which check did not run
            n = len(batch)
            columns = pd.DataFrame(np.nan, index=range(n), columns=list(inspect.getmodule(self).COLUMNS))
            return SignalResult([[] for _ in range(n)], columns, {"checks_unavailable": [f"{self.name}: {exc}"]})
        LEMMAS.flush()
        return SignalResult(findings, columns)

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        """Per source/target pair (`fr` / `nl` are the batch's source / target columns)."""
        raise NotImplementedError


class Concepts:
    """Finds named concepts (regions, institutions, roles) on either side of a pair: the concepts
    both packs name, each side's forms matched as words, and also as the head of a compound word
    in a language with compounds (Dutch, German). A pack's `capitalised_only` forms ('Luik',
    'Namen') count only when written with a capital letter."""

    def __init__(self, table: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]], pair: Pair = DEFAULT_PAIR):
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


def match_spans(side: Literal["fr", "nl"], tokens: Tokens, matches: Sequence[Match], flag: str):
    return spans_at(side, tokens.original, [tokens.offsets(m.start, m.end) for m in matches], flag)


def concept_diff(fr: Counter, nl: Counter, concepts: Concepts, flag: str, fr_tokens: Tokens, nl_tokens: Tokens,
                 fr_matches: Sequence[Match], nl_matches: Sequence[Match]) -> list[Finding]:
    """A concept named on one side only, with the spans where it is named."""
    out = []
    src, tgt = (c.upper() for c in concepts.pair)
    for key in sorted(set(fr) | set(nl)):
        if (fr[key] > 0) != (nl[key] > 0):
            fr_name, nl_name = concepts.name(key, 0), concepts.name(key, 1)
            if fr[key]:
                where = f"{src} names '{fr_name}' but {tgt} has no '{nl_name}'"
                spans = match_spans("fr", fr_tokens, [m for m in fr_matches if m.key == key], flag)
            else:
                where = f"{tgt} names '{nl_name}' but {src} has no '{fr_name}'"
                spans = match_spans("nl", nl_tokens, [m for m in nl_matches if m.key == key], flag)
            out.append(Finding(flag, where, spans))
    return out


def one_sided(fr: Sequence[str], nl: Sequence[str], find: Callable[[Tokens], tuple[Counter, list[Match]]],
              concepts: Concepts, flag: str, columns: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
    """A check for concepts named on one side only (regions, institutions): per pair the findings of
    `concept_diff` and the number of such concepts."""
    findings, rows = [], []
    src, tgt = concepts.pair
    for fr_text, nl_text in zip(fr, nl):
        fr_t, nl_t = tokenize(fr_text, src), tokenize(nl_text, tgt)
        (fr_c, fr_m), (nl_c, nl_m) = find(fr_t), find(nl_t)
        findings.append(concept_diff(fr_c, nl_c, concepts, flag, fr_t, nl_t, fr_m, nl_m))
        rows.append((sum((fr_c[x] > 0) != (nl_c[x] > 0) for x in set(fr_c) | set(nl_c)),))
    return findings, frame(rows, columns)


def frame(rows: list[tuple], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))
