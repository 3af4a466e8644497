"""The share of legally inaccurate Dutch translations in a whole split, from reviewed pairs.

The design (`Design`) is fixed before any verdict: every pair of the population in exactly one
stratum (the start risk queue, then each split's start-risk bands) and a probability sample in
the bands — the control sample, a simple random sample of n_h of the N_h pairs of each band,
drawn once, so every pair has inclusion probability n_h / N_h > 0 (audit/pipeline.py
`review_queue`). Then, whatever risk batches were reviewed since, chosen however:

- every reviewed pair counts exactly (its verdict is known), wherever it came from;
- the K_h pairs of band h not reviewed yet are estimated from the band's control pairs alone,
  at their rate x_h / m_h. Risk batches are never a sample of anything: a queued batch's pairs
  stay among the K_h until their verdicts arrive, then count exactly;
- the start risk queue is a census stratum: its pairs not reviewed yet are assumed to have the
  rate of its reviewed pairs (missing at random, said in `assumptions`), as are control pairs
  still awaiting a verdict.

Point estimate: found + sum_h K_h x_h / m_h (the post-stratified estimator of the unreviewed
pairs, i.e. the GREG estimator with the risk-band indicators as auxiliary variables; Särndal,
Swensson & Wretman 1992, 7.6). The control pairs sample the whole band while the batches took
its riskiest pairs, so the rate is, if anything, too high for what the batches left: the
estimate of errors left is unbiased (no batch in the band) or conservative, as long as a batch
picks pairs at least as error-prone as its band's average — a ranking no worse than random within
a band, checked against the verdicts (`assumptions`). The control sample is never chosen by a
ranking, so batches may follow any verdict, control verdicts included (`audit learn`).

Interval: the errors left L get a Beta-binomial predictive BetaBinomial(K, n* p + 1/2,
n* (1 - p) + 1/2) with p = L̂ / K and n* the effective sample size that gives it the design
variance V = sum_h K_h (K_h + m_h) s_h^2 / m_h (s_h^2 the unbiased within-band variance; Kish's
(sum w)^2 / sum w^2 with w = K_h / m_h when no error was seen): a Jeffreys interval on an effective
sample size (Korn & Graubard 1998), finite and honest when the sample has 0 errors. Seeded Monte
Carlo, central interval. Coverage on synthetic populations: benchmarks/bench_estimator.md.

Old review queues and format-1 campaigns carry no such design; `legacy_design` reads them as
before (risk queue census, unflagged control strata, unsampled strata borrowing a rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.table import as_id
from bbsard_audit.base.contracts.estimate import Estimate, Missed, Stratum, Target, VerdictsUsed
from bbsard_audit.base.contracts.verdicts import check_known, fingerprint
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.stats import wilson

CENSUS = "risk_queue"


@dataclass(frozen=True)
class Goal:
    """A lead's stopping target (`--target-halfwidth`, `--max-missed`): none set, no Target is reported.
    Out of range is one line: a half-width above 0.5 (of a share: 5 read as 5 points is met by any
    interval) or <= 0, a negative or infinite number of errors left would declare a target met that
    means nothing."""
    target_halfwidth: float | None = None
    max_missed: float | None = None

    def __post_init__(self) -> None:
        h, m = self.target_halfwidth, self.max_missed
        if h is not None and not (math.isfinite(h) and 0 < h <= 0.5):
            raise InputError(f"--target-halfwidth {h:g} is not a share in (0, 0.5] (e.g. 0.02 for 2 points)")
        if m is not None and not (math.isfinite(m) and m >= 0):
            raise InputError(f"--max-missed {m:g} is not a finite number of errors >= 0")

    @property
    def set(self) -> bool:
        return self.target_halfwidth is not None or self.max_missed is not None

    def judge(self, est: Estimate) -> Target | None:
        """The target on an estimate's own figures (its one `errors_left` object), so `annotate estimate` and
        `annotate status` reading estimate.json judge it alike: with a stopping bound (format 3) the bound and
        the confidence sequence's half-width, valid however often checked; else the expected number and the
        interval's half-width. None when no target is set."""
        if not self.set:
            return None
        left = est.errors_left
        sequential = left.stopping_bound is not None and est.cs_low is not None and est.cs_high is not None
        half = (est.cs_high - est.cs_low) / 2 if sequential else (est.ci_high - est.ci_low) / 2
        missed = left.stopping_bound if sequential else left.expected
        met = ((self.target_halfwidth is None or half <= self.target_halfwidth)
               and (self.max_missed is None or missed <= self.max_missed))
        return Target(self.target_halfwidth, self.max_missed, half, left.expected, met,
                      missed_upper=left.stopping_bound if sequential else None, rule=SEQUENTIAL if sequential else None)


