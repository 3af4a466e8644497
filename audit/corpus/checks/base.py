"""What every document check shares: its declaration, its three phases and its language packs.

A document check declares itself like a question check (audit/signals.py `declare`): its `doc_*`
flags, their categories and default weights, its `order` (the order of its flags in a row), the
language-pack sections it `needs` and its tunable `params`. Its phases:

- `map(docs, ctx)`: per-row columns and findings that depend on the row alone (so any batch split
  gives the same rows);
- `accumulator()`: an order-independent summary of the map outputs (corpus distributions, duplicate
  groups), merged over every batch by `documents.reduce_stats`;
- `score(mapped, stats, ctx)`: columns and findings that need the corpus-wide summary.

A pack lacking a section the check `needs` makes the check "not available for <code>": its columns
stay NaN and the sidecar says so (`documents.check_status`), never a silent pass.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bbsard_audit.base import languages
from bbsard_audit.audit.findings import Finding, Span, category_of
from bbsard_audit.audit.signals import DECLARED, Declared
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair, Unavailable

if TYPE_CHECKING:
    from ..documents import CorpusContext, CorpusStats

MAX_SPANS = 10
"""Evidence spans kept per finding (a long document can repeat an artifact hundreds of times)."""


class Docs:
    """One map batch as the checks read it: the texts as Python lists and as Arrow arrays."""

    def __init__(self, table: pa.Table, pair: LanguagePair) -> None:
        self.table, self.pair = table, pair
        self._arrays: dict[str, pa.Array] = {}

    def __len__(self) -> int:
        return self.table.num_rows

    def arrow(self, column: str) -> pa.Array:
        if column not in self._arrays:
            self._arrays[column] = self.table.column(column).combine_chunks()
        return self._arrays[column]

    @cached_property
    def source(self) -> list[str]:
        return self.table.column("source_text").to_pylist()

    @cached_property
    def target(self) -> list[str]:
        return self.table.column("target_text").to_pylist()

    @cached_property
    def digits_equal(self) -> np.ndarray:
        """Whether both sides hold the same multiset of digit runs ('1.500' and '1 500' both give 1
        and 500): the numbers and references checks look closer only at the rows where they differ."""
        return digit_fingerprint(self.arrow("source_text")) == digit_fingerprint(self.arrow("target_text"))

    @cached_property
    def both_have_content(self) -> np.ndarray:
        """Both sides hold a letter or a digit."""
        return ~contentless(self.arrow("source_text")) & ~contentless(self.arrow("target_text"))

    @cached_property
    def source_chars(self) -> np.ndarray:
        return pc.utf8_length(self.arrow("source_text")).to_numpy(zero_copy_only=False).astype(np.int64)

    @cached_property
    def target_chars(self) -> np.ndarray:
        return pc.utf8_length(self.arrow("target_text")).to_numpy(zero_copy_only=False).astype(np.int64)


def contentless(texts: pa.Array) -> np.ndarray:
    """True where a text has no letter and no digit (RE2, vectorised)."""
    return np.asarray(pc.invert(pc.match_substring_regex(texts, r"[\p{L}\p{N}]")).fill_null(True))


def row_sums(lists: pa.ListArray, values: np.ndarray) -> np.ndarray:
    """The sum of `values` (one per element of the flattened lists) over each list."""
    offsets = lists.offsets.to_numpy()
    cumulative = np.concatenate([np.zeros(1, dtype=values.dtype), np.cumsum(values)])
    return cumulative[offsets[1:] - offsets[0]] - cumulative[offsets[:-1] - offsets[0]]


def words(texts: pa.Array, sample: int) -> pa.ListArray:
    """The lower-cased letter runs of each text's first `sample` characters (an empty string may occur)."""
    return pc.split_pattern_regex(pc.utf8_lower(pc.utf8_slice_codeunits(texts, 0, sample)), r"[^\p{L}]+")


def digit_fingerprint(texts: pa.Array) -> np.ndarray:
    """A 64-bit multiset hash of each text's digit runs, leading zeros dropped (vectorised)."""
    runs = pc.split_pattern_regex(texts, r"[^0-9]+")
    flat = runs.flatten()
    present = np.asarray(pc.greater(pc.utf8_length(flat), 0))
    stripped = pc.utf8_slice_codeunits(pc.utf8_ltrim(flat, "0"), 0, 18)
    value = np.asarray(pc.cast(pc.if_else(pc.equal(stripped, ""), "0", stripped), pa.int64())).astype(np.uint64)
    x = value + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
    x = np.where(present, x ^ (x >> np.uint64(29)), np.uint64(0))
    with np.errstate(over="ignore"):
        return row_sums(runs, x)


