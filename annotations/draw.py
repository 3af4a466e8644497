"""Review batches as probability draws, and the prediction-powered estimate they give (campaign format 3).

Every batch k (the start push, then each `--next N`) is a probability sample of its pool U_k (the
pairs no earlier batch drew and nobody had reviewed when it was drawn) with known inclusion
probabilities π_i, recorded per pair in campaign.json with the prediction p_i it used (`p_error`
when the audit has it, else `risk`). The start batch is the audit's review queue (risk queue with
π = 1, control pairs a simple random sample of n_h of the N_h pairs of each risk band, π = n_h / N_h);
a `--next N` batch draws exactly N pairs (Brewer's fixed-size πps draw, `sampling` = "brewer"; batches
recorded before it, without the key, were Poisson draws of N pairs expected) with the trade-off rule
π_i = min(1, max(floor, sqrt(μ·p_i(1 − p_i) / (ν − p_i)))), π_i = 1 where p_i ≥ ν (`DrawRule`: finding
and estimating as one objective, Σ π·p − μ·V⁰), floor = FLOOR_SHARE · N / |U_k| > 0 for every pair, a
forced `certain` share of the likeliest first; batches recorded before the rule (no `tradeoff` key)
used π_i = min(1, max(floor, λ·p_i)) and are checked by it. A `--next` batch drawn with `DrawRule(recalibrate=True)`
(not the default: RECALIBRATE) uses the raw p recalibrated on the verdicts of pairs the earlier batches drew
(annotations/recalibration.py, recorded as `recalibration`); its π and its estimate both use that q.

Estimate (prediction-powered inference, Angelopoulos et al. 2023; active statistical inference,
Zrnic & Candès 2024 — the difference/GREG estimator with p as auxiliary, Särndal et al. 1992 6.3):
batch k alone gives an unbiased estimate of the number of legal errors in the population,

    τ̂_k = Σ_{i∉U_k} y_i + Σ_{i∈U_k} q_i + Σ_{i∈S_k} (y_i − q_i) / π_i     (q = p; q = y for a pair
                                                                           reviewed outside the design)

whatever the predictions, however they were refitted from earlier verdicts: q_k and π_k are fixed before
batch k is drawn (functions of the verdicts of batches < k only), S_k is a draw with those π_k, so
E[τ̂_k | everything before batch k] = τ (sequential active inference, Zrnic & Candès 2024). The τ̂_k − τ are
martingale differences, so their combination with weights fixed at draw time, w_k ∝ 1 / V⁰_k
(V⁰_k = Σ_{U_k} (1 − π)/π · p(1 − p), the variance the predictions expect), is unbiased with variance
Σ w_k² V_k. V_k = (V̂_k + V⁰_k) / 2, the mean of the design-based estimate V̂_k (Poisson: the
Horvitz-Thompson Σ_{S_k} (1 − π)/π² (y − q)²; fixed size: the Hájek-Deville form, `fixed_size_variance`)
and V⁰_k (in a fixed-size campaign each pair's q(1 − q) raised to the squared residual its prediction band
shows with one pseudo-draw for the errors its draws have not shown, `observed_spread`, PRIOR_HITS): V̂_k alone is too small exactly when a rare large residual
(an error with a small p) has not been drawn yet, which is what made a plain normal interval
undercover at 14–100 reviews (benchmarks/bench_ppi_design.md). Interval: normal (a Poisson campaign), or in
a fixed-size campaign a score interval (`SCORE`: the variance at the bound, so the upper end allows for errors
not drawn yet), clipped to what the verdicts make certain. Stopping: the same bound at level α·6/(π²k²) after
the k-th batch, intersected over batches (a union-bound confidence sequence: valid however often it is
checked), reported as its hull with the current interval (never inside it).
A batch enters once every pair it drew (and every pair drawn before it) has a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from statistics import NormalDist

import numpy as np

from bbsard_audit.base.contracts.estimate import PPI_METHOD, BatchStep, DesignInfo, Estimate, Missed, Stratum
from bbsard_audit.base.contracts.table import as_id
from bbsard_audit.base.errors import InputError

from .estimate import Goal, final_verdicts

FLOOR_SHARE = 0.1
"""A `--next` batch's floor inclusion probability, as a share of the uniform rate N / |pool| (0.3 before
the trade-off rule, whose π of an unlikely pair, sqrt(μ·p(1 − p)/ν), already keeps it drawable)."""
CERTAIN_SHARE = 0.5
"""Share of a `--next` batch taken with certainty (the likeliest pairs), before the draw (0 from issue 24 to the
second stop on issue 32). Half the batch certain lets a learned term rule pay: a cluster's first member is
reviewed earlier, so its siblings are drawn in the rounds left. On the real test split (`campaign simulate`,
seeds 1-10, 70 reviews) learning found 17.8 / 16.8 errors for experts A / B (+1.6, A's ceiling, / +2.4 over
static) where 0 found 17.2 / 16.4 (+0.8 / +1.8); static 16.2 / 14.4 (ranked 16.2 / 14.0); with the score
interval the real split's width is 9.9 points (6 oracles x 30; 9.8 since the pseudo-draw counts 1/(1 + h),
PRIOR_HITS), the MQM populations covered 95.0 % (93.8 % with 0). Before the score interval it widened the synthetic grid to 11.8 points and covered 86 % at a 30 % error
rate; now 96.9 % there, 15.0 points over the grid (13.4 with 0) (benchmarks/bench_ppi_design.md)."""
TRADEOFF = 0.01
"""μ of the trade-off rule: the variance (in errors²) a lead gives up one expected error found for. The
rule maximises Σ π·p − μ·V⁰ at Σ π = N (finding + estimating as one objective): π = min(1, sqrt(μ·p(1 − p)
/ (ν − p))), ν the batch's multiplier; p ≥ ν is certain. μ → 0 is the top-N ranking, μ → ∞ the variance-
optimal π ∝ sqrt(p(1 − p)) (active inference, Zrnic & Candès 2024). 0.01 (floor 0.1) found the most
errors of the rules measured at a mean width ≤ 10 points on the synthetic grid, before the prediction floor
(P_FLOOR; 10.2 with it) (benchmarks/bench_ppi_design.md)."""
RECALIBRATE = False
"""Recalibrate a `--next` batch's prediction from the verdicts of the batches before it (sequential active
inference; annotations/recalibration.py)? Off: the design stays unbiased either way, but the normal
interval did not. On the real test split (6 oracles x 30 control samples, benchmarks/bench_ppi_oracles.py)
the fit, its slope held near 1, lowered the tail's predictions together with the over-confident top's: the
interval covered 85 % and 12.8 % of campaigns stopped with more than 2 errors left, against 96.1 % and
2.2 % without it (benchmarks/bench_ppi_design.md). `DrawRule(recalibrate=True)` keeps it for study; a
campaign recorded with it (`batches[].recalibration`) is read with it."""
P_FLOOR = 0.01
"""A batch's prediction is floored here before the draw and the estimate (recorded per batch as `p_floor`;
absent: 0, every campaign before it). The estimate is unbiased for any prediction, but its interval leans on
the predictions where nothing was drawn: a p_error refitted on a few dozen verdicts, mostly of likely
errors, puts the tail near 0, where the errors no signal sees are. On the real split (learning, 6 oracles x
10 control samples) the interval covered 57 of 60 with the floor, 52 of 60 with 0.005, 13 of 18 without it
(3 oracles x 6); static campaigns 96.1 % -> 97.8 % over 6 oracles x 30 (false stops 2.2 % -> 0.6 %); the synthetic grid's `p_error` 94.4 %
-> 96.0 % at 10.2 points wide instead of 9.9 (benchmarks/bench_ppi_design.md)."""
SMOOTH = 1e-3  # p is floored here, so that λ·p can reach any batch size (a p of exactly 0 happens)


@dataclass(frozen=True)
class DrawRule:
    """How a `--next` batch turns predictions into inclusion probabilities (recorded per batch)."""
    certain: float = CERTAIN_SHARE
    """Share of the batch forced certain (the likeliest pairs) before the draw."""
    tradeoff: float | None = TRADEOFF
    """μ of the trade-off rule; None: π = min(1, max(floor, λ·p)) (format-3 campaigns before the rule)."""
    floor_share: float = FLOOR_SHARE
    recalibrate: bool = RECALIBRATE
    """Recalibrate the prediction from earlier batches' verdicts before the draw (annotations/recalibration.py;
    off by default, see RECALIBRATE)."""
    p_floor: float = P_FLOOR
    """The prediction's floor (P_FLOOR), applied after any recalibration."""
    sampling: str = "brewer"
    """How the pool is drawn (SAMPLERS): "brewer" exactly the batch's size, "poisson" its expected size."""

    def draw(self, pi: np.ndarray, seed: int, batch: int) -> np.ndarray:
        """The pool pairs this batch draws (`sampling`), seeded by (campaign seed, batch)."""
        return draw_pool(pi, seed, batch, self.sampling)

    def prediction(self, p: np.ndarray, fitted=None) -> np.ndarray:
        """The prediction a batch draws on and is estimated with: the raw p, recalibrated by `fitted`
        (annotations/recalibration.py) when given, floored at `p_floor`."""
        return floored(p if fitted is None else fitted.apply(p), self.p_floor)

    def inclusion(self, p: np.ndarray, n: float) -> tuple[np.ndarray, float, float, int]:
        """(π, scale, floor, certain count) of an n-pair batch over a pool with predictions `p`."""
        k = certain_count(self.certain, int(n))
        pi, scale, floor = inclusion(p, n, k, self.floor_share, self.tradeoff)
        return pi, scale, floor, k


