"""The one interface every audit signal implements, and how the engine runs one through the cache.

A signal has a `name`, the `flags` it can raise (flag -> description, for docs/flags.md), the batch
fields it `reads` (the cache key hashes exactly those texts), a `signature()` of everything else its
output depends on (code, data files, library versions, settings; None = never cached) and
`score(batch) -> SignalResult` (one findings list per row + numeric columns). `AuditEngine` loops
over a list of them; plugging in a new signal is adding an object to that list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np
import pandas as pd

from .findings import Finding
from .signal_cache import SignalCache

BATCH_FIELDS = ("fr", "nl", "bt", "ids", "gold")


@dataclass(frozen=True)
class Batch:
    """Row-aligned inputs of one audit batch. `bt[i] = None`: row i has no back-translation.
    `groups` / `reference`: see crosslingual.margin_scores (the self-test's corrupted copies)."""

    fr: Sequence[str]
    nl: Sequence[str]
    bt: Sequence[str | None] | None = None
    ids: Sequence[int] | None = None
    gold: Sequence[Sequence[int]] | None = None
    groups: Sequence[object] | None = None
    reference: np.ndarray | None = None
    pair: tuple[str, str] = ("fr", "nl")
    """(source, target) language codes of `fr` / `nl`: the QA checks ask those language packs."""

    def __post_init__(self) -> None:
        n = len(self.fr)
        for name in ("nl", "bt", "ids", "gold"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"batch field {name} has {len(value)} rows, fr has {n}")

    def __len__(self) -> int:
        return len(self.fr)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.fr, self.nl))

    def rows(self, reads: Sequence[str]) -> list[list[str]]:
        """The texts a signal reads, per row, for its cache key (a missing value is marked, not '')."""
        unknown = set(reads) - set(BATCH_FIELDS)
        if unknown:
            raise ValueError(f"unknown batch field(s) {sorted(unknown)}")
        columns = [getattr(self, name) or [None] * len(self) for name in reads]
        if self.pair != ("fr", "nl"):  # another pair is another result (fr -> nl keys stay as they were)
            columns.append(["\0" + "-".join(self.pair)] * len(self))
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

    def signature(self) -> str | None: ...

    def score(self, batch: Batch) -> SignalResult: ...


S = TypeVar("S")


class ScorerSignal(Generic[S]):
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
        result = SignalResult(*cache.get_or_compute(signal.name, signature, batch.rows(signal.reads), compute))
    if len(result.findings) != len(batch) or len(result.columns) != len(batch):
        raise ValueError(f"signal {signal.name!r} returned {len(result.findings)} findings rows and "
                         f"{len(result.columns)} column rows for a batch of {len(batch)}")
    undeclared = {f.flag for row in result.findings for f in row} - set(signal.flags)
    if undeclared:
        raise ValueError(f"signal {signal.name!r} raised undeclared flag(s) {sorted(undeclared)}")
    return result
