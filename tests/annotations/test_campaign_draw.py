"""Issue 32: a `--next` batch is a fixed-size draw (Brewer's πps) of exactly its size, so a campaign never
reviews more than its budget; its inclusion probabilities are the recorded π; older (Poisson) campaigns
read and check as before; a partial oracle's estimate moves; bad input is one line, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from campaign_fixtures import campaign, cli  # noqa: F401 (campaign: the fixture)

from bbsard_audit.annotations import draw
from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.tasks import read_audit
from bbsard_audit.base.errors import InputError
import ppi_study  # benchmarks/ppi_study.py (tests/conftest.py puts benchmarks/ on the path)


def _pool(n: int = 60, seed: int = 0) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).beta(0.6, 4, n))[::-1]


@pytest.mark.parametrize("certain", [0.0, 0.5])
def test_a_fixed_size_draw_takes_exactly_its_size_with_the_recorded_inclusion_probabilities(certain):
    """20,000 Brewer draws of 14 from 60 pairs: every draw exactly 14, each pair drawn at its π (within
    4.5 binomial sd; an error in the step probabilities moves the middle pairs by 10+ sd)."""
    p = _pool()
    pi, _, _, _ = draw.DrawRule(certain=certain).inclusion(draw.floored(p, draw.P_FLOOR), 14)
    assert 0 < (pi < 1).sum() and pi.sum() == pytest.approx(14)
    runs = 20_000
    counts, sizes = np.zeros(len(p)), set()
    for r in range(runs):
        picked = draw.brewer_draw(pi, r, 1)
        counts += picked
        sizes.add(int(picked.sum()))
    assert sizes == {14}
    sd = np.sqrt(pi * (1 - pi) / runs) + 1e-12
    assert (np.abs(counts / runs - pi) <= 4.5 * sd + 1e-9).all(), np.abs(counts / runs - pi).max()
    assert (counts[pi == 1] == runs).all()


def test_the_fixed_size_variance_matches_the_spread_of_the_estimate():
    """Over repeated Brewer draws the Hájek-Deville variance averages the estimate's real variance (within
    20 %), where the Poisson formula would overstate it (the batch size does not vary)."""
    rng = np.random.default_rng(1)
    p = _pool(120, 2)
    y = (rng.random(120) < np.clip(p * 1.3, 0, 1)).astype(float)
    pi, _, _ = draw.inclusion(p, 20, tradeoff=draw.TRADEOFF)
    pi = np.clip(pi, 0.05, 1)
    pi *= 20 / pi.sum()
    every = np.ones(120, bool)
    totals, vhats, poisson = [], [], []
    for seed in range(3000):
        drawn = draw.brewer_draw(pi, seed, 1)
        e, w = (y - p)[drawn], pi[drawn]
        totals.append(p.sum() + (e / w).sum())
        vhats.append(draw.fixed_size_variance(e, w))
        poisson.append(((1 - w) / w**2 * e**2).sum())
    assert abs(np.mean(totals) - y.sum()) < 4 * np.std(totals) / np.sqrt(len(totals))  # unbiased
    assert np.mean(vhats) == pytest.approx(np.var(totals), rel=0.2)
    d = draw.BatchDraw(1, every, pi, p, draw.brewer_draw(pi, 0, 1), fixed=True)
    assert draw.estimate([d], y, d.drawn, every)[0].total == pytest.approx(totals[0])


@pytest.mark.parametrize("batch,control,budget", [(14, 14, 70), (15, 14, 70), (20, 3, 70), (14, 0, 50)])
def test_a_campaign_never_reviews_more_pairs_than_its_budget(batch, control, budget):
    """The study's campaigns (as `annotate push --next` draws them) review exactly their budget, never more:
    the Poisson draws of before reviewed 72-73 for 70."""
    frame, y, _ = ppi_study.world(5, 222, 0.1, 2.0)
    plan = ppi_study.StudyPlan(control=max(control, 1), batch=batch, budget=budget)
    reviewed = [ppi_study.campaign(frame, y, "p_error", plan, seed, with_today=False, stopping=False)["reviewed"]
                for seed in range(1, 9)]
    assert max(reviewed) <= budget and min(reviewed) == budget, reviewed
    old = ppi_study.StudyPlan(control=max(control, 1), batch=batch, budget=budget,
                              rule=draw.DrawRule(sampling="poisson"))
    assert any(ppi_study.campaign(frame, y, "p_error", old, seed, with_today=False, stopping=False)["reviewed"] != budget
               for seed in range(1, 9))  # what the fixed size fixes


def test_a_next_batch_is_exactly_its_size_and_records_its_sampling(campaign):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    for n in (14, 9, 1):
        rows = state.add_batch(read_audit(audit), audit, n, set())
        assert len(rows) == n
    state.save()
    record = json.loads((camp / "campaign.json").read_text())
    assert [b.get("sampling") for b in record["batches"]] == [None, "brewer", "brewer", "brewer"]
    assert all(d.fixed for d in Campaign.load(camp).batch_draws(sorted(frame["id"]))[1:])
    record["batches"][1]["risk"] = record["batches"][1]["risk"][:-1]  # an edited batch: one pair fewer
    (camp / "campaign.json").write_text(json.dumps(record))
    with pytest.raises(InputError, match=r"batches\[1\]: a fixed-size \(brewer\) batch draws exactly sum\(pi\) = 14"):
        Campaign.load(camp)


def test_a_poisson_campaign_of_before_still_reads_checks_and_estimates_as_before(campaign, tmp_path):  # noqa: F811
    """A format-3 campaign whose `--next` batches were Poisson draws (no `sampling` key: every one before issue
    32) loads, its π checks, and its estimate is the Poisson one, byte for byte whether the key is absent
    or says poisson; an unknown sampling is one line."""
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    state.add_batch(read_audit(audit), audit, 14, set(), draw.DrawRule(sampling="poisson"))
    state.save()
    verdicts(set(pd.read_csv(queue)["id"]) | set(json.loads((camp / "campaign.json").read_text())["batches"][1]["risk"]))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "with.json")
    assert res.exit_code == 0, res.output
    record = json.loads((camp / "campaign.json").read_text())
    assert record["batches"][1]["sampling"] == "poisson"
    del record["batches"][1]["sampling"]
    del record["batches"][1]["sealed"]  # a batch of before: neither its sampling nor a seal recorded
    (camp / "campaign.json").write_text(json.dumps(record))
    assert not any(d.fixed for d in Campaign.load(camp).batch_draws(sorted(frame["id"])))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "without.json")
    assert res.exit_code == 0, res.output
    keep = lambda e: {k: v for k, v in e.items() if k not in ("created", "inputs")}  # noqa: E731
    assert keep(json.loads((tmp_path / "with.json").read_text())) == keep(json.loads((tmp_path / "without.json").read_text()))
    record["batches"][1]["sampling"] = "systematic"
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "bad.json")
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "sampling = 'systematic'" in res.output
    assert not (tmp_path / "bad.json").exists()


def test_a_pool_with_no_prediction_above_the_floor_is_one_line_and_nothing_is_written(campaign, tmp_path):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    flat = tmp_path / "flat.csv"
    read_audit(audit).assign(p_error=0.004).to_csv(flat, index=False)
    before = (camp / "campaign.json").read_bytes()
    with pytest.raises(InputError, match="no pair of the batch's pool has a prediction above the floor 0.01"):
        Campaign.load(camp).add_batch(read_audit(flat), flat, 14, set())
    assert (camp / "campaign.json").read_bytes() == before


def test_next_zero_is_one_line_before_any_server_or_file_is_touched(campaign):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    before = (camp / "campaign.json").read_bytes()
    res = cli("push", "--audit", audit, "--project", "p", "--campaign", camp, "--next", "0")
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "--next must be >= 1, not 0" in res.output
    assert (camp / "campaign.json").read_bytes() == before


def test_simulation_bad_budget_and_batch_are_one_line_each():
    from bbsard_audit.app.simulation import SimulationOptions

    with pytest.raises(InputError, match=r"--reviews 10 is smaller than the start batch \(--control 14\)"):
        SimulationOptions(budget=10, control=14).check()
    with pytest.raises(InputError, match="--batch and --seeds must be at least 1"):
        SimulationOptions(batch=0).check()


def test_campaign_simulate_with_a_partial_oracle_estimates_the_pairs_it_covers_and_moves(embedding_cache):
    """A previous campaign's verdicts as the oracle (--allow-partial-oracle): later rounds draw only pairs it
    has a verdict for, the estimate is of those pairs (named in the sidecar), it moves from round to round,
    and it never ends below the errors confirmed (the estimate froze at one value below them, issue 32)."""
    from bbsard_audit.app.simulation import SimulationOptions, clustered_oracle, simulate
    from bbsard_audit.base.dataset import load_dataset

    syn = clustered_oracle(load_dataset("sample", with_corpus=False), "all", clusters=3, per_cluster=3,
                           scattered=3, seed=0)
    table = syn.oracle.sort_values("verdict").iloc[::2]  # half the rows, legal ones included
    covered = len(table)
    from bbsard_audit.app.simulation import Oracle
    oracle = Oracle(table.rename(columns={"annotators": "annotator"}), source="partial")
    result = simulate(syn.dataset, oracle=oracle, options=SimulationOptions(
        glossary=syn.glossary, split="all", batch=4, budget=20, control=4, seed=0, learning=False,
        allow_partial=True, cache_dir=embedding_cache))
    curve = result.curve
    assert result.meta["estimate_population"] == covered < result.meta["n_pairs"]
    est = curve["estimate"].dropna()
    assert est.nunique() > 1
    last = curve.iloc[-1]
    assert last["ci_low"] * covered >= last["found_legal"] - 1e-9
    assert last["estimate"] * covered >= last["found_legal"] - 1e-9
    assert result.meta["tradeoff"]["expected_found_ranking"] >= result.meta["tradeoff"]["expected_found_draw"]