def check_informative(p, p_floor: float, what: str, file: str | None = None) -> None:
    """One line when no pair's prediction is above the floor: every π would be the same, the batch a
    uniform sample that finds no more than chance while the campaign says it draws the likeliest errors."""
    p = np.asarray(p, dtype=float)
    if not (p > p_floor).any():
        raise InputError(f"no pair of {what} has a prediction above the floor {p_floor:g} ({len(p)} pair(s)): "
                         "nothing to draw the likeliest errors by; re-run the audit (p_error or risk) on this population",
                         file=file)


def floored(p, p_floor: float | None) -> np.ndarray:
    """p raised to the batch's floor (P_FLOOR; None or 0: a batch recorded before the floor, p as it was)."""
    return np.maximum(np.asarray(p, dtype=float), p_floor or 0.0)


def certain_count(share: float, n: int) -> int:
    """Pairs of an n-pair batch taken with certainty: round(share·n), at most n − 1 so that every batch
    keeps a probability part (the pairs it does not take keep π > 0)."""
    return max(0, min(round(share * n), n - 1))


def inclusion(p: np.ndarray, n: float, certain: int = 0, floor_share: float = FLOOR_SHARE,
              tradeoff: float | None = None) -> tuple[np.ndarray, float, float]:
    """(π, scale, floor) for a pool with predictions `p` (in the pool's order; ties by that order):
    the `certain` largest p get π = 1, the rest π = rule(p; scale, floor) summing to n − certain, the
    rule the linear min(1, max(floor, λ·p)) (scale λ) or with `tradeoff` μ the trade-off rule (scale ν)."""
    p = np.asarray(p, dtype=float)
    pi = np.zeros(len(p))
    order = np.argsort(-p, kind="stable")
    k = int(min(max(certain, 0), len(p), max(n, 0)))
    pi[order[:k]] = 1.0
    rest, m = order[k:], float(n) - k
    if m <= 0 or not len(rest):
        return pi, 0.0, 0.0
    if m >= len(rest):
        pi[rest] = 1.0
        return pi, math.inf, 1.0
    floor = floor_share * m / len(rest)
    low, high = (0.0, 1.0 / SMOOTH) if tradeoff is None else (0.0, 1e6)
    # the linear rule's π grows with λ, the trade-off rule's falls with ν: bisect on the sum
    grows = tradeoff is None
    for _ in range(200):
        mid = (low + high) / 2
        small = expected_pi(p[rest], mid, floor, tradeoff).sum() < m
        low, high = (mid, high) if small == grows else (low, mid)
    scale = high if grows else low
    pi[rest] = expected_pi(p[rest], scale, floor, tradeoff)
    return pi, scale, floor