@dataclass
class Result:
    """A phase's output for n rows: columns (name -> array of n) and one findings list per row."""

    columns: dict[str, np.ndarray]
    findings: list[list[Finding]] = field(default_factory=list)

    @classmethod
    def none(cls, n: int, columns: Mapping[str, pa.DataType]) -> "Result":
        """Nothing computed (the check is not available): NaN / False columns, no finding."""
        def empty(kind: pa.DataType) -> np.ndarray:
            if pa.types.is_floating(kind):
                return np.full(n, np.nan)
            if pa.types.is_string(kind) or pa.types.is_binary(kind):
                return np.array([b"" if pa.types.is_binary(kind) else ""] * n, dtype=object)
            return np.zeros(n, dtype=kind.to_pandas_dtype())
        return cls({name: empty(kind) for name, kind in columns.items()}, [[] for _ in range(n)])


class Accumulator(Protocol):
    """Streaming summary of map outputs: `add` each mapped table, then `finish` once. The result
    must not depend on the order or the split of the tables."""

    def add(self, mapped: pa.Table) -> None: ...

    def finish(self) -> Any: ...


class RobustDistribution:
    """Median and MAD of a corpus-wide value, streamed through a fixed histogram: memory O(bins),
    exact counts (any order or split of the batches gives the same result), resolution one bin
    width. Values outside [lo, hi] count at the nearest edge; NaN is skipped."""

    def __init__(self, lo: float, hi: float, bins: int) -> None:
        self.lo, self.hi, self.bins = lo, hi, bins
        self.counts = np.zeros(bins, dtype=np.int64)

    def add_values(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        index = np.clip(((values - self.lo) / (self.hi - self.lo) * self.bins).astype(np.int64), 0, self.bins - 1)
        self.counts += np.bincount(index, minlength=self.bins)

    def finish(self) -> dict:
        """{n, median, mad} (mad = median absolute deviation, unscaled); NaN without values."""
        n = int(self.counts.sum())
        if not n:
            return {"n": 0, "median": float("nan"), "mad": float("nan")}
        width = (self.hi - self.lo) / self.bins
        centres = self.lo + (np.arange(self.bins) + 0.5) * width
        median = _weighted_median(centres, self.counts)
        deviation = np.abs(centres - median)
        order = np.argsort(deviation, kind="stable")
        return {"n": n, "median": median, "mad": _weighted_median(deviation[order], self.counts[order])}


def _weighted_median(values: np.ndarray, counts: np.ndarray) -> float:
    cumulative = np.cumsum(counts)
    return float(values[np.searchsorted(cumulative, cumulative[-1] / 2.0)])


def robust_z(values: np.ndarray, summary: Mapping[str, float], min_spread: float) -> np.ndarray:
    """(value - median) / (1.4826 MAD), the spread floored at `min_spread` (a corpus whose values
    are nearly all equal must not turn a rounding difference into an outlier)."""
    spread = max(1.4826 * float(summary["mad"]), min_spread)
    return (np.asarray(values, dtype=float) - float(summary["median"])) / spread


def spans_in(side: str, text: str, offsets: Sequence[tuple[int, int]], flag: str) -> tuple[Span, ...]:
    """Spans (side = a language code) at character offsets of `text`, at most MAX_SPANS, in order."""
    category = category_of(flag)
    return tuple(Span(side, a, b, text[a:b], category) for a, b in list(dict.fromkeys(offsets))[:MAX_SPANS])


def span_at(side: str, start: int, text: str, flag: str) -> Span:
    """One span whose text (`text`, found at `start` of the stored text) is already cut out."""
    return Span(side, start, start + len(text), text, category_of(flag))


def quoted(text: str, limit: int = 60) -> str:
    """A short quotation for a reason."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 1] + "…")


def encode_findings(findings: list[Finding]) -> str:
    """A row's findings as the `_findings` column holds them (JSON)."""
    return json.dumps([[f.flag, f.reason, [[s.side, s.start, s.end, s.text, s.category] for s in f.spans]]
                       for f in findings], ensure_ascii=False, separators=(",", ":")) if findings else "[]"


def decode_findings(text: str) -> list[Finding]:
    return [Finding(flag, reason, tuple(Span(*s) for s in spans)) for flag, reason, spans in json.loads(text)] \
        if text not in ("", "[]") else []


class DocCheck(Declared):
    """Base of the document checks (module docstring). `columns`: the map-phase columns it adds
    (doc_* signal columns; a leading `_` marks one the output drops); `scored`: the score-phase
    columns; `params`: tunable thresholds, overridden by `ctx.options["<name>.<param>"]`."""

    name: str
    order: int
    needs: tuple[str, ...] = ()
    embeds: bool = False
    """It needs the context's embedder: without one it does not run (the sidecar says so)."""
    columns: Mapping[str, pa.DataType] = {}
    scored: Mapping[str, pa.DataType] = {}
    params: Mapping[str, float] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        if "name" in cls.__dict__:
            if not cls.__dict__["name"].startswith("doc_") or not all(f.startswith("doc_") for f in cls.flags):
                raise TypeError(f"document check {cls.__qualname__}: its name and flags start with doc_")
            order = cls.__dict__.get("order")
            if not isinstance(order, int) or isinstance(order, bool):
                raise TypeError(f"document check {cls.__module__}.{cls.__qualname__} declares no integer `order`")
            taken = [c for c in DocCheck.registered() if c.order == order and c.__module__ != cls.__module__]
            if taken:
                raise TypeError(f"document check {cls.__qualname__}: order {order} is taken by {taken[0].__module__}")
        super().__init_subclass__(**kwargs)

    @staticmethod
    def registered() -> list[type["DocCheck"]]:
        return sorted((c for c in DECLARED.values() if issubclass(c, DocCheck)), key=lambda c: c.order)

    def unavailable(self, pair: LanguagePair) -> str | None:
        """Why this check cannot run on `pair` ("not available for xx ..."), else None."""
        for code in pair:
            if self.needs and code not in languages.codes():
                return f"{self.name}: not available for {code} (no language pack)"
            for section in self.needs:
                try:
                    languages.get(code).section(section)
                except Unavailable as exc:
                    return f"{self.name}: {exc}"
        return None

    def partial(self, pair: LanguagePair) -> str | None:
        """What this check runs without on `pair` (an optional resource the machine lacks: "check: X not
        available: install Y"), else None: the check runs, its sidecar says what it ran without."""
        return None

    def param(self, ctx: "CorpusContext | None", key: str) -> float:
        options = ctx.options if ctx is not None else {}
        return float(options.get(f"{self.name}.{key}", self.params[key]))

    def map(self, docs: Docs, ctx: "CorpusContext") -> Result:
        return Result({}, [[] for _ in range(len(docs))])

    def accumulator(self, ctx: "CorpusContext") -> Accumulator | None:
        return None

    def score(self, mapped: pa.Table, stats: "CorpusStats", ctx: "CorpusContext") -> Result:
        return Result({}, [[] for _ in range(mapped.num_rows)])

    def compare_values(self, docs: Docs, extract: Callable[[str, str], list[tuple[int, int, Any]]], what: str,
                       column: str, skip: Callable[[Any], bool] = lambda v: False, show: Callable[[Any], str] = str,
                       ) -> Result:
        """On the rows whose digits differ (`Docs.digits_equal`) and whose sides both hold text: the
        (start, end, value) mentions `extract(text, lang)` finds on each side, compared as multisets; a finding names the values one
        side has and the other lacks (`skip`: values never compared), with their spans."""
        src, tgt = docs.pair.source, docs.pair.target
        n = len(docs)
        differ = np.zeros(n)
        findings: list[list[Finding]] = [[] for _ in range(n)]
        for i in np.flatnonzero(~docs.digits_equal & docs.both_have_content):  # an empty side is doc_empty's
            source, target = docs.source[i], docs.target[i]
            a, b = extract(source, src), extract(target, tgt)
            va, vb = Counter(v for *_, v in a), Counter(v for *_, v in b)
            missing = Counter({v: c for v, c in (va - vb).items() if not skip(v)})
            added = Counter({v: c for v, c in (vb - va).items() if not skip(v)})
            if not missing and not added:
                continue
            differ[i] = sum(missing.values()) + sum(added.values())
            parts = [f"{side.upper()} has {', '.join(show(v) for v in sorted(c))} not in {other.upper()}"
                     for side, other, c in ((src, tgt, missing), (tgt, src, added)) if c]
            spans = (spans_in(src, source, [(s, e) for s, e, v in a if v in missing], self.name)
                     + spans_in(tgt, target, [(s, e) for s, e, v in b if v in added], self.name))
            findings[i] = [self.finding(f"{what} differ: " + "; ".join(parts), spans)]
        return Result({column: differ}, findings)

    def finding(self, reason: str, spans=(), flag: str | None = None) -> Finding:
        return Finding(flag or self.name, reason, tuple(spans))

    def source_file(self) -> str:
        return inspect.getfile(type(self))


def option_keys(checks: Sequence[DocCheck]) -> set[str]:
    """Every `ctx.options` key the checks read: `<check>.<param>` and `weights.<flag>`."""
    return ({f"{c.name}.{p}" for c in checks for p in c.params}
            | {f"weights.{f}" for c in checks for f in c.flags})


def check_options(options: Mapping[str, object], checks: Sequence[DocCheck]) -> None:
    """Refuse an unknown or non-numeric option in one line, naming the nearest valid key."""
    import difflib

    known = option_keys(checks)
    for key, value in options.items():
        if key not in known:
            near = difflib.get_close_matches(str(key), sorted(known), n=1)
            raise InputError(f"unknown corpus-audit option {key!r}" + (f"; did you mean {near[0]!r}?" if near else ""))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise InputError(f"corpus-audit option {key!r} must be a finite number, got {value!r}")
        if key.startswith("weights.") and not 0 <= value < 1:
            raise InputError(f"corpus-audit option {key!r} must be a weight in [0, 1), got {value!r}")
