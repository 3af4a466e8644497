"""A `--next` batch's prediction recalibrated from earlier batches' verdicts (annotations/recalibration.py):
the fit, its record in campaign.json (read back, older batches without it, edited values refused), and the
sequential estimate staying unbiased when every batch's prediction is refitted."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from campaign_fixtures import campaign, cli  # noqa: F401  (campaign: the fixture)

from bbsard_audit.annotations import draw, recalibration
from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.tasks import read_audit
import ppi_study  # benchmarks/ppi_study.py (tests/conftest.py puts benchmarks/ on the path)

RECALIBRATED = draw.DrawRule(recalibrate=True)  # not the default (draw.RECALIBRATE): asked for here


def test_a_raw_score_is_moved_to_the_error_rate_and_a_calibrated_one_left_alone():
    rng = np.random.default_rng(1)
    z = rng.standard_normal(80)
    raw = 1 / (1 + np.exp(-z))                 # a score around 0.5
    truth = 1 / (1 + np.exp(-(-2.5 + z)))      # errors at ~10 %
    y = (rng.random(80) < truth).astype(float)
    fitted = recalibration.fit(raw, y)
    assert fitted.verdicts == 80 and fitted.legal == int(y.sum())
    assert abs(fitted.apply(raw).mean() - y.mean()) < 0.03 < abs(raw.mean() - y.mean())
    assert fitted.a < -1.5
    # the same verdicts with the calibrated prediction: no evidence against the identity, q = p
    assert np.array_equal(recalibration.fit(truth, y).apply(truth), truth)
    # a handful of verdicts moves nothing; no verdict at all is the identity
    assert np.array_equal(recalibration.fit(raw[:4], y[:4]).apply(raw), raw)
    assert recalibration.fit([], []) == recalibration.Recalibration()


def test_a_next_batch_is_recalibrated_on_earlier_draws_only_and_recorded(campaign, tmp_path):  # noqa: F811
    """Verdicts of pairs reviewed by hand (no batch drew them) never enter the fit; the batch's π is the rule's
    on the recalibrated p; the record reads back into the same draw."""
    frame, audit, queue, camp, verdicts = campaign
    start = set(pd.read_csv(queue)["id"])
    outside = sorted(set(frame.sort_values("risk")["id"].tail(30)) - start)[:10]  # likely errors, by hand
    verdicts(start | set(outside))
    state = Campaign.load(camp)
    state.add_batch(read_audit(audit), audit, 14, set(), RECALIBRATED)
    state.save()
    record = json.loads((camp / "campaign.json").read_text())
    batch = record["batches"][1]
    fit = batch["recalibration"]
    truth = frame.set_index("id")["risk"] > 0.3
    assert fit["verdicts"] == len(start) and fit["legal"] == int(truth.loc[sorted(start)].sum())
    assert "recalibration" not in record["batches"][0]
    raw = np.asarray(batch["p"])
    q = draw.floored(recalibration.Recalibration(**fit).apply(raw), batch["p_floor"])
    assert batch["p_floor"] == draw.P_FLOOR
    assert not np.allclose(q, draw.floored(raw, draw.P_FLOOR))  # p_error = 0.8·risk is no probability of `risk > 0.3`: moved
    pi, scale, floor, _ = draw.DrawRule().inclusion(q, 14)
    assert np.allclose(batch["pi"], pi) and batch["scale"] == pytest.approx(scale)
    assert not np.allclose(batch["pi"], draw.DrawRule().inclusion(draw.floored(raw, draw.P_FLOOR), 14)[0])
    ids = sorted(frame["id"])
    d = Campaign.load(camp).batch_draws(ids)[1]
    at = [ids.index(i) for i in batch["pool"]]
    assert np.allclose(d.p[at], q) and np.allclose(d.pi[at], batch["pi"])


def test_a_batch_without_recalibration_or_floor_reads_as_before_and_the_estimate_runs(campaign, tmp_path):  # noqa: F811
    """A batch from before the recalibration and the prediction floor (no `recalibration`, no `p_floor`:
    drawn on its raw p) is read with its raw p; the default batch records its floor and no recalibration."""
    frame, audit, queue, camp, verdicts = campaign
    drawn = set(pd.read_csv(queue)["id"])
    verdicts(drawn)
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(audit), audit, 14, set(), draw.DrawRule(p_floor=0.0))
    drawn |= set(rows["id"])
    verdicts(drawn)
    rows = state.add_batch(read_audit(audit), audit, 14, set())  # the default: floored, no recalibration
    drawn |= set(rows["id"])
    verdicts(drawn)
    rows = state.add_batch(read_audit(audit), audit, 14, set(), RECALIBRATED)
    state.save()
    verdicts(drawn | set(rows["id"]))
    record = json.loads((camp / "campaign.json").read_text())
    for b in record["batches"][:2]:  # as a campaign.json written before the floor (and before seals)
        del b["p_floor"]
        del b["sealed"]
    (camp / "campaign.json").write_text(json.dumps(record))
    assert "recalibration" not in record["batches"][2] and record["batches"][2]["p_floor"] == draw.P_FLOOR
    assert "recalibration" in record["batches"][3]
    ids = sorted(frame["id"])
    d = Campaign.load(camp).batch_draws(ids)
    for k, want in ((1, record["batches"][1]["p"]), (2, draw.floored(record["batches"][2]["p"], draw.P_FLOOR))):
        assert np.array_equal(d[k].p[[ids.index(i) for i in record["batches"][k]["pool"]]], want)
    assert min(record["batches"][2]["p"]) < draw.P_FLOOR  # the floor did raise some pair
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 0, res.output
    assert [b["batch"] for b in json.loads((tmp_path / "e.json").read_text())["by_batch"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("edit, message", [
    (lambda fit: fit.update(a=fit["a"] + 0.5), "batches[1].pi["),
    (lambda fit: fit.update(verdicts=10_000), "batches[1].recalibration: 10000 verdict(s)"),
    (lambda fit: fit.update(b="1"), "batches[1].recalibration = "),
])
def test_an_edited_recalibration_is_one_line_naming_the_batch(campaign, tmp_path, edit, message):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    state.add_batch(read_audit(audit), audit, 14, set(), RECALIBRATED)
    state.save()
    record = json.loads((camp / "campaign.json").read_text())
    edit(record["batches"][1]["recalibration"])
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert message in res.output and "campaign.json" in res.output


def test_the_start_batch_cannot_claim_a_recalibration(campaign, tmp_path):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    record = json.loads((camp / "campaign.json").read_text())
    record["batches"][0]["recalibration"] = {"a": 0.0, "b": 1.0, "verdicts": 0, "legal": 0}
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and "batches[0].recalibration: the start batch" in res.output


def test_refitting_every_batch_on_earlier_verdicts_keeps_the_estimate_unbiased():
    """One population with a raw, badly scaled score; the campaign redrawn 150 times, every batch's
    prediction recalibrated on the verdicts before it: the mean estimate is the truth."""
    frame, y, _ = ppi_study.world(3, 222, 0.1, 1.0)
    # no certain share: with half of each batch certain the point estimate, clipped at the errors found, is
    # pushed up when the draws fall below them (+1.5 errors over 300 redraws here, recalibrated; -0.4 without)
    plan = ppi_study.StudyPlan(rule=draw.DrawRule(recalibrate=True, certain=0.0))
    totals = [ppi_study.new_design(frame, y, "risk", plan, seed)[0][-1].total for seed in range(150)]
    assert abs(np.mean(totals) - y.sum()) < 3 * np.std(totals) / np.sqrt(len(totals))
    # and, with the Poisson draws it was measured with, the refitted prediction leaves smaller residuals
    # (with Brewer's fixed-size draw the raw score's spread shrinks too: 6.1 against 6.4 here)
    poisson = [ppi_study.new_design(frame, y, "risk", ppi_study.StudyPlan(rule=draw.DrawRule(
        recalibrate=True, sampling="poisson")), seed)[0][-1].total for seed in range(150)]
    raw = [ppi_study.new_design(frame, y, "risk", ppi_study.StudyPlan(
        rule=draw.DrawRule(recalibrate=False, sampling="poisson")), seed)[0][-1].total for seed in range(150)]
    assert np.std(poisson) < np.std(raw)


@pytest.mark.parametrize("value, message", [(1.5, "batches[1].p_floor = 1.5 is not in [0, 1)"),
                                            (0.2, "batches[1].pi[")])
def test_an_edited_prediction_floor_is_one_line_naming_the_batch(campaign, tmp_path, value, message):  # noqa: F811
    """A floor out of range is refused as such; one that no longer gives the recorded π names the pair."""
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    state.add_batch(read_audit(audit), audit, 14, set())
    state.save()
    record = json.loads((camp / "campaign.json").read_text())
    record["batches"][1]["p_floor"] = value
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert message in res.output and "campaign.json" in res.output