SEQUENTIAL = "confidence sequence over batches (union bound): valid when checked after every batch"


@dataclass
class Design:
    """`stratum`: id -> stratum name for every pair of the population; `control`: the probability
    sample; `census`: strata reviewed in full; `borrow`: where an unsampled stratum takes its rate
    (legacy designs); `group`: stratum -> the `unreviewed` group it is reported in."""
    stratum: pd.Series
    control: set[int]
    census: set[str] = field(default_factory=lambda: {CENSUS})
    borrow: dict[str, str] = field(default_factory=dict)
    group: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    method: str | None = None
    listed: tuple[str, ...] = ()  # strata reported even when empty (legacy: risk_queue, flagged)

    def restrict(self, ids) -> "Design":
        keep = self.stratum[self.stratum.index.isin(list(ids))]
        return replace(self, stratum=keep, control=self.control & set(keep.index), notes=list(self.notes))


# ------------------------------------------------------------------------ designs from files

def queue_design(audit: pd.DataFrame, queue: pd.DataFrame, source: str = "review_queue.csv") -> Design:
    """The design of a review queue written with inclusion probabilities (audit --control): its
    census risk queue, and risk bands [stratum_risk_min, stratum_risk_max] per split whose sizes
    must match the audit's (else the audit is not the one the queue was drawn from)."""
    control = queue[queue["queue"] == "control"]
    risk_ids = set(queue.loc[queue["queue"] == "risk", "id"])
    labels = pd.Series(np.where(audit["id"].isin(risk_ids), CENSUS, ""), index=audit["id"].to_numpy(), dtype=object)
    bands = control.groupby("stratum").agg(split=("split", "first"), low=("stratum_risk_min", "min"),
                                           high=("stratum_risk_max", "max"), size=("stratum_size", "max"))
    free = labels.to_numpy() == ""
    split, risk = audit["split"].astype(str).to_numpy(), audit["risk"].to_numpy(float)
    values = labels.to_numpy().copy()
    for name, band in bands.iterrows():
        values[free & (split == str(band["split"])) & (risk >= band["low"]) & (risk <= band["high"])] = name
    labels = pd.Series(values, index=labels.index, dtype=object)
    lost = labels[(labels == "").to_numpy()]
    if len(lost):
        raise InputError(f"pair {lost.index[0]} falls in no stratum of the review queue: give the audit.csv "
                         "the queue was drawn from", file=source, id=as_id(lost.index[0]))
    counts = labels.value_counts()
    for name, band in bands[bands["split"].astype(str).isin(set(split))].iterrows():  # a --split keeps its own
        if int(counts.get(name, 0)) != int(band["size"]):
            raise InputError(f"stratum {name} holds {int(counts.get(name, 0))} pairs of this audit, the queue says "
                             f"{int(band['size'])}: give the audit.csv the queue was drawn from", file=source)
    return Design(labels, set(as_id(i) for i in control["id"]))


