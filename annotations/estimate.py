"""The share of legally inaccurate Dutch translations in a whole split, from a reviewed sample.

Design (the audit's review queue): the riskiest flagged pairs (`queue=risk`) and a random
control sample of unflagged pairs (`queue=control`, allocated over the audit's control strata,
e.g. split/category, with `stratum_size`). The split's pairs (audit.csv) fall into strata:

- `risk_queue`: pairs in the risk queue — reviewed as a census (all of them, ideally);
- `flagged`: flagged pairs outside the risk queue (none when the budget covers every flag);
- `unflagged:<stratum>`: each control stratum (size from the queue), sampled by its control
  pairs, and `unflagged:other` for unflagged pairs of strata the control did not reach (or one
  `unflagged` stratum when the queue has no stratum sizes).

Point estimate: the stratified proportion sum_h (N_h / N) * x_h / n_h. Interval: the
posterior predictive of the number of legal errors in the split, over three groups (risk queue,
flagged rest, all unflagged) — per group the x observed errors plus
BetaBinomial(N - n, r n_eff + 1/2, (1 - r) n_eff + 1/2) for the unreviewed pairs, r the group's
(stratified) rate and n_eff its Kish effective sample size (= n without sub-strata): a Jeffreys
prior, so 0 errors in 50 still gets an honest upper bound and a fully reviewed group adds no
uncertainty; seeded Monte Carlo, central interval. A stratum with pairs but no reviewed pair borrows a rate — `flagged`
from the risk queue (an overstatement: the queue holds the riskiest), `unflagged:*` from the
pooled control sample — and says so in `assumptions`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bbsard_audit.contracts.estimate import Estimate, Stratum
from bbsard_audit.contracts.verdicts import check_known
from bbsard_audit.errors import InputError
from bbsard_audit.stats import wilson


def _labels(audit: pd.DataFrame, queue: pd.DataFrame | None) -> tuple[pd.Series, dict[str, int], list[str]]:
    """Stratum label of every reviewable pair, population size of every stratum, notes.

    Control pairs are split into the audit's own control strata (`stratum`, with their
    `stratum_size`) when the queue carries them and they nest in this population; unflagged
    pairs of strata the control sample did not reach form `unflagged:other`.
    """
    ids = audit["id"].to_numpy()
    queue = queue[queue["id"].isin(ids)] if queue is not None else None
    risk_ids = set(queue.loc[queue["queue"] == "risk", "id"]) if queue is not None else set()
    in_risk = audit["id"].isin(risk_ids).to_numpy()
    flagged = audit["flagged"].to_numpy(dtype=bool)
    labels = pd.Series(np.where(in_risk, "risk_queue", np.where(flagged, "flagged", "unflagged")), index=ids)
    sizes = {"risk_queue": int(in_risk.sum()), "flagged": int((~in_risk & flagged).sum())}
    n_unflagged = int((~in_risk & ~flagged).sum())
    notes = []
    control = queue[queue["queue"] == "control"] if queue is not None else None
    if control is not None and len(control) and "stratum_size" in control.columns:
        sub = pd.to_numeric(control.groupby("stratum")["stratum_size"].max(), errors="coerce")
        if sub.notna().all() and sub.sum() <= n_unflagged:
            labels[labels == "unflagged"] = "unflagged:other"
            labels.loc[control["id"].to_numpy()] = ("unflagged:" + control["stratum"].astype(str)).to_numpy()
            sizes |= {f"unflagged:{k}": int(v) for k, v in sub.items()}
            sizes["unflagged:other"] = n_unflagged - int(sub.sum())
            return labels, sizes, notes
        notes.append("control strata sizes do not nest in this population (another split?): "
                     "the control sample is pooled as one unflagged stratum")
    sizes["unflagged"] = n_unflagged
    return labels, sizes, notes


def _groups(by: dict[str, Stratum], assumptions: list[str]) -> list[tuple[int, int, int, float, float]]:
    """(population, reviewed, legal, rate, effective n) for the risk queue, the flagged rest and
    all unflagged pairs together. The unflagged control strata enter through their stratified rate
    and Kish's effective sample size (sum w)^2 / sum w^2 with w = N_h / n_h, so many small strata
    do not each add a prior's worth of phantom errors to the interval."""
    out = []
    risk, flagged = by["risk_queue"], by["flagged"]
    if risk.population or flagged.population:
        if not (risk.reviewed or flagged.reviewed):
            raise InputError(f"{risk.population + flagged.population} flagged pairs and none reviewed: "
                             "pull verdicts for the risk queue first")
    for s in (risk, flagged):
        if not s.population:
            continue
        if s.reviewed:
            out.append((s.population, s.reviewed, s.legal, s.legal / s.reviewed, s.reviewed))
        else:
            src = risk if s is flagged else flagged
            assumptions.append(f"stratum {s.name} ({s.population} pairs) has no reviewed pair: its error "
                               f"rate is assumed equal to stratum {src.name}'s")
            out.append((s.population, 0, 0, src.legal / src.reviewed, src.reviewed))
    unflagged = [s for s in by.values() if s.name.startswith("unflagged") and s.population]
    if unflagged:
        sampled = [s for s in unflagged if s.reviewed]
        if not sampled:
            raise InputError(f"{sum(s.population for s in unflagged)} unflagged pairs and none reviewed: "
                             "pull verdicts for the control sample first")
        n, x = sum(s.reviewed for s in sampled), sum(s.legal for s in sampled)
        for s in unflagged:
            if not s.reviewed:
                assumptions.append(f"stratum {s.name} ({s.population} pairs) has no reviewed pair: its "
                                   f"error rate is assumed equal to the pooled control sample's")
        pop = sum(s.population for s in unflagged)
        rate = sum(s.population * (s.legal / s.reviewed if s.reviewed else x / n) for s in unflagged) / pop
        w = np.concatenate([np.full(s.reviewed, s.population / s.reviewed) for s in sampled])
        out.append((pop, n, x, rate, float(w.sum() ** 2 / (w**2).sum())))
    return out


