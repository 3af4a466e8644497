"""Which estimator an estimate uses, picked from the files a user gives (a campaign folder, a queue,
verdicts): the one place that decides it, so `annotate estimate`, `annotate status` and a library caller
get the same estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.table import as_id
from bbsard_audit.base.contracts.verdicts import Verdicts
from bbsard_audit.base.errors import InputError

from .estimate import Goal, estimate as compute_estimate, verdicts_used
from .tasks import QUEUE_COLUMNS, read_audit


def check_files(verdicts: Optional[Path], queue: Optional[Path], campaign: Optional[Path]) -> None:
    """Which files an estimate reads: a campaign folder or a queue, and verdicts (a campaign holds its own);
    one line otherwise, before anything is read."""
    if campaign is not None and queue is not None:
        raise InputError("give --campaign or --queue, not both")
    if campaign is None and verdicts is None:
        raise InputError("give --verdicts (or --campaign)")


def estimate_files(audit: Path, verdicts: Optional[Path], queue: Optional[Path], campaign: Optional[Path], split: str,
              level: float, seed: int, goal: Goal):
    """The estimate of `audit` + verdicts and the inputs its sidecar records: a campaign started now by
    its draws (prediction-powered), an older campaign by its own format's estimator, a --queue by its
    post-stratified design. The command only parses and prints; the choice is made here."""
    check_files(verdicts, queue, campaign)
    population = read_audit(audit)
    inputs: dict = {"audit": audit, "queue": queue}  # recorded by name + sha256 (write_sidecar)
    design = plan = None
    where = "the audit"
    if campaign is not None:
        from .adaptive import VERDICTS_FILE, Campaign

        state = Campaign.load(campaign)  # its draws re-derived and checked (adaptive._check_drawn)
        population = state.design_population(population, audit)
        if state.drawn:
            state.check_predictions(population, audit)
        verdicts = verdicts or campaign / VERDICTS_FILE
        inputs |= {"campaign": campaign, "batches": len(state.record["batches"])}
        where = "the campaign's population"
    elif queue is not None:
        design = read_audit(queue, QUEUE_COLUMNS)
    known = state.population if campaign is not None else population["id"]
    judged = Verdicts.read(verdicts, known, where, layout=Layout.of(audit)).frame()
    if campaign is not None:
        if state.sampled:
            plan = state.design()
        else:
            design = state.design_queue()
    population = _in_split(population, split, audit)
    if campaign is not None and state.drawn:
        result = _drawn_estimate(population, judged, state, level, goal)
        return result, inputs | {"verdicts": verdicts, "prediction": result.design.prediction}
    result = compute_estimate(population, judged, design, level=level, seed=seed, design=plan, goal=goal)
    if campaign is not None:  # an older campaign.json: read with the estimator of its own format
        _older_format(result, state.record["format"])
    return result, inputs | {"verdicts": verdicts}


def _in_split(population: pd.DataFrame, split: str, audit: Path) -> pd.DataFrame:
    if split == "all":
        return population
    splits = sorted(population["split"].unique())
    population = population[population["split"] == split]
    if population.empty:
        raise InputError(f"no audited pair in split {split!r} (the audit has: {', '.join(splits) or 'none'})",
                         file=str(audit))
    return population


def _drawn_estimate(population: pd.DataFrame, judged: pd.DataFrame, state, level: float, goal: Goal):
    """A format-3 campaign's prediction-powered estimate, saying which pairs its pools left out."""
    from .draw import campaign_estimate

    result = campaign_estimate(population, judged, state, level=level, goal=goal)
    result.verdicts = verdicts_used(judged)
    for batch, n in state.blocked(set(population["id"].map(as_id)), set(judged["id"].map(as_id))):
        result.assumptions.append(f"batch {batch}'s pool left out {n} pair(s) of this population that have no "
                                  "final verdict (not in the audit it was drawn from, or annotated but unresolved "
                                  "when it was drawn): it enters this estimate once they have one, else only an "
                                  "estimate without them (the --split of its audit)")
    return result


def _older_format(result, fmt: int) -> None:
    """An older campaign's estimate says its design and why it is not a draw's."""
    from bbsard_audit.base.contracts.estimate import DesignInfo

    result.design = DesignInfo(fmt, f"post-stratified (campaign format {fmt}, before probability draws)")
    result.assumptions.append(f"campaign.json is format {fmt} (its batches are not probability draws): read "
                              "with that format's own estimator; a new campaign draws every batch")