def legacy_design(audit: pd.DataFrame, queue: pd.DataFrame | None) -> Design:
    """An old queue (no inclusion probabilities): the risk queue and the flagged rest are census
    strata (the flagged rest borrows the queue's rate), unflagged pairs fall into the control
    strata (`stratum_size`) or `unflagged:other`, which borrows the pooled control rate."""
    ids = audit["id"].to_numpy()
    queue = queue[queue["id"].isin(ids)] if queue is not None else None
    risk_ids = set(queue.loc[queue["queue"] == "risk", "id"]) if queue is not None else set()
    in_risk = audit["id"].isin(risk_ids).to_numpy()
    flagged = audit["flagged"].to_numpy(dtype=bool)
    labels = pd.Series(np.where(in_risk, CENSUS, np.where(flagged, "flagged", "unflagged")), index=ids, dtype=object)
    control = queue[queue["queue"] == "control"] if queue is not None else queue
    notes: list[str] = []
    design = Design(labels, set(as_id(i) for i in control["id"]) if control is not None else set(),
                    census={CENSUS, "flagged"}, borrow={"flagged": CENSUS}, listed=(CENSUS, "flagged"),
                    method="stratified proportion (legacy design: control sample of unflagged pairs)")
    n_unflagged = int((labels == "unflagged").sum())
    if control is not None and len(control) and "stratum_size" in control.columns:
        sub = pd.to_numeric(control.groupby("stratum")["stratum_size"].max(), errors="coerce")
        if sub.notna().all() and sub.sum() <= n_unflagged:
            # the queue gives each control stratum's size, not its members: its control pairs,
            # then unsampled unflagged pairs (by id) up to that size; the rest is unflagged:other
            labels[labels == "unflagged"] = "unflagged:other"
            labels.loc[control["id"].to_numpy()] = ("unflagged:" + control["stratum"].astype(str)).to_numpy()
            free = iter(sorted(labels.index[(labels == "unflagged:other").to_numpy()]))
            for h, size in sub.items():
                name = f"unflagged:{h}"
                fill = [next(free) for _ in range(int(size) - int((labels == name).sum()))]
                labels.loc[fill] = name
            design.borrow["unflagged:other"] = "unflagged:*"
        else:
            notes.append("control strata sizes do not nest in this population (another split?): "
                         "the control sample is pooled as one unflagged stratum")
    if control is None:
        design.census.add("unflagged")  # no queue at all: every reviewed pair stands for its stratum
    design.notes = notes
    design.group = {h: "unflagged" if h.startswith("unflagged") else "flagged" for h in labels.unique()}
    return design


# ------------------------------------------------------------------------ the estimator

@dataclass
class _Cell:
    """One stratum's unreviewed count K and the sample (m reviewed, x legal) that stands for it."""
    name: str
    unreviewed: int
    m: int
    x: int


def _cells(design: Design, known: pd.Series, assumptions: list[str],
           level: float) -> tuple[list[Stratum], list[_Cell]]:
    strata, cells = [], []
    reviewed_control = known[known.index.isin(list(design.control))]
    members = design.stratum.groupby(design.stratum, sort=False).groups
    for name in dict.fromkeys([*design.listed, *sorted(members, key=lambda h: (h not in design.census, h))]):
        ids = members.get(name, pd.Index([]))
        done = known[known.index.isin(ids)]
        unreviewed = len(ids) - len(done)
        if name in design.census:
            m, x = len(done), int(done.sum())
        else:
            sample = reviewed_control[reviewed_control.index.isin(ids)]
            m, x = len(sample), int(sample.sum())
        low, high = wilson(x, m, level) if m else (None, None)
        strata.append(Stratum(str(name), len(ids), m, x, x / m if m else None, low, high,
                              control=int(len(design.control.intersection(ids))), unreviewed=unreviewed,
                              found=len(done), found_legal=int(done.sum())))
        cells.append(_Cell(str(name), unreviewed, m, x))
    _check_ranking(design, known, strata, assumptions)
    by = {c.name: c for c in cells}
    for c in cells:
        if c.unreviewed and not c.m:
            c.m, c.x = _borrow(c, by, design, assumptions)
        elif c.unreviewed and c.name in design.census:
            assumptions.append(f"stratum {c.name}: its {c.unreviewed} pair(s) not reviewed yet are assumed to have the "
                               f"error rate of its {c.m} reviewed pair(s) (review order unrelated to the verdict)")
    return strata, cells