def expected_pi(p: np.ndarray, scale: float, floor: float, tradeoff: float | None = None) -> np.ndarray:
    """π as a recorded (scale, floor, tradeoff) gives it (certain pairs aside): the draw rule itself, and
    the check of an edited campaign.json."""
    if math.isinf(scale):
        return np.ones(len(p))
    g = np.maximum(np.asarray(p, dtype=float), SMOOTH)
    if tradeoff is None:
        return np.minimum(1, np.maximum(floor, scale * g))
    gap = scale - g
    ratio = tradeoff * g * (1 - g) / np.where(gap > 0, gap, 1.0)
    return np.where(gap > 0, np.minimum(1, np.maximum(floor, np.sqrt(ratio))), 1.0)


def poisson_draw(pi: np.ndarray, seed: int, batch: int) -> np.ndarray:
    """Which pool pairs a batch draws: independent Bernoulli(π_i) (Poisson sampling: π exact, the batch
    size random around Σπ), seeded by (campaign seed, batch). Batches before SAMPLING; kept for them and
    for study (`DrawRule(sampling="poisson")`)."""
    return np.random.default_rng([seed, batch]).random(len(pi)) < np.asarray(pi, dtype=float)


def brewer_draw(pi: np.ndarray, seed: int, batch: int) -> np.ndarray:
    """Which pool pairs a batch draws, exactly round(Σπ) of them, each with inclusion probability π_i
    (Brewer 1975, Tillé 2006 section 7.2, Brewer's method: the pairs with π = 1 taken; then m draws
    without replacement, the i-th picking pair k among those left with probability ∝
    π_k (m − a − π_k) / (m − a − π_k (m − i + 1)), a the π already taken). Exact π, never a rejection
    (Sampford's rejective draw stalled on the trade-off rule's π near 1), every joint inclusion
    probability positive and close to a maximum-entropy design's, so the Hájek-Deville variance
    (`fixed_size_variance`) applies. Seeded by (campaign seed, batch)."""
    pi = np.asarray(pi, dtype=float)
    out = pi >= 1 - 1e-12
    rest = np.flatnonzero(~out & (pi > 0))
    m = int(round(pi[rest].sum()))
    if m >= len(rest):
        out[rest] = True
    if m <= 0 or m >= len(rest):
        return out
    rng = np.random.default_rng([seed, batch])
    left, p, a = np.ones(len(rest), bool), pi[rest], 0.0
    for i in range(1, m + 1):
        w = np.where(left, p * (m - a - p) / np.maximum(m - a - p * (m - i + 1), 1e-300), 0.0)
        k = int(rng.choice(len(rest), p=w / w.sum()))
        left[k], a = False, a + p[k]
    out[rest[~left]] = True
    return out


