"""Each system's metric on the *cleaned* benchmark — the judged questions whose translation is not a legal
error — from a partial review: a campaign's probability draws plus `p_error` for the unreviewed questions.

The cleaned metric of a system is a ratio of two population totals over the judged questions J,
θ = Σ_J (1 − y_i) v_i / Σ_J (1 − y_i) (y = legal error, v = the per-query metric). Each total is estimated
the way annotations/draw.py estimates the number of legal errors (prediction-powered inference, Angelopoulos
et al. 2023; active / sequential inference, Zrnic & Candès 2024; the difference estimator of Särndal et al.
1992 6.3): batch k alone gives

    T̂_k(z) = Σ_{i∉U_k} z_i + Σ_{i∈U_k} ẑ_i + Σ_{i∈S_k} (z_i − ẑ_i) / π_i,   z_i = (1 − y_i) v_i, ẑ_i = (1 − q_i) v_i

(U_k its pool, S_k the pairs it drew with inclusion probabilities π, q its prediction, q = y for a pair reviewed
outside the design), unbiased whatever the predictions; batches are combined with the weights draw.py fixes at
draw time (w_k ∝ 1 / V⁰_k). Every T̂ is linear in v: T̂(v) = c · v with one coefficient per question, so all
systems and metrics are one matrix product. The ratio's variance is the linearised one (Woodruff):
Var(θ̂) ≈ Σ_i (h_i + m_i)/2 · r_i² / N̂², r = v − θ̂, h the Horvitz-Thompson weights (drawn pairs) and
m the variance the predictions expect (pool pairs), Poisson sampling: the mean of the two estimates, as
annotations/draw.py reads the error count (`Weights.variance` says why).
Interval: normal.

Rank sets (simultaneous over the systems of one metric): the pairwise differences θ̂_a − θ̂_b with the
max-|t| critical value of their joint normal law (Tukey-style simultaneous intervals, drawn from the same
linearisation); a system's rank set is [1 + #systems shown above it, S − #systems shown below it] (the
construction of prediction-powered ranking, Chatzi et al. 2024, on pairwise differences). A full-set
conclusion "a beats b" holds, flips or is tied on the cleaned benchmark by the same intervals.
Coverage on synthetic populations and on the real split: benchmarks/bench_cleaned.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.campaign_design import CampaignDraws
from bbsard_audit.base.errors import InputError

from .ranking_shift import settle, system_order

LEVEL = 0.95
MAX_T_DRAWS = 4000
"""Normal draws for the simultaneous critical value (its Monte Carlo error is under 0.01 in z)."""

METHOD = ("design-based ratio estimator with the prediction-powered correction: each total over the judged "
          "questions = predictions (1 − p) on every question + the design-weighted correction (y − p)/π of the "
          "pairs each batch drew, batches combined with weights fixed at draw time (annotations/draw.py); "
          "cleaned = estimated total of the metric over questions without a legal error / estimated count of "
          "them; 95 % normal interval with the linearised (Woodruff) variance, the mean of the "
          "Horvitz-Thompson estimate and the variance the predictions expect (as annotations/draw.py); "
          "change = cleaned − full, whose interval is the cleaned one shifted (the full value is known "
          "exactly). Rank sets: "
          "simultaneous 95 % over a metric's systems, from max-|t| intervals of every pairwise difference")
ASSUMPTIONS = [
    "every batch a probability draw with the inclusion probabilities campaign.json records (Poisson sampling "
    "variance; a fixed-size (Brewer) design's π read the same way: its Hájek-Deville variance gave intervals "
    "0.01 point narrower on the real split)",
    "a legal error is the verdict `legal`; correct and minor questions stay in the cleaned benchmark",
    "normal approximation of the ratio (linearisation) and of the pairwise differences",
    "a question reviewed outside the design counts exactly, as if its review did not depend on its verdict",
]
CORRECTED = ("rows NAME.corrected: the metric on the corrected benchmark (every judged question, a legal error's "
             "translation replaced by the experts' correction and re-retrieved), its correction term estimated "
             "from the reviewed legal errors alone (Horvitz-Thompson, no prediction; the model part of its variance "
             "uses the reviewed errors' mean squared effect)")
PREDICTION_ONLY = ("no batch of the campaign is fully reviewed yet: the cleaned estimate rests on p_error alone "
                   "(the questions' recorded predictions, reviewed questions exact) and its interval on the "
                   "assumption that p_error is calibrated and errors are independent (model-based, not design-based)")


@dataclass(frozen=True)
class Aligned:
    """One batch over the evaluated questions (arrays in their order)."""
    batch: int
    pool: np.ndarray
    pi: np.ndarray
    p: np.ndarray
    drawn: np.ndarray


@dataclass
class Weights:
    """T̂(v) = coef · v; for a residual r, Var T̂(r) ≈ Σ (hat + model)/2 · r² (`variance`)."""
    coef: np.ndarray
    hat: np.ndarray
    """Per question: the design-unbiased Horvitz-Thompson weight (drawn pairs only)."""
    model: np.ndarray
    """Per question: the variance the predictions expect (pool pairs; errors Bernoulli(p))."""
    reviewed: int
    unreviewed: int
    batches_used: int
    notes: list[str] = field(default_factory=list)
    ht: np.ndarray | None = None
    """Per question: the coefficient of a total with no prediction (a correction's effect): T̂(z) = ht · z,
    non-zero only where z is known (reviewed)."""
    ht_hat: np.ndarray | None = None
    """Per question: its Horvitz-Thompson variance weight (drawn pairs)."""
    ht_model: np.ndarray | None = None
    """Per question: (1 − π)/π · p, times E[z² | legal error] the variance a pool pair may add."""

    def variance(self, residual: np.ndarray) -> np.ndarray:
        """Var T̂ of each row of residuals: the mean of the two estimates (`mean`). The HT one alone is too
        small exactly when a rare large residual has not been drawn (74 % covered at a 2 % error rate); the
        predictions' alone when they are over-confident (90 % on the synthetic grid). Their mean covered
        93.3-94.9 % at every error rate on 1,500 held-out synthetic populations and 99 % on the real split, where
        the larger of the two (this module's first rule) was 0.7 points wider at 96-97 %
        (benchmarks/bench_cleaned.md)."""
        return residual**2 @ self.mean

    @property
    def mean(self) -> np.ndarray:
        """The per-question variance weight, the mean of the two estimates: also the joint law of the
        pairwise differences (rank sets)."""
        return self.blend(self.hat, self.model)

    def blend(self, design, model):
        """The variance from its design-based and its model part: their mean; the model part alone when no
        batch has entered (prediction only: there is no design estimate to average with)."""
        return (design + model) / 2 if self.batches_used else model


def align(campaign: CampaignDraws, qids: Sequence[str]) -> list[Aligned]:
    """Every batch of `campaign` on the evaluated questions `qids`; the evaluated questions must be pairs of
    the campaign (else one line naming how many are not)."""
    ids = {str(i) for i in campaign.population}
    outside = [q for q in qids if q not in ids]
    if outside:
        raise InputError(f"{len(outside)} of the {len(qids)} evaluated questions are not pairs of the campaign "
                         f"(other ids or another split?), e.g. {', '.join(outside[:3])}", file=campaign.source)
    index = {q: j for j, q in enumerate(qids)}
    out = []
    for d in campaign.draws:
        pool, pi, p = np.zeros(len(qids), bool), np.zeros(len(qids)), np.zeros(len(qids))
        at = np.array([index.get(str(i), -1) for i in d.pool], dtype=np.int64)
        keep = at >= 0
        pool[at[keep]], pi[at[keep]], p[at[keep]] = True, d.pi[keep], d.p[keep]
        picked = {str(i) for i in d.drawn}
        drawn = np.fromiter((q in picked for q in qids), dtype=bool, count=len(qids))
        out.append(Aligned(d.batch, pool, pi, p, drawn))
    return out


def weights(draws: Sequence, y: np.ndarray, known: np.ndarray) -> Weights:
    """The estimator's per-question coefficients from the batches (`draws`: objects with batch, pool, pi, p,
    drawn aligned on the questions), `y` the verdicts (legal = 1) where `known`. A batch enters once every pair
    it drew and every pair outside its pool has a verdict (annotations/draw.py), in order."""
    y, known = np.asarray(y, dtype=float), np.asarray(known, dtype=bool)
    inside = np.any([d.drawn for d in draws], axis=0) if draws else np.zeros(len(y), bool)
    coefs, hats, models, hts, ht_hats, ht_models, w = [], [], [], [], [], [], []
    for d in draws:
        if not known[d.drawn | ~d.pool].all():
            break
        exact = known & ~inside  # reviewed outside the design: its own prediction
        q = np.where(exact, y, d.p)
        pi = np.where(d.pool, d.pi, 1.0)
        residual = np.where(d.drawn, y - q, 0.0)
        coefs.append(np.where(d.pool, 1 - q - residual / pi, 1 - y))
        hats.append((1 - pi) / pi**2 * residual**2)
        models.append(np.where(d.pool, (1 - pi) / pi * q * (1 - q), 0.0))
        sampled = d.pool & ~exact
        hts.append(np.where(sampled, np.where(d.drawn, 1 / pi, 0.0), 1.0))
        ht_hats.append(np.where(sampled & d.drawn, (1 - pi) / pi**2, 0.0))
        ht_models.append(np.where(sampled, (1 - pi) / pi * d.p, 0.0))
        v0 = float(np.where(d.pool, (1 - pi) / pi * d.p * (1 - d.p), 0.0).sum())
        w.append(1 / max(v0, 1e-12))
    reviewed = int(known.sum())
    zero = np.zeros(len(y))
    if known.all():  # every evaluated question reviewed: the cleaned benchmark is known, nothing to estimate
        return Weights(1 - y, zero, zero, reviewed, 0, len(coefs), ["every evaluated question has a verdict: "
                                                                      "the cleaned values are exact"],
                       np.ones(len(y)), zero, zero)
    if not coefs:
        q = np.where(known, y, draws[0].p if draws else 0.0)
        return Weights(1 - q, zero, q * (1 - q), reviewed, len(y) - reviewed, 0, [PREDICTION_ONLY],
                       known.astype(float), zero, np.where(known, 0.0, q))
    share = np.array(w) / sum(w)
    notes = []
    if len(coefs) < len(draws):
        pending = [d.batch for d in draws[len(coefs):]]
        notes.append(f"batch(es) {', '.join(map(str, pending))} not fully reviewed on the evaluated questions: "
                     "they enter once every pair they drew has a verdict")
    return Weights(share @ np.array(coefs), share**2 @ np.array(hats), share**2 @ np.array(models), reviewed,
                   len(y) - reviewed, len(coefs), notes, share @ np.array(hts), share**2 @ np.array(ht_hats),
                   share**2 @ np.array(ht_models))


ERRORS_LEFT_METHOD = ("expected = the campaign's estimate behind cleaned.csv (eval/cleaned.py): judged questions − "
                      "the estimated count without a legal error − the legal errors found; upper bound = the upper "
                      "end of that count's 95 % interval (the same variance), both over the judged questions without "
                      "a verdict")


def errors_left(w: Weights, y: np.ndarray, known: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """(expected, upper bound) of the legal errors among the evaluated questions without a verdict, from the
    same estimate as cleaned.csv (its denominator N̂ = coef · 1, whose variance is Σ mean): what the
    fragility of a conclusion is compared with when a campaign is given."""
    left = float(w.unreviewed)
    expected = len(w.coef) - float(w.coef.sum()) - float(np.asarray(y)[np.asarray(known, bool)].sum())
    high = expected + _z(level) * float(np.sqrt(w.mean.sum()))
    return min(max(expected, 0.0), left), min(max(high, 0.0), left)


@dataclass(frozen=True)
class Cleaned:
    """The estimate for (systems x metrics): point, standard error, and per metric the simultaneous
    critical value and the pairwise standard errors."""
    names: tuple[str, ...]
    full: np.ndarray      # (systems x metrics)
    value: np.ndarray
    se: np.ndarray
    low: np.ndarray       # the smallest / largest per-query value: no mean of them lies outside
    high: np.ndarray
    pair_se: np.ndarray   # (metrics x systems x systems)
    critical: np.ndarray  # (metrics,)


def estimate(names: Sequence[str], values: np.ndarray, w: Weights, seed: int = 0, level: float = LEVEL) -> Cleaned:
    """`values`: (systems x metrics x questions) per-query metric values on the evaluated questions."""
    values = np.asarray(values, dtype=float)
    count = float(w.coef.sum())
    if count <= 0:
        raise InputError("the campaign's estimate leaves no judged question without a legal error")
    value = values @ w.coef / count
    residual = values - value[..., None]
    se = np.sqrt(w.variance(residual)) / count
    s, m, n = values.shape
    rng = np.random.default_rng(seed)
    normals = rng.standard_normal((MAX_T_DRAWS, n))
    pair_se = np.zeros((m, s, s))
    critical = np.full(m, _z(level))
    a, b = np.triu_indices(s, k=1)
    for j in range(m):
        r = residual[:, j, :]
        diff = r[a] - r[b]
        se_ab = np.sqrt(w.variance(diff)) / count
        pair_se[j, a, b] = pair_se[j, b, a] = se_ab
        sd = np.sqrt(diff**2 @ w.mean) / count
        live = (se_ab > 1e-12) & (sd > 1e-12)
        if live.any():  # max-|t| of the pairwise differences under the estimate's joint normal law
            z = normals @ (np.sqrt(w.mean)[:, None] * r.T) / count  # (draws x systems)
            t = np.abs(z[:, a[live]] - z[:, b[live]]) / sd[live]
            critical[j] = max(float(np.quantile(t.max(axis=1), level)), critical[j])
    full = values.mean(axis=2)
    return Cleaned(tuple(names), full, value, se, values.min(axis=2), values.max(axis=2), pair_se, critical)


def _z(level: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def cleaned_table(est: Cleaned, metrics: Sequence[str], w: Weights, level: float = LEVEL) -> pd.DataFrame:
    z = _z(level)
    rows = []
    for i, system in enumerate(est.names):
        for j, metric in enumerate(metrics):
            h, f, lo, hi = z * est.se[i, j], est.full[i, j], est.low[i, j], est.high[i, j]
            # the cleaned mean lies in the values' range: the ratio's point (which may leave it) and interval kept there
            v = min(max(est.value[i, j], lo), hi)
            low, high = min(max(est.value[i, j] - h, lo), v), max(min(est.value[i, j] + h, hi), v)
            rows.append({"system": system, "metric": metric, "full": f, "cleaned": v, "ci_low": low,
                         "ci_high": high, "change": v - f, "change_low": low - f, "change_high": high - f,
                         "reviewed": w.reviewed, "unreviewed": w.unreviewed})
    frame = pd.DataFrame(rows)
    numbers = ["full", "cleaned", "ci_low", "ci_high", "change", "change_low", "change_high"]
    frame[numbers] = settle(frame[numbers].to_numpy()) + 0.0  # no 1e-16 of summation noise (nor a -0) in a change of 0
    return frame


def corrected_table(names: Sequence[str], full: np.ndarray, fixed: np.ndarray, y: np.ndarray, w: Weights,
                    metrics: Sequence[str], level: float = LEVEL) -> pd.DataFrame:
    """cleaned.csv rows `NAME.corrected` for re-retrieved (built-in) runs: the metric on the *corrected*
    benchmark (every judged question, a legal error's translation replaced by the experts' correction).
    Its total = Σ v + Σ y (v' − v): the second sum is known only on reviewed questions, so it is estimated
    with no prediction (Horvitz-Thompson, the same batches and weights); variance the mean of the HT
    estimate and (1 − π)/π · p · the mean (v' − v)² of the reviewed legal errors (0 when none: then the
    interval says nothing of errors not found yet, and the sidecar says so), as the cleaned rows' variance
    (the larger of the two covered 99 % on the synthetic grid, the mean 96.7 %: benchmarks/bench_cleaned.md). `full`, `fixed`: (systems x
    metrics x questions) on the original and corrected questions."""
    full, fixed = np.asarray(full, dtype=float), np.asarray(fixed, dtype=float)
    z = y * (fixed - full)
    n = full.shape[2]
    legal = y.astype(bool)
    spread = (z[..., legal] ** 2).mean(axis=2) if legal.any() else np.zeros(full.shape[:2])
    value = full.mean(axis=2) + z @ w.ht / n
    se = np.sqrt(w.blend(z**2 @ w.ht_hat, spread * w.ht_model.sum())) / n
    est = Cleaned(tuple(f"{s}.corrected" for s in names), full.mean(axis=2), value, se,
                  np.minimum(full, fixed).min(axis=2), np.maximum(full, fixed).max(axis=2),
                  np.zeros((full.shape[1], 0, 0)), np.zeros(full.shape[1]))
    return cleaned_table(est, metrics, w, level)


def rank_sets(est: Cleaned, metrics: Sequence[str]) -> pd.DataFrame:
    """Per metric: rank on the cleaned point estimate (ties by name) and the simultaneous rank set."""
    rows = []
    s = len(est.names)
    for j, metric in enumerate(metrics):
        above = _shown_above(est, j)
        order = system_order(est.value[:, j], est.names)
        rank = {i: r + 1 for r, i in enumerate(order)}
        for i, system in enumerate(est.names):
            rows.append({"metric": metric, "system": system, "rank": rank[i],
                         "rank_low": 1 + int(above[:, i].sum()), "rank_high": s - int(above[i, :].sum())})
    return pd.DataFrame(rows).sort_values(["metric", "rank"], kind="stable", ignore_index=True) \
        if rows else pd.DataFrame(columns=["metric", "system", "rank", "rank_low", "rank_high"])


def _shown_above(est: Cleaned, j: int) -> np.ndarray:
    """above[a, b]: a's cleaned value is shown above b's (simultaneous level)."""
    diff = est.value[:, j][:, None] - est.value[:, j][None, :]
    exact = est.pair_se[j] <= 1e-12  # the difference is known exactly (the systems differ on reviewed questions only)
    return (settle(diff) > 0) & (exact | (diff > est.critical[j] * est.pair_se[j]))


def pairs_table(est: Cleaned, metrics: Sequence[str]) -> pd.DataFrame:
    """Every full-set conclusion "a beats b" (a strictly ahead on the full set) on the cleaned benchmark."""
    rows = []
    for j, metric in enumerate(metrics):
        above = _shown_above(est, j)
        full = settle(est.full[:, j])
        for a in range(len(est.names)):
            for b in range(len(est.names)):
                if not full[a] > full[b]:
                    continue
                d, h = est.value[a, j] - est.value[b, j], est.critical[j] * est.pair_se[j, a, b]
                rows.append({"metric": metric, "system_a": est.names[a], "system_b": est.names[b],
                             "full_delta": est.full[a, j] - est.full[b, j], "cleaned_delta": d,
                             "ci_low": d - h, "ci_high": d + h,
                             "conclusion": "holds" if above[a, b] else "flips" if above[b, a] else "tied"})
    return pd.DataFrame(rows, columns=["metric", "system_a", "system_b", "full_delta", "cleaned_delta", "ci_low",
                                       "ci_high", "conclusion"])
