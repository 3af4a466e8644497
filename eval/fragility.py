"""How many questions a benchmark conclusion "system a beats system b" rests on.

`removal_fragility(diffs)`: for per-query differences d = a - b with total D = sum(d) > 0, the
smallest k such that the k largest differences sum to at least D, i.e. the fewest judged queries
whose removal leaves a's mean no longer higher than b's (the remaining differences sum to <= 0,
so the remaining mean difference is <= 0 whatever the number of queries left). Greedy removal of
the largest differences is optimal: any k removed queries sum to at most the k largest.

`expected_unverified_errors(...)`: how many legally inaccurate questions are expected among the
judged queries nobody verified, from the strata rates of an `annotate estimate` estimate.json —
a conclusion whose removal fragility exceeds the upper bound cannot be overturned by removing
those errors alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bbsard_audit.base.contracts.estimate import SCALED, Estimate, Stratum

TOLERANCE = 1e-12
"""Per-query metric values are floats: a remaining sum within TOLERANCE * n of 0 counts as a tie."""

METHOD = ("expected = flagged-unverified judged queries x flagged rate + unflagged-unverified x unflagged "
          "rate (+ queries without an audit flag x the split's estimated share); a group's rate is the "
          "population-weighted mean of its estimate.json strata rates (flagged: risk_queue, flagged; "
          "unflagged: unflagged*, or the start-risk bands */risk-band-* of a design with inclusion "
          "probabilities, which also hold the flagged pairs outside the risk queue), its upper bound the same mean of the strata's Wilson upper bounds "
          "(or the split's ci_high for queries without a flag): conservative, each bound at the estimate's level")


SCALED_METHOD = ("expected = estimate.json's expected legal errors left among its unreviewed pairs, upper bound = "
                 "the upper end of their interval, both " + SCALED)


def removal_fragility(diffs: np.ndarray) -> np.ndarray:
    """Removal fragility of each row of per-query differences a - b (pairs x queries).

    Rows whose total is <= 0 (a does not beat b; ties included) get 0. A row whose differences
    are all > 0 gets n: only removing every query undoes the conclusion. Vectorised: sort each
    row descending, cumulative sum, first position reaching the total (the cumulative sum rises
    while differences are positive, so the first crossing is there).
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=np.float64))
    n = diffs.shape[1]
    total = diffs.sum(axis=1)
    ranked = -np.sort(-diffs, axis=1)
    reached = np.cumsum(ranked, axis=1) >= (total - TOLERANCE * max(n, 1))[:, None]
    k = reached.argmax(axis=1) + 1
    return np.where(total > TOLERANCE * max(n, 1), k, 0).astype(np.int64)


@dataclass(frozen=True)
class ExpectedErrors:
    expected: float
    high: float
    method: str = METHOD


def _group_rate(strata: list[Stratum], prefixes: tuple[str, ...], fallback: tuple[float, float],
                contains: str | None = None) -> tuple[float, float]:
    """Population-weighted (rate, wilson_high) over the reviewed strata named with `prefixes` (or
    whose name holds `contains`)."""
    rated = [s for s in strata if (s.name.startswith(prefixes) or (contains is not None and contains in s.name))
             and s.rate is not None
             and s.wilson_high is not None and s.population]
    weight = sum(s.population for s in rated)
    if not weight:
        return fallback
    return (sum(s.population * s.rate for s in rated) / weight,
            sum(s.population * s.wilson_high for s in rated) / weight)


def expected_unverified_errors(estimate: Estimate, flagged: int, unflagged: int, unknown: int = 0) -> ExpectedErrors:
    """Expected legal errors (and an upper bound) among unverified judged queries: estimate.json's one
    answer (`errors_left`) scaled to their number, so the report's fragility agrees with `annotate
    estimate`; an estimate.json without unreviewed pairs recorded: the strata rates, by audit flag."""
    left = estimate.errors_left
    if left is not None:
        sub = left.scaled(flagged + unflagged + unknown)
        return ExpectedErrors(sub.expected, sub.ci_high, SCALED_METHOD)
    overall = (estimate.share_legal, estimate.ci_high)
    strata = estimate.strata
    f_rate, f_high = _group_rate(strata, ("risk_queue", "flagged"), overall)
    bands = _group_rate(strata, (), overall, contains="/risk-band-")  # a design with inclusion probabilities
    u_rate, u_high = _group_rate(strata, ("unflagged",), bands)
    return ExpectedErrors(flagged * f_rate + unflagged * u_rate + unknown * overall[0],
                          flagged * f_high + unflagged * u_high + unknown * overall[1])