SAMPLERS = {"poisson": poisson_draw, "brewer": brewer_draw}
SAMPLING = "brewer"
"""How a `--next` batch draws its pool (recorded per batch as `sampling`; absent: "poisson", every batch
before it). Brewer: the batch is exactly its size, so a campaign never reviews more than its budget (a
Poisson draw reviewed 72-73 pairs for a budget of 70, issue 32)."""


def draw_pool(pi: np.ndarray, seed: int, batch: int, sampling: str | None = SAMPLING) -> np.ndarray:
    """The pool pairs a batch draws, by its recorded `sampling` (None: Poisson, a batch from before it)."""
    return SAMPLERS[sampling or "poisson"](pi, seed, batch)


def model_variance(p: np.ndarray, pi: np.ndarray, spread: np.ndarray | None = None) -> float:
    """V⁰: the variance of τ̂ the predictions expect (their errors Bernoulli(p)), known at draw time;
    with `spread`, each pair's p(1 − p) raised to what the verdicts show (`observed_spread`)."""
    p, pi = np.asarray(p, dtype=float), np.asarray(pi, dtype=float)
    s = p * (1 - p) if spread is None else np.maximum(p * (1 - p), spread)
    return float(((1 - pi) / pi * s).sum())


@dataclass(frozen=True)
class BatchDraw:
    """One batch over the population (arrays aligned on the population's order)."""
    batch: int
    pool: np.ndarray   # bool: in U_k
    pi: np.ndarray     # π on the pool (0 outside)
    p: np.ndarray      # the prediction the draw used (0 outside the pool)
    drawn: np.ndarray  # bool: in S_k
    fixed: bool = False  # a fixed-size draw (Brewer): the Hájek-Deville variance; else Poisson's


@dataclass(frozen=True)
class Step:
    """The estimate after the k-th complete batch: combined point, fixed-time interval, confidence sequence."""
    batch: int
    reviewed: int
    total: float
    variance: float
    ci: tuple[float, float]
    cs: tuple[float, float]


