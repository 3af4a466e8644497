"""Seeded, vectorised resampling over queries: bootstrap CIs, paired randomisation tests, Holm.

All systems and metrics of one subset share the same resampled query sets (one index matrix),
so their CIs are paired and a single matrix product gives every bootstrap mean at once.
"""

from __future__ import annotations

import numpy as np

from .options import DEFAULT_RESAMPLES, DEFAULT_SEED


def _rng(seed: int) -> np.random.Generator:
    """SFC64: the fastest numpy bit generator for the 10^7 draws a bootstrap needs."""
    return np.random.Generator(np.random.SFC64(seed))


def resample_indices(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples x n) query indices drawn with replacement; uint16 when n allows (half the memory)."""
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max else np.uint32
    return _rng(seed).integers(0, n, size=(resamples, n), dtype=dtype)


class Bootstrap:
    """Percentile bootstrap of the macro average over `n` queries."""

    def __init__(self, n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> None:
        if n < 1:
            raise ValueError("bootstrap needs at least one query")
        self.n, self.resamples, self.seed = n, resamples, seed
        self.indices = resample_indices(n, resamples, seed)
        self._counts: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray:
        """(resamples x n) how often each query is drawn; turns many means into one matmul."""
        if self._counts is None:
            offsets = np.arange(self.resamples, dtype=np.int64)[:, None] * self.n
            flat = np.bincount((self.indices + offsets).ravel(), minlength=self.resamples * self.n)
            self._counts = flat.reshape(self.resamples, self.n).astype(np.float64)
        return self._counts

    def means(self, values: np.ndarray) -> np.ndarray:
        """Bootstrap means: (n,) -> (resamples,), (m x n) -> (m x resamples)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape[-1] != self.n:
            raise ValueError(f"expected {self.n} per-query values, got {values.shape[-1]}")
        if values.ndim == 1:
            return self._gather_means(values)
        if len(values) <= 2:
            return np.stack([self._gather_means(v) for v in values])
        return (self.counts @ values.T).T / self.n

    def _gather_means(self, values: np.ndarray) -> np.ndarray:
        """Means by indexing, in cache-sized blocks of resamples (2x faster than one big take)."""
        block = 500
        return np.concatenate([np.take(values, self.indices[i:i + block]).mean(axis=1)
                               for i in range(0, self.resamples, block)])

    def ci(self, values: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval (numpy's linear interpolation) of the bootstrap means."""
        tail = (1 - level) / 2 * 100
        low, high = np.percentile(self.means(values), [tail, 100 - tail], axis=-1)
        return low, high


def sign_flips(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples x n) random +1/-1: which per-query differences a randomisation swaps."""
    return _rng(seed).integers(0, 2, size=(resamples, n), dtype=np.int8).astype(np.float64) * 2 - 1


def paired_randomisation(diffs: np.ndarray, resamples: int = DEFAULT_RESAMPLES,
                         seed: int = DEFAULT_SEED) -> np.ndarray:
    """Two-sided p-values of paired sign-flip tests, one per row of per-query differences.

    Under H0 (systems exchangeable per query) each difference keeps its size but its sign is a coin
    flip; p = (1 + #{|mean of flipped| >= |observed mean|}) / (resamples + 1).
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    signs = sign_flips(diffs.shape[1], resamples, seed)
    n = diffs.shape[1]
    null = np.abs(signs @ diffs.T) / n  # (resamples x pairs)
    observed = np.abs(diffs.mean(axis=1))
    exceed = (null >= observed - 1e-12).sum(axis=0)
    return (1 + exceed) / (resamples + 1)


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    pvalues = np.asarray(pvalues, dtype=np.float64)
    m = len(pvalues)
    if m == 0:
        return pvalues
    order = np.argsort(pvalues, kind="stable")
    stepped = np.maximum.accumulate(pvalues[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted
