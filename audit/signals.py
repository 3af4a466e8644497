"""The one interface every audit signal implements, and how the engine runs one through the cache.

A signal has a `name`, the `flags` it can raise (flag -> description, for docs/flags.md), the batch
fields it `reads` (the cache key hashes exactly those texts), a `signature()` of everything else its
output depends on (code, data files, library versions, settings; None = never cached) and
`score(batch) -> SignalResult` (one findings list per row + numeric columns). `AuditEngine` loops
over a list of them; plugging in a new signal is adding an object to that list.

A shipped signal class also declares itself (`Declared`): each flag's MQM category, its default
weight or the `Rule` that turns a column into it. The class registers on definition and a missing
declaration is an error then, so docs/flags.md, the default [weights] / [signals.*] config and the
span categories all come from the modules (audit/registry.py collects them). An object passed to
`AuditEngine(signals=...)` without declaring itself still runs: its flags weigh `default_weight`
and its spans are `other`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np
import pandas as pd

from bbsard_audit.base.languages import LanguagePair

from .findings import CATEGORIES, FLAG_CATEGORIES, Finding
from .signal_cache import SignalCache

BATCH_FIELDS = ("source", "target", "bt", "ids", "gold")


@dataclass(frozen=True)
class Batch:
    """Row-aligned inputs of one audit batch: the `source` texts and their translations (`target`).
    `bt[i] = None`: row i has no back-translation. `groups` / `reference`: see
    crosslingual.margin_scores (the self-test's corrupted copies)."""

    source: Sequence[str]
    target: Sequence[str]
    bt: Sequence[str | None] | None = None
    ids: Sequence[int] | None = None
    gold: Sequence[Sequence[int]] | None = None
    groups: Sequence[object] | None = None
    reference: np.ndarray | None = None
    pair: LanguagePair = field(kw_only=True)
    """(source, target) language codes: the QA checks ask those language packs, and the signal cache
    keys a result by it (the same texts in another pair are another result)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pair", LanguagePair(*self.pair))  # a (source, target) tuple becomes the pair
        n = len(self.source)
        for name in ("target", "bt", "ids", "gold"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"batch field {name} has {len(value)} rows, source has {n}")

    def __len__(self) -> int:
        return len(self.source)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.source, self.target))

    def rows(self, reads: Sequence[str]) -> list[list[str]]:
        """The texts a signal reads, per row, for its cache key (a missing value is marked, not '')."""
        unknown = set(reads) - set(BATCH_FIELDS)
        if unknown:
            raise ValueError(f"unknown batch field(s) {sorted(unknown)}")
        columns = [getattr(self, name) or [None] * len(self) for name in reads]
        return [["\0" if v is None else str(v) for v in row] for row in zip(*columns)] if reads else []


@dataclass
class SignalResult:
    findings: list[list[Finding]]
    columns: pd.DataFrame
    meta: dict = field(default_factory=dict)

    @classmethod
    def empty(cls, n: int) -> "SignalResult":
        """No evidence for any row (e.g. the BT signals of a batch without back-translations)."""
        return cls([[] for _ in range(n)], pd.DataFrame(index=range(n)))


@runtime_checkable
class Signal(Protocol):
    name: str
    flags: Mapping[str, str]
    reads: tuple[str, ...]
    """The batch fields it reads (`BATCH_FIELDS`)."""

    def signature(self) -> str | None: ...

    def score(self, batch: Batch) -> SignalResult: ...


S = TypeVar("S")


DEFAULT_REASON = "{column} = {value:.2f} {op} {threshold:g}"
SIDE_NAMES = ("{source}", "{target}")
"""A reason's placeholders for the pair's language names, filled in by `Rule.named`."""


@dataclass(frozen=True)
class Rule:
    """A continuous column turned into a (soft) flag: below/above `threshold`, width `scale`
    (audit/risk.py applies it). Declared by a signal, it is its default `[signals.COLUMN]` table:
    `order` places its flag among the other rules' flags in a row's flags and reasons; `doc` and
    `category` describe the flag when the signal does not raise it itself."""

    column: str
    flag: str
    threshold: float
    scale: float
    weight: float
    direction: str = "below"
    reason: str = DEFAULT_REASON  # for a person; placeholders as named, {source} {target} by `named`
    order: int | None = None
    doc: str | None = None
    category: str | None = None

    def explain(self, value: float) -> str:
        """The reason for one value; {source} and {target} stay as written until `named`."""
        op = "<" if self.direction == "below" else ">"
        return self.reason.format(column=self.column, value=value, op=op, threshold=self.threshold,
                                  **{side[1:-1]: side for side in SIDE_NAMES})

    @staticmethod
    def named(reason: str, names: tuple[str, str]) -> str:
        """`reason` with {source} and {target} replaced by the pair's language names."""
        for side, name in zip(SIDE_NAMES, names):
            reason = reason.replace(side, name)
        return reason

    def probability(self, values: np.ndarray) -> np.ndarray:
        sign = 1.0 if self.direction == "below" else -1.0
        with np.errstate(over="ignore"):
            p = self.weight / (1.0 + np.exp(-sign * (self.threshold - values) / self.scale))
        return np.nan_to_num(p, nan=0.0)  # a signal that was not computed adds no evidence

    def raised(self, values: np.ndarray) -> np.ndarray:
        return (values < self.threshold) if self.direction == "below" else (values > self.threshold)

    def table(self) -> dict:
        """The config table, keys as in a user's `[signals.COLUMN]`."""
        out: dict = {"flag": self.flag}
        if self.reason != DEFAULT_REASON:
            out["reason"] = self.reason
        if self.direction != "below":
            out["direction"] = self.direction
        return {**out, "threshold": self.threshold, "scale": self.scale, "weight": self.weight}


@dataclass(frozen=True)
class FlagSpec:
    """One declared flag: who raises it, what it means, its category and its default weight or rule."""

    flag: str
    module: str
    doc: str
    category: str
    weight: float | None
    rule: Rule | None


FLAG_SPECS: dict[str, FlagSpec] = {}
"""Every declared flag, in declaration order (filled as signal classes are defined)."""
DECLARED: dict[str, type] = {}
"""Every declared signal class by name."""


def declare(cls: type) -> None:
    """Register a signal class's flags; refuse a flag without a known category or a default weight
    (or rule), a declaration about a flag it does not have, or a name or flag another class holds."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    flags, categories, weights = dict(cls.flags), dict(cls.categories), dict(cls.weights)
    rules = {r.flag: r for r in cls.rules}
    named = list(dict.fromkeys([*flags, *rules]))
    category = {f: categories.get(f) or (rules[f].category if f in rules else None) for f in named}
    problems = [f"category of {f!r} is {c!r}, not one of {', '.join(CATEGORIES)}"
                for f, c in category.items() if c not in CATEGORIES]
    problems += [f"{f!r} has no default weight (`weights`) and no `Rule`" for f in flags
                 if f not in weights and f not in rules]
    problems += [f"{f!r} has a weight and a rule" for f in weights if f in rules]
    problems += [f"`{k}` names {f!r}, which is not in its flags" for k, names in
                 (("categories", categories), ("weights", weights)) for f in names if f not in flags]
    problems += [f"rule flag {f!r} has no `doc`" for f, r in rules.items() if f not in flags and not r.doc]
    problems += [f"rule on {r.column!r} has no `order`" for r in rules.values() if not isinstance(r.order, int)]
    problems += [f"weight of {f!r} is {w!r}, not in [0, 1)" for f, w in weights.items()
                 if not (isinstance(w, (int, float)) and 0 <= w < 1)]
    other = DECLARED.get(cls.name)
    if other is not None and f"{other.__module__}.{other.__qualname__}" != where:
        problems.append(f"signal name {cls.name!r} is already declared by {other.__module__}")
    problems += [f"flag {f!r} is already declared by {FLAG_SPECS[f].module}" for f in named
                 if f in FLAG_SPECS and FLAG_SPECS[f].module != cls.__module__]
    theirs = [s for s in FLAG_SPECS.values() if s.rule is not None and s.module != cls.__module__]
    problems += [f"rule on {r.column!r}: column or order {r.order} is taken by {s.module}" for r in rules.values()
                 for s in theirs if r.column == s.rule.column or r.order == s.rule.order]
    if problems:
        raise TypeError(f"signal {where} is not fully declared: {'; '.join(problems)}")
    DECLARED[cls.name] = cls
    for flag in named:
        rule = rules.get(flag)
        spec = FlagSpec(flag, cls.__module__, flags.get(flag) or rule.doc, category[flag], weights.get(flag), rule)
        FLAG_SPECS[flag] = spec
        FLAG_CATEGORIES[flag] = spec.category


def default_rules() -> list[Rule]:
    """Every declared rule, in `order` (the order of its flag in a row)."""
    rules = {s.rule.column: s.rule for s in FLAG_SPECS.values() if s.rule is not None}
    return sorted(rules.values(), key=lambda r: r.order)


class Declared:
    """Base of a signal class that declares itself: defining a subclass with a `name` registers it
    (`declare`). `categories` / `weights`: per flag; `rules`: the columns it turns into evidence;
    `columns`: the columns it writes, a column about one side named by role (`qa_numbers_{source}`:
    the file's `Layout` gives the code); `context`: those that describe rather than warn (counts,
    ratios: calibration does not rank them as signals)."""

    name: str
    flags: Mapping[str, str] = {}
    categories: Mapping[str, str] = {}
    weights: Mapping[str, float] = {}
    rules: tuple[Rule, ...] = ()
    columns: tuple[str, ...] = ()
    context: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            declare(cls)


class ScorerSignal(Declared, Generic[S]):
    """Base of a signal that adapts one scorer object to the Signal interface. Not signal-cached
    unless a subclass gives a `signature`: such a scorer caches its embeddings itself, or its
    output depends on more than its rows (a batch's reference rows, run files)."""

    def __init__(self, scorer: S) -> None:
        self.scorer = scorer

    def signature(self) -> str | None:
        return None


def run_signal(signal: Signal, batch: Batch, cache: SignalCache) -> SignalResult:
    """Score through the cache when the signal has a signature; check the result's shape."""
    signature = signal.signature()
    if signature is None:
        result = signal.score(batch)
    else:
        def compute():
            r = signal.score(batch)
            return r.findings, r.columns, r.meta
        result = SignalResult(*cache.get_or_compute(signal.name, signature, batch.pair, batch.rows(signal.reads),
                                                    compute))
    if len(result.findings) != len(batch) or len(result.columns) != len(batch):
        raise ValueError(f"signal {signal.name!r} returned {len(result.findings)} findings rows and "
                         f"{len(result.columns)} column rows for a batch of {len(batch)}")
    undeclared = {f.flag for row in result.findings for f in row} - set(signal.flags)
    if undeclared:
        raise ValueError(f"signal {signal.name!r} raised undeclared flag(s) {sorted(undeclared)}")
    return result


def context_columns() -> list[str]:
    """Every declared signal's `context` columns (by role), in declaration order."""
    return list(dict.fromkeys(c for cls in DECLARED.values() for c in cls.context))


def flag_specs() -> dict[str, FlagSpec]:
    return dict(FLAG_SPECS)


def default_weights() -> dict[str, float]:
    """[weights]: each declared flag's default weight (flags with a rule have none)."""
    return {flag: spec.weight for flag, spec in FLAG_SPECS.items() if spec.weight is not None}


def default_signal_rules() -> dict[str, dict]:
    """[signals.COLUMN] tables of every declared rule, in `order`."""
    return {rule.column: rule.table() for rule in default_rules()}