def batch_total(d: BatchDraw, y: np.ndarray, known: np.ndarray, inside: np.ndarray, domain: np.ndarray,
                spread: np.ndarray | None = None) -> tuple[float, float]:
    """(τ̂_k, V_k) over the `domain` pairs; `y` the verdicts (legal = 1) where `known`; `inside`:
    drawn by some batch (a known pair outside the design has q = y); `spread`: the residual variance
    the verdicts show per pair (`observed_spread`), which V⁰ never goes below (None: p(1 − p) alone)."""
    q = np.where(known & ~inside, y, d.p)
    pool, drawn = d.pool & domain, d.drawn & domain
    e = (y - q)[drawn]
    pi = d.pi[drawn]
    tau = float(y[domain & ~d.pool].sum() + q[pool].sum() + (e / pi).sum())
    vhat = fixed_size_variance(e, pi) if d.fixed else float(((1 - pi) / pi**2 * e**2).sum())
    v0 = model_variance(d.p[pool], d.pi[pool], None if spread is None else spread[pool])
    return tau, (vhat + v0) / 2


BANDS = (0.05, 0.2, 0.5)
"""Prediction bands (edges of p) in which `observed_spread` pools the drawn pairs' squared residuals."""
PRIOR_HITS = 0.5
"""`observed_spread` adds to each band one pseudo-draw of the band's mean weight holding PRIOR_HITS of an error
(Jeffreys' half): a band whose draws showed no error yet is not taken for error-free. On the MQM populations
(the audit's p_error blind there) half the campaigns that failed to cover had drawn no error below p = 0.05
while that band held 60 % of the errors. The pseudo-draw stands for errors the band's draws have not shown,
so it counts 1/(1 + h) of a draw in a band whose draws hold h errors (a full draw before issue 32's third
stop): there the drawn residuals show the spread themselves. Real split 6 oracles x 30: 9.90 -> 9.81 points
(100 % either way); MQM 14 x 30: 95.0 % -> 94.5 % (systems 7-13, held out: 93.3 % either way); synthetic grid
(600) 98.7 % -> 98.5 %. Dropping it outright once a band shows an error (or scaling the score term the same
way) took the held-out MQM systems to 92.4 % (benchmarks/bench_ppi_design.md)."""
SCORE = 0.15
"""The interval's ends are where the variance is taken at the bound, not at the estimate (a score interval,
as Wilson's for a proportion): each error more than estimated, spread evenly over the unreviewed pairs, adds
SCORE x dV/dτ to the variance, so the upper end reaches further than the lower. dV/dτ is the model
variance's slope, Σ_k w_k² Σ_pool (1 − π)/π (1 − 2p) / K; 0.5 would be the full model half of V
((V̂ + V⁰)/2) and covered 99 % on MQM at 21 points, widening the real split to 12.7; 0.15 is the smallest
share measured that covers 93–97 % on the MQM populations (benchmarks/bench_ppi_design.md)."""


