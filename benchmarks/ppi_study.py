"""Simulation study of the campaign design: probability draws + prediction-powered estimate
against today's design (the riskiest pairs + a control sample, post-stratified estimate).

A population (benchmarks/estimator_study.py `population`: N pairs, latent z, errors y ~ Bernoulli(sigmoid(a +
q z + u_cluster)), q from useless 0 to strong 3) gets a prediction: `p_error` (calibrated: the
error probability given z, its AUC set by q) or the raw `risk` (sigmoid(z + noise), uncalibrated).
New design: the start queue is the audit's control sample (`review_queue`, risk queue of `start`),
then `--next batch` Poisson draws (annotations/draw.py) until `budget` reviews; the estimate and the
confidence sequence after each batch. Today: the `budget - control` riskiest pairs + `control`
control pairs, the format-2 estimator (annotations/estimate.py). Stopping: after every batch a
lead stops once the confidence sequence's bound of errors left is <= `max_missed`; a false stop is
one where more than `max_missed` errors are in fact left.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from bbsard_audit.annotations import draw, recalibration
from bbsard_audit.annotations.estimate import estimate as poststratified, queue_design
from bbsard_audit.audit.pipeline import review_queue
from estimator_study import population


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def world(seed: int, n: int, rate: float, quality: float):
    """(frame with `p_error`, truth y as bool, AUC of p_error)."""
    rng = np.random.default_rng(seed)
    frame, y = population(rng, n, rate, quality)
    # population() draws y from sigmoid(a + q z + u); the calibrated prediction is its mean given z
    # (the cluster effect u is what no per-pair signal can know), its intercept matched to the rate the
    # population is drawn at, never to the errors it holds (no audit knows its realised count: matching
    # it made the predictions' sum the true total)
    lin = quality * np.log(frame["risk"].to_numpy() / (1 - frame["risk"].to_numpy()))
    low, high = -20.0, 10.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if _sigmoid(mid + lin).mean() < rate else (low, mid)
    frame["p_error"] = np.clip(_sigmoid(low + lin), 0, 1)
    pos, neg = frame["p_error"][y].to_numpy(), frame["p_error"][~y].to_numpy()
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()) \
        if len(pos) and len(neg) else float("nan")
    return frame, y, auc


@dataclass(frozen=True)
class StudyPlan:
    """One simulated campaign's shape: population size, start control sample, `--next` batches to the
    budget, the draw rule, the stopping target."""
    n: int = 222
    control: int = 14
    batch: int = 14
    budget: int = 70
    rule: draw.DrawRule = draw.DrawRule()
    max_missed: float = 2.0
    level: float = 0.95


def new_design(frame: pd.DataFrame, y: np.ndarray, prediction: str, plan: StudyPlan, seed: int):
    """The campaign as `annotate push --campaign` + `--next batch` draws it, every batch reviewed at once."""
    queue, _ = review_queue(frame, 0, plan.control, seed)
    design = queue_design(frame, queue)
    ids = frame["id"].to_numpy()
    p = frame[prediction].to_numpy(float)
    drawn0 = np.isin(ids, queue["id"].to_numpy())
    pi0 = draw.start_inclusion(design.stratum.loc[ids], design.control, design.census)
    draws = [draw.BatchDraw(0, np.ones(len(ids), bool), pi0, plan.rule.prediction(p), drawn0)]
    seen = drawn0.copy()
    k = 0
    while seen.sum() < plan.budget and not seen.all():
        k += 1
        pool = ~seen
        n = min(plan.batch, plan.budget - int(seen.sum()))
        q = plan.rule.prediction(p, recalibration.fit(p[seen], y[seen]) if plan.rule.recalibrate else None)
        pi = np.zeros(len(ids))
        pi[pool], _, _, _ = plan.rule.inclusion(q[pool], n)
        drawn = np.zeros(len(ids), bool)
        drawn[pool] = plan.rule.draw(pi[pool], seed, k)
        draws.append(draw.BatchDraw(k, pool, pi, np.where(pool, q, 0.0), drawn, fixed=plan.rule.sampling == "brewer"))
        seen |= drawn
    steps = draw.estimate(draws, y.astype(float), seen, np.ones(len(ids), bool), plan.level)
    return steps, draws


def today(frame: pd.DataFrame, y: np.ndarray, *, control: int, budget: int, seed: int) -> dict:
    top = frame["risk"].rank(method="first", ascending=False) <= budget - control  # the riskiest, as batches take them
    queue, _ = review_queue(frame.assign(flagged=top), budget - control, control, seed)
    reviewed = queue["id"].to_numpy()
    verdicts = pd.DataFrame({"id": reviewed, "verdict": np.where(y[reviewed - 1], "legal", "correct")})
    est = poststratified(frame.assign(flagged=top), verdicts, queue, draws=2000, seed=seed)
    return {"estimate": est.share_legal, "ci_low": est.ci_low, "ci_high": est.ci_high,
            "found": int(y[reviewed - 1].sum())}


def one(seed: int, rate: float, quality: float, prediction: str, plan: StudyPlan = StudyPlan(),
        with_today: bool = True, stopping: bool = True) -> dict:
    frame, y, auc = world(seed, plan.n, rate, quality)
    return {"seed": seed, "rate": rate, "quality": quality, "prediction": prediction, "auc": auc,
            **campaign(frame, y, prediction, plan, seed, with_today=with_today, stopping=stopping)}


def campaign(frame: pd.DataFrame, y: np.ndarray, prediction: str, plan: StudyPlan, seed: int, *,
             with_today: bool = True, stopping: bool = True) -> dict:
    """One campaign on a population (`frame` with ids 1..N in order, errors `y`): the new design's estimate
    at the budget, its interval, errors found; the stopping rule run to the end; today's design beside it."""
    n = len(frame)
    truth = float(y.mean())
    steps, draws = new_design(frame, y, prediction, plan, seed)
    last = steps[-1]
    found = int(y[np.any([d.drawn for d in draws], axis=0)].sum())
    row = {"truth": truth, "estimate": last.total / n, "ci_low": last.ci[0] / n, "ci_high": last.ci[1] / n,
           "covered": last.ci[0] / n <= truth <= last.ci[1] / n, "width": (last.ci[1] - last.ci[0]) / n,
           "reviewed": last.reviewed, "found": found}
    if stopping:
        row |= _stop(frame, y, prediction, plan, seed)
    if with_today:
        t = today(frame, y, control=plan.control, budget=plan.budget, seed=seed)
        row |= {f"today_{k}": v for k, v in t.items()} | {
            "today_covered": t["ci_low"] <= truth <= t["ci_high"], "today_width": t["ci_high"] - t["ci_low"]}
    return row


def _stop(frame, y, prediction, plan: StudyPlan, seed: int) -> dict:
    """A campaign run to the end, the rule checked after every batch: stop once the confidence sequence
    bounds the errors left by `max_missed`; a false stop leaves more in fact."""
    max_missed = plan.max_missed
    steps, draws = new_design(frame, y, prediction, replace(plan, budget=len(frame)), seed + 7_000_000)
    seen = np.zeros(len(frame), bool)
    for s, d in zip(steps, draws):
        seen |= d.drawn
        if s.cs[1] - float(y[seen].sum()) <= max_missed:
            return {"stopped_at": s.reviewed, "false_stop": bool(y[~seen].sum() > max_missed)}
    return {"stopped_at": None, "false_stop": False}


def run(n: int, seed: int = 0, predictions=("p_error", "risk"), **kw) -> pd.DataFrame:
    """`n` populations over the grid: error rate 2-30 %, quality useless (0) to strong (3)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rows.append(one(seed * 1_000_003 + i, float(rng.choice([0.02, 0.05, 0.1, 0.2, 0.3])),
                        float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0])), str(rng.choice(list(predictions))), **kw))
    return pd.DataFrame(rows)
