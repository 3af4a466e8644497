"""How much the order of systems changes between two query subsets, and whether that matters.

Rank correlations are computed row-wise on (draws x systems) score matrices so the same code serves
the observed shift (one row) and the null model (thousands of random removals).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .bootstrap import _rng


TIE_DECIMALS = 12


def settle(values: np.ndarray) -> np.ndarray:
    """Round means to 12 decimals before ranking: equal means computed by different summation orders
    (BLAS, pairwise sums) differ in the last bits, and such noise must not break a tie."""
    return np.round(np.asarray(values, dtype=np.float64), TIE_DECIMALS)


def system_order(values: np.ndarray, names: Sequence[str]) -> list[int]:
    """Indices best first: value desc, then system name (a deterministic order for ties)."""
    values = settle(values)
    return sorted(range(len(names)), key=lambda i: (-values[i], names[i]))


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b between matching rows of x and y (draws x systems); NaN when a row is all ties."""
    x, y = settle(np.atleast_2d(x)), settle(np.atleast_2d(y))
    i, j = np.triu_indices(x.shape[1], k=1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    denom = np.sqrt((sx ** 2).sum(axis=1) * (sy ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (sx * sy).sum(axis=1) / np.where(denom > 0, denom, 1), np.nan)


def tau_ap(evaluated: np.ndarray, truth: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """AP rank correlation (Yilmaz, Aslam & Robertson 2008) of the `evaluated` order against `truth`.

    tau_AP = 2/(N-1) * sum_{i=2..N} C(i)/(i-1) - 1, where C(i) counts the systems placed above
    position i by `evaluated` that `truth` also places above it. Unlike tau-b it weighs swaps at
    the top more. Ties are broken by system name (see `system_order`).
    """
    evaluated, truth = settle(np.atleast_2d(evaluated)), settle(np.atleast_2d(truth))
    n_sys = evaluated.shape[1]
    if n_sys < 2:
        return np.full(len(evaluated), np.nan)
    name_rank = np.broadcast_to(np.argsort(np.argsort(np.asarray(names, dtype=object))), evaluated.shape)
    order_e = np.lexsort((name_rank, -evaluated), axis=-1)
    truth_pos = np.argsort(np.lexsort((name_rank, -truth), axis=-1), axis=-1)
    seq = np.take_along_axis(truth_pos, order_e, axis=-1)  # truth position of each system, in evaluated order
    below = np.tril(np.ones((n_sys, n_sys), dtype=bool), k=-1)
    above = ((seq[:, None, :] < seq[:, :, None]) & below).sum(axis=2)[:, 1:]
    return 2.0 / (n_sys - 1) * (above / np.arange(1, n_sys)).sum(axis=1) - 1


@dataclass(frozen=True)
class Shift:
    """The order of systems on subsets a and b for one metric."""

    names: tuple[str, ...]
    values_a: np.ndarray
    values_b: np.ndarray

    @property
    def kendall_tau(self) -> float:
        return float(kendall_tau_b(self.values_a, self.values_b)[0])

    @property
    def tau_ap(self) -> float:
        """Order on `a` (the full set) judged against the order on `b` (the cleaner subset)."""
        return float(tau_ap(self.values_a, self.values_b, self.names)[0])

    def ranks(self, values: np.ndarray) -> dict[str, int]:
        return {self.names[i]: r + 1 for r, i in enumerate(system_order(values, self.names))}

    def rank_changes(self) -> dict[str, int]:
        """Positive = the system moves up on subset b."""
        ra, rb = self.ranks(self.values_a), self.ranks(self.values_b)
        return {s: ra[s] - rb[s] for s in self.names}

    def flips(self) -> list[tuple[str, str]]:
        """Pairs (x, y) with x ahead on a and y strictly ahead on b (ties are not flips)."""
        out, a, b = [], settle(self.values_a), settle(self.values_b)
        for i in range(len(self.names)):
            for j in range(len(self.names)):
                if a[i] > a[j] and b[j] > b[i]:
                    out.append((self.names[i], self.names[j]))
        return out


def random_subsets(n: int, size: int, draws: int, seed: int) -> np.ndarray:
    """(draws x n) boolean masks, each with exactly `size` queries kept, uniformly at random."""
    keys = _rng(seed).random((draws, n))
    if size >= n:
        return np.ones((draws, n), dtype=bool)
    if size <= 0:
        return np.zeros((draws, n), dtype=bool)
    kth = np.partition(keys, size - 1, axis=1)[:, size - 1:size]
    return keys <= kth


@dataclass(frozen=True)
class NullDraws:
    """Means of every system on `draws` random subsets of the full set of the same size as the observed one."""

    size: int
    means: np.ndarray  # (draws x systems)


def null_means(per_query_full: np.ndarray, size: int, draws: int, seed: int) -> NullDraws:
    """per_query_full: (systems x n) values on the full set -> system means on random subsets."""
    masks = random_subsets(per_query_full.shape[1], size, draws, seed).astype(np.float64)
    return NullDraws(size, (masks @ per_query_full.T) / max(size, 1))


def position(observed: float, null: np.ndarray, two_sided: bool) -> tuple[float, float]:
    """(percentile of `observed` in `null`, p-value): two-sided around the null mean, or one-sided
    'as small or smaller' (a rank correlation: lower = bigger shift)."""
    null = null[np.isfinite(null)]
    if not len(null) or not np.isfinite(observed):
        return float("nan"), float("nan")
    percentile = float((null <= observed + 1e-12).mean() * 100)
    if two_sided:
        centre = null.mean()
        extreme = (np.abs(null - centre) >= abs(observed - centre) - 1e-12).sum()
    else:
        extreme = (null <= observed + 1e-12).sum()
    return percentile, float((1 + extreme) / (len(null) + 1))


SIGNIFICANCE = 0.05
"""An observed tau below the random-removal null at p < 0.05 means the subset moved the order."""


def order_survives(n_flips_significant: int, null_p: float | None) -> bool:
    """The one rule for "the system order survives a subset" (eval's summary line and the report's
    Findings): no system pair swaps places significantly, and Kendall tau is not below the
    random-removal null (p >= SIGNIFICANCE) when one was drawn. A NaN p is no null: every system
    tied on the metric, so Kendall tau is undefined and no order can move."""
    return n_flips_significant == 0 and (null_p is None or np.isnan(null_p) or null_p >= SIGNIFICANCE)


CLEANED_CONCLUSIONS = (("holds", "hold"), ("tied", "tied"), ("flips", "flip"))
"""cleaned_pairs.csv's `conclusion` values and how a sentence counts them."""


def cleaned_counts(pairs) -> str:
    """"68 hold, 4 tied, 0 flip": the full-set conclusions (cleaned_pairs.csv rows) by what they
    become on the cleaned benchmark; eval's summary line and the report's Findings say the same."""
    return ", ".join(f"{int((pairs['conclusion'] == c).sum()):,} {word}" for c, word in CLEANED_CONCLUSIONS)


def cleaned_said(cleaned, pairs) -> str | None:
    """One line for `eval --campaign`: what the cleaned benchmark (cleaned.csv) rests on and how many
    full-set conclusions hold there (cleaned_pairs.csv); None without a campaign."""
    if cleaned is None or not len(cleaned) or pairs is None:
        return None
    first = cleaned.iloc[0]
    judged = int(first["reviewed"] + first["unreviewed"])
    return (f"cleaned benchmark (no legal error; {int(first['reviewed']):,} of {judged:,} judged questions reviewed, "
            f"the rest estimated from the campaign's draws): of {len(pairs):,} full-set conclusions (every metric), "
            f"{cleaned_counts(pairs)} (cleaned.csv with 95% intervals, rank_sets.csv, cleaned_pairs.csv)")


def conclusions_said(shift, null) -> str | None:
    """One line: does the order of systems on the full set survive on the verified subset (else the
    unflagged one)? `shift`, `null`: eval's ranking_shift and null_model tables. None without a subset."""
    if shift is None or not len(shift):
        return None
    subsets = list(dict.fromkeys(shift["subset_b"].astype(str)))
    target = next((s for s in ("verified", "unflagged") if s in subsets), subsets[0])
    rows = shift[shift["subset_b"].astype(str) == target]
    verdicts = []
    for _, row in rows.iterrows():
        hit = null[(null["metric"] == row["metric"]) & (null["subset"] == target)
                   & (null["statistic"] == "kendall_tau")] if null is not None and len(null) else []
        p = float(hit["p_value"].iloc[0]) if len(hit) else None
        verdicts.append((row["metric"], order_survives(int(row["n_flips_significant"]), p), row, p))
    kept = int(rows["n_queries_b"].iloc[0])
    head = f"conclusions, full vs {target} ({kept:,} of {int(rows['n_queries_a'].iloc[0]):,} questions): "
    moved = [(m, r, p) for m, ok, r, p in verdicts if not ok]
    if not moved:
        flips = int(rows["n_flips"].sum())
        return head + (f"the system order survives on all {len(verdicts)} metric(s); "
                       + ("no system pair swaps places" if not flips else
                          f"{flips} swap(s) of places, none significant") + " (ranking_shift.csv, null_model.csv)")
    def why(r, p) -> str:
        below = f", below the random-removal null (p = {p:.3f})" if p is not None and p < SIGNIFICANCE else ""
        return (f"Kendall tau {r['kendall_tau']:.2f}{below}, {int(r['n_flips_significant'])} significant swap(s): "
                f"{r['order_a']} -> {r['order_b']}")
    return head + "the system order does not survive on " + "; ".join(
        f"{m} ({why(r, p)})" for m, r, p in moved) + " (ranking_shift.csv, null_model.csv)"