def observed_spread(draws: list[BatchDraw], y: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per pair, the mean squared residual (y − p)² of the drawn pairs of its prediction band (BANDS),
    each weighted 1/π (a Hájek mean over the batches so far; 0 in a band nothing was drawn from). V⁰ rests
    on p(1 − p), right only where p is calibrated: on the MQM dev set, where the audit's p_error has an AUC
    of 0.52 and puts half the pairs at 0.01 that hold 11 % errors, an interval on p(1 − p) covered 71 %
    (benchmarks/bench_ppi_design.md); a hit where p said 0.01 raises its band's spread, and V⁰ with it."""
    k = len(BANDS) + 1
    num, den, count, psum, hits = np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(k)
    band = np.zeros(len(y), dtype=int)
    for d in draws:
        at = d.drawn & domain & (d.pi > 0)
        b = np.searchsorted(BANDS, d.p[at], side="right")
        np.add.at(num, b, (y[at] - d.p[at]) ** 2 / d.pi[at])
        np.add.at(den, b, 1 / d.pi[at])
        np.add.at(count, b, 1.0)
        np.add.at(hits, b, y[at])
        np.add.at(psum, b, d.p[at] / d.pi[at])
        band = np.where(d.pool, np.searchsorted(BANDS, d.p, side="right"), band)
    # one pseudo-draw per band drawn from, of the band's mean weight and mean p, holding PRIOR_HITS of an error,
    # its weight divided by 1 + the errors the band's draws hold (PRIOR_HITS: they show the spread themselves)
    w = np.where(count > 0, den / np.maximum(count, 1), 0.0) / (1 + hits)
    pbar = np.where(count > 0, psum / np.maximum(den, 1e-300), 0.0)
    num, den = num + w * (PRIOR_HITS * (1 - pbar) ** 2 + (1 - PRIOR_HITS) * pbar**2), den + w
    return np.where(den > 0, num / np.maximum(den, 1e-300), 0.0)[band]


def fixed_size_variance(e: np.ndarray, pi: np.ndarray) -> float:
    """Hájek-Deville estimate of Var Σ e/π under a fixed-size high-entropy draw (Brewer, Sampford,
    conditional Poisson): m/(m − 1) Σ (1 − π)(e/π − Ĝ)², Ĝ the (1 − π)-weighted mean of e/π, over the m drawn pairs
    with π < 1 (certain pairs add nothing). Equal to Poisson's Σ (1 − π)/π² e² less what the fixed size
    removes: the spread of the batch's total size."""
    c = 1 - np.asarray(pi, dtype=float)
    keep = c > 1e-12
    c, z = c[keep], (np.asarray(e, dtype=float) / np.asarray(pi, dtype=float))[keep]
    m = len(z)
    if m < 2:
        return float((c * z**2).sum())
    g = float((c * z).sum() / c.sum())
    return float(m / (m - 1) * (c * (z - g) ** 2).sum())


def estimate(draws: list[BatchDraw], y: np.ndarray, known: np.ndarray, domain: np.ndarray,
             level: float = 0.95) -> list[Step]:
    """One Step per complete batch, in order (a batch is complete when every pair it drew, and every
    pair outside its pool, has a verdict); stops at the first incomplete batch."""
    inside = np.zeros(len(y), dtype=bool)
    for d in draws:
        inside |= d.drawn
    seen = known & ~inside  # reviewed outside the design: known from the start
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    steps: list[Step] = []
    totals, variances, weights, done = [], [], [], []
    cs = (-math.inf, math.inf)
    for d in draws:
        needed = (d.drawn | ~d.pool) & domain
        if not known[needed].all():
            break
        seen = seen | d.drawn
        found, open_ = float(y[seen & domain].sum()), float((~seen & domain).sum())
        done.append(d)
        tau, v = batch_total(d, y, known, inside, domain)
        v0 = model_variance(d.p[d.pool & domain], d.pi[d.pool & domain])
        totals.append(tau)
        if any(b.fixed for b in done):  # a fixed-size campaign: every V_k on the spread the verdicts show now
            spread = observed_spread(done, y, domain)
            variances = [batch_total(b, y, known, inside, domain, spread)[1] for b in done]
        else:  # a Poisson campaign (before issue 32): as it was
            variances.append(v)
        weights.append(1 / max(v0, 1e-12))
        w = np.array(weights) / sum(weights)
        total = float(w @ np.array(totals))
        var = float(w**2 @ np.array(variances))
        k = len(totals)
        zk = NormalDist().inv_cdf(1 - (1 - level) * 6 / (math.pi**2 * k**2) / 2)
        slope = 0.0
        if any(b.fixed for b in done) and open_ > 0:  # a fixed-size campaign: the score interval (SCORE)
            unseen = ~seen & domain
            per = np.array([float(((1 - b.pi) / np.maximum(b.pi, 1e-12) * (1 - 2 * b.p))[b.pool & unseen].sum())
                            for b in done]) / open_
            slope = SCORE * float(w**2 @ np.maximum(per, 0.0))
        bounds = lambda zz: score_bounds(found, open_, total, var, slope, zz)  # noqa: E731
        now = bounds(zk)
        cs = (max(cs[0], now[0]), min(cs[1], now[1]))
        if cs[0] > cs[1]:  # the running intersection emptied (a rare miss): keep the newest bound
            cs = now
        ci = bounds(z)
        # the stopping bound is reported never inside the fixed-time interval: a running intersection kept
        # from an earlier batch can be narrower than today's interval (the observed spread raised the
        # variances since), which printed a stopping bound below the interval's upper end (issue 32).
        # The hull is still valid however often it is checked (it contains the confidence sequence).
        steps.append(Step(d.batch, int((seen & domain).sum()), min(max(total, found), found + open_), var,
                          ci, (min(cs[0], ci[0]), max(cs[1], ci[1]))))
    return steps


def score_bounds(found: float, open_: float, total: float, var: float, slope: float, z: float) -> tuple[float, float]:
    """[total − d₋, total + d₊], d± = z·sqrt(var ± slope·d±) solved (slope 0: the normal interval), clipped to
    what the verdicts make certain (found .. found + unreviewed)."""
    root = math.sqrt(z**4 * slope**2 + 4 * z**2 * var)
    up, down = (z**2 * slope + root) / 2, (root - z**2 * slope) / 2
    return max(found, total - down), min(found + open_, total + up)


def start_inclusion(stratum, control: set, census: set) -> np.ndarray:
    """π of the start batch (the audit's review queue) for the pairs of `stratum` (id -> stratum, in
    order): 1 in a census stratum, n_h / N_h in a risk band (its control pairs a simple random sample)."""
    sizes = stratum.value_counts()
    sampled = stratum[stratum.index.isin(list(control))].value_counts()
    rate = {h: 1.0 if h in census else float(sampled.get(h, 0)) / float(n) for h, n in sizes.items()}
    return stratum.map(rate).to_numpy(dtype=float)


def campaign_estimate(audit, verdicts, campaign, *, level: float = 0.95, goal: Goal = Goal()):
    """estimate.json for a format-3 campaign on the pairs of `audit` (one split or all): the last complete
    batch's combined estimate, its interval, the confidence sequence and the stopping target on it."""
    final = final_verdicts(audit, verdicts)
    ids = sorted(campaign.population, key=lambda i: (isinstance(i, str), i))
    legal = dict(zip(final["id"].map(as_id), final["verdict"] == "legal"))
    known = np.array([i in legal for i in ids])
    y = np.array([float(legal.get(i, False)) for i in ids])
    domain = np.isin(np.array(ids, dtype=object), np.array([as_id(i) for i in audit["id"]], dtype=object))
    draws = campaign.batch_draws(ids)
    steps = estimate(draws, y, known, domain, level)
    if not steps:
        raise InputError("the start batch has pairs without a verdict: pull verdicts for the start queue "
                         "(risk queue and control sample) first")
    inside = np.any([d.drawn for d in draws], axis=0)
    outside = [ids[j] for j in np.flatnonzero(known & ~inside & domain)]
    n = int(domain.sum())
    last = steps[-1]
    found = int(y[known & domain].sum())
    unreviewed = int((~known & domain).sum())
    total = min(max(last.total, found), found + unreviewed)
    share = total / n
    ci = (last.ci[0] / n, last.ci[1] / n)
    cs = (last.cs[0] / n, last.cs[1] / n)
    pending = [d.batch for d in draws[len(steps):]]
    notes = [f"{len(outside)} pair(s) have a verdict but were drawn by no batch (reviewed outside the design, e.g. "
             "by hand): counted exactly, never as draws, on the assumption their review did not depend on a "
             "draw"] if outside else []
    if pending:
        notes.append(f"batch(es) {', '.join(map(str, pending))} not fully reviewed yet: they change no estimate "
                     "until every pair they drew has a verdict")
    left = total - found
    strata = []
    for d in draws[:len(steps)]:
        picked = d.drawn & domain
        x, m = int(y[picked].sum()), int(picked.sum())
        strata.append(Stratum(f"batch{d.batch}", int((d.pool & domain).sum()), m, x, x / m if m else None, None, None,
                              found=m, found_legal=x))
    missed = [Missed("all", unreviewed, left, max(0.0, last.ci[0] - found), max(0.0, last.ci[1] - found))]
    info = DesignInfo(3, "prediction-powered (format 3)", ", ".join(sorted({b["prediction"] for b in campaign.record["batches"]})),
                      len(steps), pending, len(outside), [as_id(i) for i in outside[:20]])
    est = Estimate(share_legal=share, ci_low=ci[0], ci_high=ci[1], expected_legal_pairs=total, population=n,
                   strata=strata, level=level, draws=0, seed=0, unreviewed=missed, method=PPI_METHOD,
                   assumptions=notes, found_legal=found, cs_low=cs[0], cs_high=cs[1],
                   by_batch=[BatchStep(s.batch, s.reviewed, s.total / n, s.ci[0] / n, s.ci[1] / n, s.cs[0] / n,
                                       s.cs[1] / n) for s in steps],
                   design=info)
    est.target = goal.judge(est)
    return est