def _check_ranking(design: Design, known: pd.Series, strata: list[Stratum], assumptions: list[str]) -> None:
    """The one assumption the verdicts can check: in a band, pairs reviewed outside the control
    sample (the risk batches) are not less often legal than the band's control pairs."""
    outside = known[~known.index.isin(list(design.control))]
    labels = design.stratum.loc[outside.index]
    for s in strata:
        mine = outside[(labels == s.name).to_numpy()]
        if s.name in design.census or len(mine) < 5 or not s.rate:
            continue
        if mine.mean() < s.rate:
            assumptions.append(f"stratum {s.name}: its {len(mine)} pairs reviewed by risk are legal less often "
                               f"({mine.mean():.0%}) than its control pairs ({s.rate:.0%}): the ranking did no better "
                               "than chance there, so its errors left may be underestimated")


def _borrow(cell: _Cell, by: dict[str, _Cell], design: Design, assumptions: list[str]) -> tuple[int, int]:
    """(m, x) for a stratum with unreviewed pairs and no sample of its own, said in `assumptions`."""
    source = design.borrow.get(cell.name)
    if source in by and by[source].m:
        what, m, x = f"stratum {source}'s", by[source].m, by[source].x
    else:
        pool = [c for c in by.values() if c.name not in design.census and c.m and c is not cell]
        if not pool or cell.name in design.census:
            kind = "flagged" if cell.name in design.census else "unflagged"
            raise InputError(f"stratum {cell.name} has {cell.unreviewed} {kind} pair(s) and none reviewed: pull verdicts "
                             f"for the {'risk queue' if cell.name in design.census else 'control sample'} first")
        what, m, x = "the pooled control sample's", sum(c.m for c in pool), sum(c.x for c in pool)
    assumptions.append(f"stratum {cell.name} ({cell.unreviewed} unreviewed pair(s)) has no reviewed pair to stand for "
                       f"it: its error rate is assumed equal to {what}")
    return m, x


def _predictive(cells: list[_Cell], rng: np.random.Generator, draws: int) -> tuple[float, np.ndarray]:
    """Expected errors left and draws of their number (Jeffreys on the effective sample size)."""
    cells = [c for c in cells if c.unreviewed]
    if not cells:
        return 0.0, np.zeros(draws)
    k, m, x = (np.array([getattr(c, a) for c in cells], dtype=float) for a in ("unreviewed", "m", "x"))
    rate = x / m
    expected, total = float((k * rate).sum()), float(k.sum())
    p = expected / total
    s2 = rate * (1 - rate) * np.where(m > 1, m / np.maximum(m - 1, 1), 1.0)
    variance = float((k * (k + m) * s2 / m).sum())
    binomial = total * p * (1 - p)
    if 0 < p < 1 and variance > binomial:
        n_eff = total * binomial / (variance - binomial)
    elif 0 < p < 1:
        n_eff = 1e9  # the sample pins the rate down: only the binomial spread is left
    else:
        n_eff = total**2 / float((k**2 / m).sum())
    share = rng.beta(n_eff * p + 0.5, n_eff * (1 - p) + 0.5, size=draws)
    return expected, rng.binomial(int(total), share).astype(float)


def check_level(level: float) -> None:
    """A confidence level in (0, 1), else one line (0 or 1 gives an empty or infinite interval, > 1 an inverted one)."""
    if not (math.isfinite(level) and 0 < level < 1):
        raise InputError(f"--level {level:g} is not a confidence level in (0, 1) (e.g. 0.95)")


