"""Small statistics shared by stages and the report (base layer)."""

from __future__ import annotations

import math
from statistics import NormalDist  # not scipy.stats: 0.6 s of import for one quantile

import numpy as np

NEWTON_STEPS = 50


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


def penalised_logistic(x: np.ndarray, y: np.ndarray, prior: np.ndarray,
                       precision: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MAP logistic regression of y on x under the Gaussian prior N(prior, diag(1 / precision)), by
    Newton's method with step halving (never a step that raises the loss); returns the coefficients
    and the Laplace posterior covariance (inverse Hessian)."""
    def loss(w: np.ndarray) -> float:  # penalised negative log-likelihood (strictly convex)
        z = x @ w
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(precision * (w - prior) ** 2))

    w = prior.copy()
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + precision * (w - prior)
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(precision)
        step, before = np.linalg.solve(hess, grad), loss(w)
        while loss(w - step) > before and np.max(np.abs(step)) > 1e-10:
            step = step / 2
        w = w - step
        if np.max(np.abs(step)) < 1e-8:
            break
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(precision)
    return w, np.linalg.inv(hess)