def estimate(audit: pd.DataFrame, verdicts: pd.DataFrame, queue: pd.DataFrame | None = None, *,
             level: float = 0.95, draws: int = 20000, seed: int = 0) -> Estimate:
    """The estimate for the pairs of `audit` (one split) from `verdicts` (verdicts.csv rows; empty
    verdicts are unresolved disagreements and count as not reviewed)."""
    if audit.empty:
        raise InputError("no audited pair in this population (wrong --split?)")
    final = verdicts[verdicts["verdict"] != ""]
    check_known(final["verdict"])
    twice = final["id"][final["id"].duplicated()]
    if len(twice):
        raise InputError("duplicate verdict for one question", id=int(twice.iloc[0]))
    labels, sizes, assumptions = _labels(audit, queue)
    final = final[final["id"].isin(labels.index)]
    unflagged = labels.index[labels.str.startswith("unflagged").to_numpy()]
    if queue is not None and not set(unflagged) <= set(final["id"]):
        # An unflagged pair reviewed outside the control sample was not drawn at random: it cannot
        # stand for its stratum (counting it put 52 reviews into a 3-pair stratum once). A full
        # census of the unflagged pairs needs no sampling design and keeps every review.
        in_design = final["id"].isin(queue["id"]).to_numpy() | (labels.loc[final["id"]] == "flagged").to_numpy()
        if (~in_design).any():
            assumptions.append(f"{int((~in_design).sum())} verdict(s) for unflagged pairs outside the control "
                               "sample were not used: they were not drawn at random")
        final = final[in_design]
    reviewed = pd.DataFrame({"stratum": labels.loc[final["id"]].to_numpy(),
                             "legal": (final["verdict"] == "legal").to_numpy()})
    counts = reviewed.groupby("stratum")["legal"].agg(["size", "sum"])
    strata = []
    for name, n_pop in sizes.items():
        n, x = (int(counts.loc[name, "size"]), int(counts.loc[name, "sum"])) if name in counts.index else (0, 0)
        low, high = wilson(x, n, level) if n else (None, None)
        strata.append(Stratum(name, n_pop, n, x, x / n if n else None, low, high))
    groups = _groups({s.name: s for s in strata}, assumptions)
    rng = np.random.default_rng(seed)
    total = np.zeros(draws)
    point = 0.0
    for pop, n, x, rate, n_eff in groups:
        p = rng.beta(rate * n_eff + 0.5, (1 - rate) * n_eff + 0.5, size=draws)
        total += x + rng.binomial(pop - n, p)
        point += pop * rate
    n_all = len(labels)
    tail = (1 - level) / 2
    low, high = np.quantile(total / n_all, [tail, 1 - tail])
    share = point / n_all
    if not low <= share <= high:
        # The Jeffreys prior pulls small strata towards 1/2 while the point estimate is the plain
        # stratified proportion; with few reviews the two can part. Never print an estimate
        # outside its own interval: widen the interval to it and say so.
        assumptions.append(f"the Monte Carlo interval [{low:.3f}, {high:.3f}] did not cover the "
                           f"stratified estimate {share:.3f} (few reviewed pairs); it was widened to include it")
        low, high = min(low, share), max(high, share)
    return Estimate(share_legal=share, ci_low=float(low), ci_high=float(high),
                    expected_legal_pairs=point, population=n_all, strata=strata,
                    level=level, draws=draws, seed=seed, assumptions=assumptions)