def final_verdicts(audit: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdicts an estimate uses (an empty one is an unresolved disagreement: not reviewed), checked."""
    if audit.empty:
        raise InputError("no audited pair in this population (wrong --split?)")
    final = verdicts[verdicts["verdict"] != ""]
    check_known(final["verdict"])
    twice = final["id"][final["id"].duplicated()]
    if len(twice):
        raise InputError("duplicate verdict for one question", id=as_id(twice.iloc[0]))
    return final


def estimate(audit: pd.DataFrame, verdicts: pd.DataFrame, queue: pd.DataFrame | None = None, *,
             level: float = 0.95, draws: int = 20000, seed: int = 0, goal: Goal = Goal(),
             design: Design | None = None) -> Estimate:
    """The estimate for the pairs of `audit` (one split) from `verdicts` (verdicts.csv rows; empty
    verdicts are unresolved disagreements and count as not reviewed). The design: `design` (a
    campaign's), else the queue's (`queue_design` when it records inclusion probabilities, else
    `legacy_design`)."""
    check_level(level)
    final = final_verdicts(audit, verdicts)
    if design is None:
        sampled = queue is not None and "stratum_risk_min" in queue.columns and (queue["queue"] == "control").any()
        design = queue_design(audit, queue) if sampled else legacy_design(audit, queue)
    design = design.restrict(audit["id"])
    assumptions = list(design.notes)
    known = pd.Series((final["verdict"] == "legal").to_numpy(), index=final["id"].to_numpy())
    known = known[known.index.isin(design.stratum.index)]
    strata, cells = _cells(design, known, assumptions, level)
    rng = np.random.default_rng(seed)
    found = int(known.sum())
    expected, left = _predictive(cells, rng, draws)
    n_all = len(design.stratum)
    tail = (1 - level) / 2
    low, high = np.quantile((found + left) / n_all, [tail, 1 - tail])
    share = (found + expected) / n_all
    if not low <= share <= high:
        # few reviewed pairs: the Jeffreys prior pulls the draws towards 1/2 while the point is
        # the plain post-stratified estimate. Never print an estimate outside its own interval.
        assumptions.append(f"the Monte Carlo interval [{low:.3f}, {high:.3f}] did not cover the "
                           f"estimate {share:.3f} (few reviewed pairs); it was widened to include it")
        low, high = min(low, share), max(high, share)
    groups: dict[str, list[_Cell]] = {}
    for c in cells:
        groups.setdefault(design.group.get(c.name, c.name), []).append(c)
    unreviewed = [_missed("all", sum(c.unreviewed for c in cells), expected, left, tail)]
    for name, members in groups.items():
        sub_expected, sub_left = _predictive(members, rng, draws) if len(groups) > 1 else (expected, left)
        unreviewed.append(_missed(name, sum(c.unreviewed for c in members), sub_expected, sub_left, tail))
    extra = {"method": design.method} if design.method else {}
    est = Estimate(share_legal=share, ci_low=float(low), ci_high=float(high),
                   expected_legal_pairs=found + expected, population=n_all, strata=strata,
                   level=level, draws=draws, seed=seed, unreviewed=unreviewed,
                   assumptions=assumptions, found_legal=found, verdicts=verdicts_used(final), **extra)
    est.target = goal.judge(est)
    return est


def verdicts_used(final: pd.DataFrame) -> VerdictsUsed:
    """What the estimate records of the final verdicts it read (a report or release compares it)."""
    return VerdictsUsed(*fingerprint(zip(final["id"], final["verdict"])))


def _missed(name: str, unreviewed: int, expected: float, sims: np.ndarray, tail: float) -> Missed:
    low, high = np.quantile(sims, [tail, 1 - tail]) if unreviewed else (0.0, 0.0)
    return Missed(name, int(unreviewed), float(expected), float(low), float(high))
