"""The share of legally inaccurate Dutch translations in a whole split, from a reviewed sample.

Design: the review queue holds the N riskiest pairs (`queue=risk`) and a random control sample
of unflagged pairs (`queue=control`). The split's pairs (from audit.csv) fall into strata:

- `risk_queue`: pairs in the risk queue — reviewed as a census (all of them, ideally);
- `flagged`: flagged pairs outside the risk queue (none when the budget covers every flag);
- `unflagged`: unflagged pairs outside the risk queue, sampled by the control sample.

Point estimate: the stratified proportion sum_h (N_h / N) * x_h / n_h. Interval: the
posterior predictive of the number of legal errors in the split — per stratum, the x_h observed
errors plus BetaBinomial(N_h - n_h, x_h + 1/2, n_h - x_h + 1/2) for the unreviewed pairs
(Jeffreys prior, so a stratum with 0 errors in 50 still gets an honest upper bound, and a fully
reviewed stratum contributes no uncertainty), summed over strata, divided by N; seeded Monte
Carlo, central interval. A stratum with pairs but no review is not estimable: its pairs are
counted with the rate of the pooled reviewed pairs of the nearest stratum (flagged -> risk
queue) and flagged in `assumptions`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from bbsard_audit.errors import InputError

STRATA = ("risk_queue", "flagged", "unflagged")
FALLBACK = {"flagged": "risk_queue", "unflagged": "risk_queue", "risk_queue": "unflagged"}


@dataclass(frozen=True)
class Stratum:
    name: str
    population: int
    reviewed: int
    legal: int
    rate: float | None
    wilson_low: float | None
    wilson_high: float | None


@dataclass
class Estimate:
    share_legal: float
    ci_low: float
    ci_high: float
    expected_legal_pairs: float
    population: int
    strata: list[Stratum]
    level: float
    draws: int
    seed: int
    method: str = ("stratified proportion; CI = Monte Carlo posterior predictive of the error count "
                   "(Jeffreys Beta + Beta-binomial for unreviewed pairs, finite population)")
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def wilson(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    z = stats.norm.ppf(0.5 + level / 2)
    p = x / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def assign_strata(audit: pd.DataFrame, queue: pd.DataFrame | None) -> pd.Series:
    """Stratum name per audit row (index = question id)."""
    in_risk = audit["id"].isin(queue.loc[queue["queue"] == "risk", "id"]) if queue is not None \
        else pd.Series(False, index=audit.index)
    names = np.where(in_risk, "risk_queue", np.where(audit["flagged"], "flagged", "unflagged"))
    return pd.Series(names, index=audit["id"].to_numpy())


def estimate(audit: pd.DataFrame, verdicts: pd.DataFrame, queue: pd.DataFrame | None = None, *,
             level: float = 0.95, draws: int = 20000, seed: int = 0) -> Estimate:
    strata_of = assign_strata(audit, queue)
    final = verdicts[verdicts["verdict"].isin(["correct", "minor", "legal"])]
    final = final[final["id"].isin(strata_of.index)]
    legal = (final["verdict"] == "legal").to_numpy()
    reviewed_stratum = strata_of.loc[final["id"]].to_numpy()
    rows, assumptions = {}, []
    for name in STRATA:
        n_pop = int((strata_of == name).sum())
        mask = reviewed_stratum == name
        n, x = int(mask.sum()), int(legal[mask].sum())
        low, high = wilson(x, n, level) if n else (None, None)
        rows[name] = Stratum(name, n_pop, n, x, x / n if n else None, low, high)
    rng = np.random.default_rng(seed)
    total = np.zeros(draws)
    point = 0.0
    n_all = len(strata_of)
    for name, s in rows.items():
        if s.population == 0:
            continue
        source = s if s.reviewed else rows[FALLBACK[name]]
        if not source.reviewed:
            raise InputError(f"stratum {name!r} has {s.population} pairs and no reviewed pair "
                             f"to estimate it from (pull verdicts for the control sample first)")
        if source is not s:
            assumptions.append(f"stratum {name} ({s.population} pairs) has no reviewed pair: "
                               f"its error rate is assumed equal to stratum {source.name}'s")
        rate = source.legal / source.reviewed
        unreviewed = s.population - s.reviewed
        p = rng.beta(source.legal + 0.5, source.reviewed - source.legal + 0.5, size=draws)
        total += s.legal + rng.binomial(unreviewed, p)
        point += s.legal + unreviewed * rate
    tail = (1 - level) / 2
    low, high = np.quantile(total / n_all, [tail, 1 - tail])
    return Estimate(share_legal=point / n_all, ci_low=float(low), ci_high=float(high),
                    expected_legal_pairs=point, population=n_all, strata=list(rows.values()),
                    level=level, draws=draws, seed=seed, assumptions=assumptions)
