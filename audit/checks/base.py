"""What every QA check shares: the signal base class, its word-list data files and concept matching.

Word lists live in `audit/data/<check>.yaml`, read once and validated against the check's schema;
a malformed list is a one-line InputError naming the file and the key.
"""

from __future__ import annotations

import inspect
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

import pandas as pd
from bbsard_audit.errors import InputError
from bbsard_audit.untrusted import load_yaml, nfc_data

from .. import termmatch
from ..findings import Finding, spans_at
from ..signal_cache import fingerprint
from ..signals import DECLARED, Batch, Declared, SignalResult
from ..termmatch import LEMMAS, Match, TermMatcher, Tokens, longest_first, tokenize

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

Kind = Literal["words", "pairs", "concepts", "numbers"]
"""words: a non-empty list of texts; pairs: a list of [text, text]; concepts: {name: {fr: words,
nl: words}}; numbers: {word: number}."""


def _words(value, key: str, label: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"`{key}` must be a non-empty list of words", file=label)
    return tuple(v.strip() for v in value)


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
            out[key] = _words(value, key, label)
        elif kind == "pairs":
            if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x.strip() for x in p) for p in value):
                raise InputError(f"`{key}` must be a list of [text, text] pairs", file=label)
            out[key] = [(a.strip(), b.strip()) for a, b in value]
        elif kind == "numbers":
            if not isinstance(value, dict) or not value or not all(
                    isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in value.items()):
                raise InputError(f"`{key}` must map words to numbers", file=label)
            out[key] = dict(value)
        else:
            if not isinstance(value, dict) or not value or not all(
                    isinstance(v, dict) and set(v) == {"fr", "nl"} for v in value.values()):
                raise InputError(f"`{key}` must map each concept to {{fr: [...], nl: [...]}}", file=label)
            out[key] = {str(name): (_words(forms["fr"], f"{key}.{name}.fr", label),
                                    _words(forms["nl"], f"{key}.{name}.nl", label)) for name, forms in value.items()}
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
        return fingerprint(files, self.packages)

    def score(self, batch: Batch) -> SignalResult:
        findings, columns = self.check(batch.fr, batch.nl)
        LEMMAS.flush()
        return SignalResult(findings, columns)

    def check(self, fr: Sequence[str], nl: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
        raise NotImplementedError


class Concepts:
    """Finds named concepts (regions, institutions, roles) on either side; French forms match as
    words, Dutch forms also as the head of a compound word."""

    def __init__(self, table: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]):
        self.table = table
        self.fr = TermMatcher(((k, t) for k, (fr, _) in table.items() for t in fr), "fr")
        self.nl = TermMatcher(((k, t) for k, (_, nl) in table.items() for t in nl), "nl", "head")

    def find(self, tokens: Tokens) -> tuple[Counter, list[Match]]:
        """How many times each concept is named, and where."""
        matches = longest_first((self.fr if tokens.lang == "fr" else self.nl).find(tokens))
        return Counter(m.key for m in matches), matches


def match_spans(side: Literal["fr", "nl"], tokens: Tokens, matches: Sequence[Match], flag: str):
    return spans_at(side, tokens.original, [tokens.offsets(m.start, m.end) for m in matches], flag)


def concept_diff(fr: Counter, nl: Counter, table, flag: str, fr_tokens: Tokens, nl_tokens: Tokens,
                 fr_matches: Sequence[Match], nl_matches: Sequence[Match]) -> list[Finding]:
    """A concept named on one side only, with the spans where it is named."""
    out = []
    for key in sorted(set(fr) | set(nl)):
        if (fr[key] > 0) != (nl[key] > 0):
            fr_name, nl_name = table[key][0][0], table[key][1][0]
            if fr[key]:
                where = f"FR names '{fr_name}' but NL has no '{nl_name}'"
                spans = match_spans("fr", fr_tokens, [m for m in fr_matches if m.key == key], flag)
            else:
                where = f"NL names '{nl_name}' but FR has no '{fr_name}'"
                spans = match_spans("nl", nl_tokens, [m for m in nl_matches if m.key == key], flag)
            out.append(Finding(flag, where, spans))
    return out


def one_sided(fr: Sequence[str], nl: Sequence[str], find: Callable[[Tokens], tuple[Counter, list[Match]]],
              table, flag: str, columns: Sequence[str]) -> tuple[list[list[Finding]], pd.DataFrame]:
    """A check for concepts named on one side only (regions, institutions): per pair the findings of
    `concept_diff` and the number of such concepts."""
    findings, rows = [], []
    for fr_text, nl_text in zip(fr, nl):
        fr_t, nl_t = tokenize(fr_text, "fr"), tokenize(nl_text, "nl")
        (fr_c, fr_m), (nl_c, nl_m) = find(fr_t), find(nl_t)
        findings.append(concept_diff(fr_c, nl_c, table, flag, fr_t, nl_t, fr_m, nl_m))
        rows.append((sum((fr_c[x] > 0) != (nl_c[x] > 0) for x in set(fr_c) | set(nl_c)),))
    return findings, frame(rows, columns)


def frame(rows: list[tuple], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))
