"""The estimator's design (issue 14): a control sample with known inclusion probabilities over the
whole population, reviewed pairs counted exactly, risk batches that never count as a sample, a
queued batch that changes nothing, coverage on synthetic populations, and bad campaign files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.annotations.adaptive import Campaign
from bbsard_audit.annotations.estimate import Design, estimate, queue_design
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit
from bbsard_audit.audit.pipeline import review_queue
from bbsard_audit.base.contracts.audit import AUDIT
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.stats import wilson
import estimator_study  # benchmarks/estimator_study.py (tests/conftest.py puts benchmarks/ on the path)
from campaign_fixtures import cli, start_audit, write_start


FORMAT3_KEYS = ("pool", "p", "pi", "prediction", "seed", "scale", "floor", "certain")


def as_format2(camp) -> dict:
    """Rewrite a campaign.json as the format 2 of before probability draws (an older campaign folder)."""
    record = json.loads((camp / "campaign.json").read_text())
    record["format"] = 2
    for b in record["batches"]:
        for key in FORMAT3_KEYS:
            b.pop(key, None)
    (camp / "campaign.json").write_text(json.dumps(record))
    return record


def test_every_pair_has_a_known_positive_inclusion_probability_growing_with_risk():
    frame = start_audit()
    queue, info = review_queue(frame, 10, 20, seed=3)
    control = queue[queue["queue"] == "control"]
    assert len(control) == 20 and set(info["control_allocation"]) == set(control["stratum"])
    design = queue_design(frame, queue)
    strata = design.stratum
    assert set(strata.index) == set(frame["id"])  # every pair in exactly one stratum, the tiny category too
    assert (strata.loc[queue.loc[queue["queue"] == "risk", "id"]] == "risk_queue").all()
    bands = control.groupby("stratum").agg(size=("stratum_size", "max"), n=("id", "size"),
                                           pi=("inclusion_prob", "max"), risk=("stratum_risk_min", "max"))
    assert (bands["size"] == strata.value_counts().loc[bands.index]).all()
    assert np.allclose(bands["pi"], bands["n"] / bands["size"]) and (bands["n"] >= 2).all()
    ordered = bands.sort_values("risk")["pi"].to_numpy()
    assert ordered[-1] > ordered[0] and (np.diff(ordered) >= -1e-12).all()  # denser where the risk is higher
    # the flagged pairs beyond the budget are sampled too: no stratum without a probability sample
    assert strata.loc[frame.loc[frame["flagged"], "id"]].isin(["risk_queue", *bands.index]).all()
    with pytest.raises(InputError, match="falls in no stratum"):  # another audit than the queue's
        queue_design(frame.assign(risk=frame["risk"] + 0.00005), queue)


def test_reviewed_pairs_count_exactly_and_the_rest_is_post_stratified():
    """Two strata by hand: the census risk queue and one band sampled by 4 control pairs (1 legal)."""
    stratum = pd.Series(["risk_queue"] * 4 + ["b"] * 20, index=range(1, 25), dtype=object)
    design = Design(stratum, control={5, 6, 7, 8})
    audit = pd.DataFrame({"id": range(1, 25)})
    verdicts = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6, 7, 8, 20], "verdict": ["legal", "legal", "correct", "minor",
                                                                            "legal", "correct", "correct", "correct",
                                                                            "legal"]})
    est = estimate(audit, verdicts, design=design, draws=4000)
    # found: 2 (queue) + 1 (control) + 1 (id 20, reviewed outside the sample: exact, never a sample)
    assert est.found_legal == 4
    band = next(s for s in est.strata if s.name == "b")  # its sample: the 4 control pairs; found: 5 reviews
    assert (band.reviewed, band.legal, band.rate, band.found, band.found_legal) == (4, 1, 0.25, 5, 2)
    left = {m.name: m for m in est.unreviewed}
    assert left["b"].unreviewed == 15 and left["b"].expected == pytest.approx(15 * 1 / 4)
    assert left["risk_queue"].unreviewed == 0 and (left["risk_queue"].ci_low, left["risk_queue"].ci_high) == (0, 0)
    assert est.share_legal == pytest.approx((4 + 15 / 4) / 24)
    assert est.ci_low >= 4 / 24 and est.ci_low <= est.share_legal <= est.ci_high
    # the per-stratum Wilson bounds are at the estimate's level, as the report and fragility.csv say
    lower = estimate(audit, verdicts, design=design, draws=500, level=0.8)
    band80 = next(s for s in lower.strata if s.name == "b")
    assert (band80.wilson_low, band80.wilson_high) == pytest.approx(wilson(1, 4, 0.8))
    assert band80.wilson_high < band.wilson_high
    # everything reviewed: the census is exact
    everyone = pd.DataFrame({"id": range(1, 25), "verdict": ["legal"] * 6 + ["correct"] * 18})
    census = estimate(audit, everyone, design=design, draws=500)
    assert census.share_legal == census.ci_low == census.ci_high == pytest.approx(6 / 24)


def test_a_ranking_worse_than_chance_inside_a_band_is_said():
    """The one assumption the verdicts can check: risk-reviewed pairs of a band no less often legal
    than its control pairs (else the errors left there may be underestimated)."""
    stratum = pd.Series(["b"] * 40, index=range(1, 41), dtype=object)
    control = pd.DataFrame({"id": range(1, 5), "verdict": ["legal", "legal", "correct", "correct"]})
    for batch_verdict, said in (("legal", False), ("correct", True)):
        batch = pd.DataFrame({"id": range(10, 16), "verdict": batch_verdict})
        est = estimate(pd.DataFrame({"id": range(1, 41)}), pd.concat([control, batch]),
                       design=Design(stratum, control={1, 2, 3, 4}), draws=500)
        assert any("did no better than chance" in a for a in est.assumptions) is said


def test_small_control_sample_estimates_at_once_and_a_queued_batch_changes_nothing(tmp_path):
    frame = start_audit()
    audit, queue = write_start(tmp_path / "run", frame, budget=10, control=14)
    camp = tmp_path / "camp"
    state = Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                           queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue)
    state.save()
    record = as_format2(camp)  # an older campaign folder: read as before, by its own estimator
    assert record["format"] == 2
    assert sorted(i for ids in record["design"]["strata"].values() for i in ids) == sorted(frame["id"])
    start = pd.read_csv(queue)
    truth = dict(zip(frame["id"], frame["risk"] > 0.3))
    verdict = lambda ids: pd.DataFrame({"id": sorted(ids), "verdict": ["legal" if truth[i] else "correct"  # noqa: E731
                                                                       for i in sorted(ids)]})
    verdict(start["id"]).to_csv(camp / "verdicts.csv", index=False)
    out = tmp_path / "e0.json"
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", out, "--max-missed", 0)
    assert res.exit_code == 0, res.output
    first = json.loads(out.read_text())
    assert "target not met: " in res.output and "expected errors left (target: at most 0)" in res.output

    # a batch from a re-run audit that ranks the control pairs highest: they are reviewed, never queued
    control = start.loc[start["queue"] == "control", "id"].tolist()
    rerun = frame.assign(risk=np.where(frame["id"].isin(control), 0.99, frame["risk"]))
    AUDIT.write_file(tmp_path / "rerun.csv", rerun)
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(tmp_path / "rerun.csv"), tmp_path / "rerun.csv", 6, set())
    state.save()
    expect = rerun[~rerun["id"].isin(start["id"])].sort_values(["risk", "id"], ascending=[False, True])["id"].head(6)
    assert rows["id"].tolist() == expect.tolist()
    res = cli("estimate", "--audit", tmp_path / "rerun.csv", "--campaign", camp, "--out", tmp_path / "e1.json")
    assert res.exit_code == 0, res.output
    queued = json.loads((tmp_path / "e1.json").read_text())
    keys = ("share_legal", "ci_low", "ci_high")
    assert [queued[k] for k in keys] == [first[k] for k in keys]  # queued, not reviewed: nothing moves

    # the batch reviewed: its pairs count exactly; each band's rest keeps its control rate
    verdict(set(start["id"]) | set(rows["id"])).to_csv(camp / "verdicts.csv", index=False)
    res = cli("estimate", "--audit", tmp_path / "rerun.csv", "--campaign", camp, "--out", tmp_path / "e2.json")
    assert res.exit_code == 0, res.output
    after = json.loads((tmp_path / "e2.json").read_text())
    assert after["found_legal"] == first["found_legal"] + sum(truth[i] for i in rows["id"])
    before = {s["name"]: s for s in first["strata"]}
    moved = 0.0
    for s in after["strata"]:
        took = sum(i in record["design"]["strata"][s["name"]] for i in rows["id"])
        assert s["unreviewed"] == before[s["name"]]["unreviewed"] - took and s["rate"] == before[s["name"]]["rate"]
        moved += took * (s["rate"] or 0)
    expected = (after["found_legal"] + first["unreviewed"][0]["expected"] - moved) / len(frame)
    assert after["share_legal"] == pytest.approx(expected)


def test_the_coverage_study_small():
    """The 95 % interval covers the truth 93-97 % of the time on 600 synthetic populations of 200 pairs
    (errors 2-30 %, risk useless to strong, control 14-60, batches static or learning from verdicts,
    control verdicts included); no bias. The 1,108-pair study: benchmarks/bench_estimator.py."""
    rows = estimator_study.run(600, seed=3, sizes=(200,), policies=estimator_study.POLICIES, draws=1000)
    assert set(rows["policy"]) == set(estimator_study.POLICIES) and rows["error_rate"].nunique() == 5
    assert 0.93 <= rows["covered"].mean() <= 0.97, rows.groupby("error_rate")["covered"].mean()
    assert abs((rows["estimate"] - rows["truth"]).mean()) < 0.01


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["design"].pop("strata"), "missing key 'design.strata'"),
    (lambda r: r["design"].update(control="12"), "design.control must be a list"),
    (lambda r: r["batches"][0].update(risk=[1.5]), "batches[0].risk[0] = 1.5 is not int"),
    (lambda r: r.update(format=4), "not a campaign file (format 1, 2 or 3): key 'format'"),
])
def test_an_edited_campaign_file_is_one_line_and_nothing_is_written(tmp_path, edit, message):
    audit, queue = write_start(tmp_path / "run", start_audit())
    camp = tmp_path / "camp"
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue).save()
    record = json.loads((camp / "campaign.json").read_text())
    edit(record)
    (camp / "campaign.json").write_text(json.dumps(record))
    pd.DataFrame({"id": [1], "verdict": ["legal"]}).to_csv(camp / "verdicts.csv", index=False)
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "campaign.json" in res.output and message in res.output
    assert not (tmp_path / "e.json").exists()


def test_a_pair_in_two_strata_and_verdicts_outside_the_population_are_one_line(tmp_path):
    audit, queue = write_start(tmp_path / "run", start_audit())
    camp = tmp_path / "camp"
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue).save()
    good = (camp / "campaign.json").read_text()
    record = json.loads(good)
    first, second = list(record["design"]["strata"])[:2]
    record["design"]["strata"][second].append(record["design"]["strata"][first][0])
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--verdicts", queue, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and f"id {record['design']['strata'][first][0]}: design.strata: pair in two strata" in res.output
    (camp / "campaign.json").write_text(good)
    pd.DataFrame({"id": [1, 5000], "verdict": ["legal", "correct"]}).to_csv(tmp_path / "v.csv", index=False)
    for where in (["--campaign", camp], ["--queue", queue]):
        res = cli("estimate", "--audit", audit, *where, "--verdicts", tmp_path / "v.csv", "--out", tmp_path / "e.json")
        assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
        assert "v.csv, row 3, id 5000: verdict for a question that is not in the" in res.output
    assert not (tmp_path / "e.json").exists()
