"""Coverage study of the error-rate estimator on synthetic populations with a known truth.

Each population: N pairs with a latent quality z, errors y ~ Bernoulli(sigmoid(a + q z + u_c))
(q = how much the risk score knows, from useless 0 to strong 2; u_c a cluster effect, as one
mistranslated term repeats across questions; a tuned to the wanted error rate), risk =
sigmoid(z + noise). The real `review_queue` draws the risk queue and the control sample, risk
batches of 20 follow the campaign's rule (the N riskiest pairs no batch took, control pairs
included: bbsard_audit.annotations.adaptive), and the real `estimate` runs on the verdicts. Policies:

- `static`: batches by the start risk;
- `adaptive`: after each batch the ranking boosts every pair of a cluster where a reviewed risk
  pair was found legal — verdict-dependent, as `audit learn` is;
- `adaptive+control`: the same, also learning from the control verdicts (as `audit learn` on a
  campaign's verdicts.csv does).

`run(...)` returns one row per population: truth, estimate, interval, covered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bbsard_audit.annotations.estimate import estimate
from bbsard_audit.audit.pipeline import review_queue

POLICIES = ("static", "adaptive", "adaptive+control")


@dataclass(frozen=True)
class Setting:
    n_pairs: int
    error_rate: float
    risk_quality: float
    control: int
    budget: int
    batches: int
    policy: str


def population(rng: np.random.Generator, n: int, rate: float, quality: float) -> tuple[pd.DataFrame, np.ndarray]:
    """An audit frame (id, split, category, risk, flagged) and the true legal errors."""
    z = rng.standard_normal(n)
    cluster = rng.integers(0, max(1, n // 5), n)
    lin = quality * z + rng.standard_normal(cluster.max() + 1)[cluster]
    low, high = -20.0, 10.0
    for _ in range(50):  # the intercept that gives the wanted mean error probability
        mid = (low + high) / 2
        low, high = (mid, high) if (1 / (1 + np.exp(-(mid + lin)))).mean() < rate else (low, mid)
    y = rng.random(n) < 1 / (1 + np.exp(-(low + lin)))
    risk = np.round(1 / (1 + np.exp(-(z + 0.3 * rng.standard_normal(n)))), 4)
    frame = pd.DataFrame({"id": np.arange(1, n + 1), "split": "test", "category": rng.integers(0, 6, n).astype(str),
                          "risk": risk, "flagged": risk >= np.quantile(risk, 0.85), "cluster": cluster})
    return frame, y


def campaign(frame: pd.DataFrame, y: np.ndarray, queue: pd.DataFrame, batches: int, size: int,
             policy: str) -> set[int]:
    """The reviewed ids after the start queue and `batches` risk batches of the `size` riskiest pairs
    never reviewed (annotations.adaptive)."""
    control = set(queue.loc[queue["queue"] == "control", "id"])
    taken = set(queue.loc[queue["queue"] == "risk", "id"])
    ids, cluster, risk = frame["id"].to_numpy(), frame["cluster"].to_numpy(), frame["risk"].to_numpy()
    for _ in range(batches):
        score = risk.copy()
        if policy != "static":
            seen = np.isin(ids, list(taken | (control if policy == "adaptive+control" else set())))
            score = score + 0.5 * np.isin(cluster, np.unique(cluster[seen & y]))
        free = ~np.isin(ids, list(taken | control))
        taken |= set(int(i) for i in ids[free][np.lexsort((ids[free], -score[free]))][:size])
    return taken | control


def one(setting: Setting, seed: int, draws: int = 2000) -> dict:
    rng = np.random.default_rng(seed)
    frame, y = population(rng, setting.n_pairs, setting.error_rate, setting.risk_quality)
    queue, _ = review_queue(frame, setting.budget, setting.control, seed=seed)
    reviewed = sorted(campaign(frame, y, queue, setting.batches, 20, setting.policy))
    verdicts = pd.DataFrame({"id": reviewed, "verdict": np.where(y[np.array(reviewed, dtype=int) - 1], "legal", "correct")})
    est = estimate(frame, verdicts, queue, draws=draws, seed=seed)
    truth = float(y.mean())
    return {**setting.__dict__, "seed": seed, "truth": truth, "estimate": est.share_legal, "ci_low": est.ci_low,
            "ci_high": est.ci_high, "covered": est.ci_low <= truth <= est.ci_high, "reviewed": len(reviewed)}


def settings(rng: np.random.Generator, n: int, sizes=(200, 1108), policies=("static", "adaptive")) -> list[Setting]:
    """`n` settings drawn over the study's grid (error rates 2-30 %, risk from useless to strong)."""
    out = []
    for _ in range(n):
        out.append(Setting(int(rng.choice(sizes)), float(rng.choice([0.02, 0.05, 0.1, 0.2, 0.3])),
                           float(rng.choice([0.0, 0.5, 1.0, 2.0])), int(rng.choice([14, 20, 40, 60])),
                           int(rng.choice([0, 10, 40])), int(rng.integers(0, 4)), str(rng.choice(policies))))
    return out


def run(n: int, seed: int = 0, sizes=(200, 1108), policies=("static", "adaptive"), draws: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([one(s, seed * 100_000 + i, draws) for i, s in enumerate(settings(rng, n, sizes, policies))])
