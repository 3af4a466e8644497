"""Small statistics shared by stages and the report (base layer)."""

from __future__ import annotations

import math
from statistics import NormalDist  # not scipy.stats: 0.6 s of import for one quantile


def wilson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (nan, nan) when n = 0.

    The bound at the edge of the data is exact: 0 successes give a lower bound of exactly 0 and n
    successes an upper bound of exactly 1 (the closed form leaves rounding noise such as 1.4e-17 there).
    """
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high
