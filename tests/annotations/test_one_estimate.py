"""Issues 32 (items 4, 6) and 33 (estimates): one estimate object of the errors left, read by every
command and the report; stopping targets and levels in range; stale estimates; re-derived draws."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from campaign_fixtures import campaign, cli  # noqa: F401 (campaign: the fixture)


@pytest.mark.parametrize("option", [("--target-halfwidth", "5"), ("--target-halfwidth", "inf"),
                                    ("--target-halfwidth", "-0.1"), ("--max-missed", "-1"),
                                    ("--max-missed", "inf"), ("--max-missed", "nan"),
                                    ("--level", "1.5"), ("--level", "0"), ("--level", "1"), ("--level", "-0.5")])
def test_a_target_or_level_out_of_range_is_one_line_and_nothing_written(campaign, tmp_path, option):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json", *option)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert option[0] in res.output and "Traceback" not in res.output
    assert not (tmp_path / "e.json").exists()


def test_max_missed_help_says_it_compares_the_stopping_bound():
    res = cli("estimate", "--help")
    text = " ".join(res.output.replace("│", " ").split())
    assert "stopping bound" in text and "not with the expected number" in text


class _FakeProject:
    """The Label Studio project `annotate status` reads (no task yet): its estimate part is what is tested."""
    id = 1

    class client:  # noqa: N801
        class projects:  # noqa: N801
            @staticmethod
            def get(_):
                return type("P", (), {"maximum_annotations": 2})()

    class conn:  # noqa: N801
        @staticmethod
        def call(_, fn):
            return fn()

    def export(self):
        return []

    def users(self):
        return {}


def _bench_runs(root, ids):
    """Three systems' runs and qrels over the campaign's question ids (eval's inputs)."""
    rng = np.random.default_rng(5)
    docs = [str(1000 + i) for i in range(40)]
    gold = {str(q): docs[int(q) % 40] for q in ids}
    (root / "qrels.trec").write_text("".join(f"{q} 0 {d} 1\n" for q, d in gold.items()))
    for system, skill in (("good", 0.8), ("mid", 0.6), ("bad", 0.3)):
        ranking = {}
        for q, d in gold.items():
            ranked = list(rng.permutation([x for x in docs if x != d])[:9])
            if rng.random() < skill:
                ranked.insert(int(rng.integers(0, 5)), d)
            ranking[q] = ranked
        (root / f"{system}.json").write_text(json.dumps(ranking))
    return {s: root / f"{s}.json" for s in ("good", "mid", "bad")}


def test_one_answer_to_how_many_errors_are_left_across_estimate_status_eval_and_report(campaign, tmp_path,  # noqa: F811
                                                                                        monkeypatch):
    """Issue 32 item 4: after a campaign with a finished batch, `annotate estimate`, `annotate status`, the
    report's Findings, estimate block and fragility (eval) give the same expected errors left among the same
    N unreviewed pairs, the fragility's judged questions a sub-population scaled from that estimate."""
    from bbsard_audit.annotations import cli as annotate_cli
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import read_audit
    from bbsard_audit.app.report import build_report
    from bbsard_audit.eval.pipeline import EvalConfig, evaluate, write_outputs

    frame, audit, queue, camp, verdicts = campaign
    start = set(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(audit), audit, 14, set())
    state.save()
    verdicts(start | set(rows["id"]))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", camp / "estimate.json", "--max-missed", "5")
    assert res.exit_code == 0, res.output
    est = json.loads((camp / "estimate.json").read_text())
    left = est["errors_left"]
    n_left = 222 - len(start | set(rows["id"]))
    assert left["unreviewed"] == n_left and est["by_batch"][-1]["batch"] == 1
    assert left["expected"] == pytest.approx(est["unreviewed"][0]["expected"])
    assert left["stopping_bound"] == pytest.approx(est["target"]["missed_upper"])  # the bound the target compares
    assert left["ci_low"] <= left["expected"] <= left["ci_high"]
    said = (f"{left['expected']:.1f} expected among the {n_left:,} unreviewed pairs (95% interval "
            f"{left['ci_low']:.1f}–{left['ci_high']:.1f}; stopping bound: at most {left['stopping_bound']:.1f})")
    assert said in res.output

    monkeypatch.setattr(annotate_cli, "_connection", lambda *a: _FakeProject.conn)
    monkeypatch.setattr(annotate_cli, "_open_project", lambda *a, **k: _FakeProject())
    res = cli("status", "--project", "p", "--audit", audit, "--campaign", camp, "--max-missed", "5")
    assert res.exit_code == 0, res.output
    assert said in res.output and f"stopping bound {left['stopping_bound']:.1f} errors left" in res.output

    work = tmp_path / "run"  # the work folder: audit.csv, the campaign as its subfolder, eval's outputs
    if not (work / "camp").exists():
        camp.rename(work / "camp")
    camp = work / "camp"
    config = EvalConfig(runs=_bench_runs(tmp_path, frame["id"]), qrels=tmp_path / "qrels.trec",
                        verdicts=camp / "verdicts.csv", audit=audit, metrics=("mrr@10",), resamples=1000, null_draws=5)
    result = evaluate(config)
    assert not any("stale" in w for w in result.warnings)
    write_outputs(result, work)
    frag = pd.read_csv(work / "fragility.csv")
    assert len(frag) and frag["expected_errors_unverified"].iloc[0] == pytest.approx(left["expected"])
    assert frag["expected_errors_unverified_high"].iloc[0] == pytest.approx(left["ci_high"])
    build_report(work)
    report = (work / "report.md").read_text()
    findings = report.split("## ")[1]
    assert said in findings and f"among the {n_left:,} judged questions not reviewed" in findings
    assert f"(estimate.json's {n_left:,} unreviewed pairs, the same figures)" in findings
    assert f"expected {left['expected']:.1f}, upper bound {left['ci_high']:.1f}" in findings
    assert "share legal among drawn (design rate)" in report and "Stale estimate" not in report
    assert "the stopping bound is another quantity than the interval" in report  # said where the figures are
    later = pd.read_csv(camp / "verdicts.csv")  # a later pull changes a verdict: eval says the estimate is stale
    later.loc[0, "verdict"] = "correct" if later.loc[0, "verdict"] == "legal" else "legal"
    later.to_csv(camp / "verdicts.csv", index=False)
    assert any("estimate.json is stale" in w for w in evaluate(config).warnings)


def test_status_says_the_estimate_json_at_its_own_level_and_when_it_is_stale(campaign, monkeypatch):  # noqa: F811
    """Issue 32: `annotate status` recomputed the estimate at 95 % instead of reading estimate.json: a lead
    who wrote it at 90 % read two answers. It reads the one estimate (its level, its figures), says when the
    verdicts changed since, and computes one only when there is no estimate.json (and says so)."""
    from bbsard_audit.annotations import cli as annotate_cli
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import read_audit

    frame, audit, queue, camp, verdicts = campaign
    start = set(pd.read_csv(queue)["id"])
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(audit), audit, 14, set())
    state.save()
    verdicts(start | set(rows["id"]))
    monkeypatch.setattr(annotate_cli, "_connection", lambda *a: _FakeProject.conn)
    monkeypatch.setattr(annotate_cli, "_open_project", lambda *a, **k: _FakeProject())
    res = cli("status", "--project", "p", "--audit", audit, "--campaign", camp)
    assert res.exit_code == 0 and "no estimate.json: the errors left computed now at the 95% level" in res.output
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", camp / "estimate.json", "--level", "0.9")
    assert res.exit_code == 0, res.output
    left = json.loads((camp / "estimate.json").read_text())["errors_left"]
    assert left["ci_high"] <= left["stopping_bound"]  # the stopping bound never inside the interval
    said = (f"{left['expected']:.1f} expected among the {left['unreviewed']:,} unreviewed pairs (90% interval "
            f"{left['ci_low']:.1f}–{left['ci_high']:.1f}; stopping bound: at most {left['stopping_bound']:.1f})")
    assert said in res.output and "the stopping bound is another quantity than the interval" in res.output
    res = cli("status", "--project", "p", "--campaign", camp, "--max-missed", "1000")  # no --audit needed
    assert res.exit_code == 0, res.output
    assert said in res.output and "95% interval" not in res.output and "STALE" not in res.output
    assert "estimate.json says them (90% level" in res.output and "target met: stopping bound" in res.output
    later = pd.read_csv(camp / "verdicts.csv")  # a later pull changes a verdict
    later.loc[0, "verdict"] = "correct" if later.loc[0, "verdict"] == "legal" else "legal"
    later.to_csv(camp / "verdicts.csv", index=False)
    res = cli("status", "--project", "p", "--campaign", camp)
    assert res.exit_code == 0 and said in res.output
    assert "STALE: computed from" in res.output and "re-run `annotate estimate`" in res.output


def test_a_sub_population_is_scaled_from_the_same_estimate():
    """Fragility's judged questions not reviewed, fewer than the estimate's unreviewed pairs: the same
    estimate scaled by their share (never the flagged/unflagged strata rates of before)."""
    from bbsard_audit.base.contracts.estimate import BatchStep, Estimate, Missed, Stratum
    from bbsard_audit.eval.fragility import SCALED_METHOD, expected_unverified_errors

    est = Estimate(share_legal=0.103, ci_low=0.05, ci_high=0.2, expected_legal_pairs=22.9, population=222,
                   strata=[Stratum("batch0", 222, 40, 7, 0.176, None, None)], level=0.95, draws=0, seed=0,
                   unreviewed=[Missed("all", 154, 10.8, 0.0, 26.0)], found_legal=12, cs_high=0.18)
    assert est.errors_left.stopping_bound == pytest.approx(0.18 * 222 - 12)
    got = expected_unverified_errors(est, flagged=40, unflagged=100)
    assert got.expected == pytest.approx(10.8 * 140 / 154) and got.high == pytest.approx(26.0 * 140 / 154)
    assert got.method == SCALED_METHOD and "spread evenly" in got.method
    est.by_batch = [BatchStep(0, 40, 0.103, 0.05, 0.2, 0.04, 0.22)]  # a format-3 estimate: its batch rates
    assert "design rate, not the split's" in est.named_values()[1].name  # the card's table says so
    again = Estimate.from_dict(json.loads(json.dumps(est.to_dict())))
    assert again.errors_left == est.errors_left  # stored, read back the same


def _recorded_estimate(root, verdicts_csv):
    """An estimate.json recording the final verdicts of `verdicts_csv` (as `annotate estimate` writes it)."""
    from bbsard_audit.annotations.estimate import verdicts_used
    from bbsard_audit.base.contracts.estimate import Estimate, Missed

    final = pd.read_csv(verdicts_csv)
    Estimate(0.375, 0.2, 0.6, 3.0, 8, [], 0.95, 100, 0, unreviewed=[Missed("all", 2, 0.4, 0.0, 1.0)],
             verdicts=verdicts_used(final[final["verdict"].fillna("") != ""])).write(root / "estimate.json")


def test_a_release_refuses_and_a_report_flags_an_estimate_older_than_the_verdicts(tmp_path):
    """Issue 33: the estimate records the verdicts it came from; a verdict changed since is a stale estimate."""
    from release_fixtures import make_dataset, write_review

    from bbsard_audit.app.cli import app
    from bbsard_audit.app.report import build_report
    from bbsard_audit.app.release import build_release
    from bbsard_audit.base.dataset import load_dataset
    from bbsard_audit.base.errors import InputError
    from typer.testing import CliRunner

    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    _recorded_estimate(tmp_path / "work", verdicts)
    build_release(ds, verdicts, tmp_path / "rel")  # current: released, the card quotes its errors left
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "Legal errors left: 0.4 expected among the 2 unreviewed pairs" in card
    build_report(tmp_path / "work")
    assert "Stale estimate" not in (tmp_path / "work" / "report.md").read_text()

    frame = pd.read_csv(verdicts)
    frame.loc[frame["id"] == 1, "verdict"] = "legal"  # a later pull: one more legal error
    frame.to_csv(verdicts, index=False)
    with pytest.raises(InputError, match="estimate.json is stale: it was computed from 6 final verdict"):
        build_release(ds, verdicts, tmp_path / "rel2")
    assert not (tmp_path / "rel2").exists()
    res = CliRunner().invoke(app, ["report", "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0 and "warning: Stale estimate" in res.output
    report = (tmp_path / "rep" / "report.md").read_text()
    findings = report.split("## ")[1]
    assert "Stale estimate: estimate.json was computed from 6 final verdict(s)" in findings


def test_illustrative_verdicts_are_labelled_wherever_they_are_counted(tmp_path):
    """Issue 32 item 6: verdicts whose sidecar says illustrative are never called a final expert verdict."""
    from release_fixtures import make_dataset, write_review

    from bbsard_audit.app.report import build_report
    from bbsard_audit.app.release import build_release
    from bbsard_audit.base.dataset import load_dataset
    from bbsard_audit.base.io import write_sidecar

    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    write_sidecar(verdicts, source="illustrative verdicts", illustrative=True)
    summary = build_release(ds, verdicts, tmp_path / "rel")
    card = (tmp_path / "rel" / "README.md").read_text()
    assert summary.verdict_kind == "an illustrative verdict, not a real expert review"
    assert "final expert verdict" not in card and "expert-verified" not in card
    assert "**These verdicts are illustrative**" in card
    build_report(tmp_path / "work")
    report = (tmp_path / "work" / "report.md").read_text()
    findings, review = report.split("## ")[1], report.split('<a id="review"></a>')[1]
    assert "(an illustrative verdict, not a real expert review) were judged legally inaccurate" in findings
    assert "a final expert verdict" not in findings
    assert "pairs reviewed (illustrative verdicts)" in review and "These verdicts are illustrative" in review


def test_a_pilot_push_of_every_pair_leaves_them_in_the_next_draw_and_the_batch_enters_the_estimate(campaign,  # noqa: F811
                                                                                                    tmp_path):
    """Issue 33: pairs on the server that no batch drew and nobody reviewed (a pilot push of every pair) were
    left out of the next batch's pool: "0 unreviewed pair(s) left", and the batch pending for ever."""
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import read_audit

    frame, audit, queue, camp, verdicts = campaign
    start = set(pd.read_csv(queue)["id"])
    verdicts(start)
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(audit), audit, 14, exclude=set(frame["id"]))  # every pair on the server
    state.save()
    assert len(state.record["batches"][1]["pool"]) == 222 - len(start) and len(rows) > 0
    verdicts(start | set(rows["id"]))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 0 and "after batch 1 (" in res.output and "not fully reviewed" not in res.output


@pytest.mark.parametrize("edit", ["start_p", "start_p_floor", "next_p", "next_p_floor", "next_drawn_added",
                                  "next_drawn_removed", "start_control"])
def test_an_edited_draw_is_re_derived_and_refused_in_one_line_before_any_estimate(campaign, tmp_path, edit):  # noqa: F811
    """Issue 33: editing a batch's p, p_floor or drawn list moved the published rate with exit 0."""
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import read_audit

    frame, audit, queue, camp, verdicts = campaign
    state = Campaign.load(camp)
    rows = state.add_batch(read_audit(audit), audit, 14, set())
    state.save()
    verdicts(set(pd.read_csv(queue)["id"]) | set(rows["id"]))
    assert cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "ok.json").exit_code == 0
    record = json.loads((camp / "campaign.json").read_text())
    start, nxt = record["batches"]
    undrawn = next(i for i in nxt["pool"] if i not in nxt["risk"])
    {"start_p": lambda: start["p"].__setitem__(0, 0.99), "start_p_floor": lambda: start.__setitem__("p_floor", 0.5),
     "next_p": lambda: nxt["p"].__setitem__(-1, round(nxt["p"][-1] + 0.001, 6)),
     "next_p_floor": lambda: nxt.__setitem__("p_floor", 0.5),
     "next_drawn_added": lambda: nxt["risk"].append(undrawn), "next_drawn_removed": lambda: nxt["risk"].pop(),
     "start_control": lambda: start["control"].pop()}[edit]()
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "batches[" in res.output and "campaign.json" in res.output and "Traceback" not in res.output
    if edit.endswith(("added", "removed", "control")):  # a drawn list: the pair is named, or a fixed-size
        # batch's count is off (what that design checks first)
        assert (", id " in res.output and " pair " in res.output) or "draws exactly sum(pi)" in res.output
    assert not (tmp_path / "e.json").exists()
    for key in ("sealed",):  # a campaign from before seals: the seed and the audit still catch the edit
        start.pop(key, None)
        nxt.pop(key, None)
    (camp / "campaign.json").write_text(json.dumps(record))
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json")
    if edit != "start_p_floor":  # a floor raised on the start batch: only its seal tells
        assert res.exit_code == 2 and res.output.count("\n") == 1, res.output


def test_a_next_draw_from_an_audit_of_one_split_is_refused_and_an_older_such_batch_is_explained(tmp_path):
    """Issue 33: a re-audit of one split gave a batch whose pool left out the other split's unreviewed pairs,
    which the estimator counts as known: the batch never entered the estimate of every split ("not fully
    reviewed yet" for ever). Such a draw is refused; one recorded before is said, and its split's estimate has it."""
    from campaign_fixtures import start_audit, write_start

    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit
    from bbsard_audit.base.contracts.audit import AUDIT
    from bbsard_audit.base.errors import InputError

    frame = start_audit()
    frame = frame.assign(p_error=np.round(np.clip(frame["risk"] * 0.8, 0, 1), 4))
    frame.loc[frame["id"] > 150, "split"] = "train"
    audit, queue = write_start(tmp_path / "run", frame, budget=10, control=14)
    camp = tmp_path / "camp"
    Campaign.start(camp, project="p", audit=read_audit(audit), audit_path=audit,
                   queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue, seed=3).save()
    AUDIT.write_file(tmp_path / "test.csv", frame[frame["split"] == "test"])
    state = Campaign.load(camp)
    with pytest.raises(InputError, match="this audit leaves out .* re-run the audit on the campaign's whole"):
        state.add_batch(read_audit(tmp_path / "test.csv"), tmp_path / "test.csv", 14, set())
    assert len(Campaign.load(camp).record["batches"]) == 1

    state._check_covers = lambda *a: None  # a campaign.json written before the check
    rows = state.add_batch(read_audit(tmp_path / "test.csv"), tmp_path / "test.csv", 14, set())
    state.save()
    truth = dict(zip(frame["id"], frame["risk"] > 0.3))
    ids = sorted(set(pd.read_csv(queue)["id"]) | set(rows["id"]))
    pd.DataFrame({"id": ids, "verdict": ["legal" if truth[i] else "correct" for i in ids]}).to_csv(
        camp / "verdicts.csv", index=False)
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "all.json")
    left_out = len(set(frame.loc[frame["split"] == "train", "id"]) - set(ids))
    assert res.exit_code == 0 and f"batch 1's pool left out {left_out} pair(s) of this population that have no " \
        "final verdict" in res.output, res.output
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "t.json", "--split", "test")
    assert res.exit_code == 0 and "after batch 1 (" in res.output and "left out" not in res.output


def test_an_estimate_from_before_it_recorded_its_verdicts_is_read_as_before(tmp_path):
    """`Estimate.stale` is the one reader of the record: without it (an older estimate.json) the release
    quotes the estimate and the report says nothing; with it, a changed verdict is stale."""
    from release_fixtures import make_dataset, write_review

    from bbsard_audit.app.release import build_release
    from bbsard_audit.app.report import build_report
    from bbsard_audit.base.contracts.estimate import Estimate
    from bbsard_audit.base.dataset import load_dataset

    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    _recorded_estimate(tmp_path / "work", verdicts)
    recorded = json.loads((tmp_path / "work" / "estimate.json").read_text())
    older = {k: v for k, v in recorded.items() if k != "verdicts"}
    (tmp_path / "work" / "estimate.json").write_text(json.dumps(older))
    frame = pd.read_csv(verdicts)
    frame.loc[frame["id"] == 1, "verdict"] = "legal"  # verdicts changed since: nothing can tell
    frame.to_csv(verdicts, index=False)
    build_release(ds, verdicts, tmp_path / "rel")
    assert "Legal errors left: 0.4 expected" in (tmp_path / "rel" / "README.md").read_text()
    build_report(tmp_path / "work")
    assert "Stale estimate" not in (tmp_path / "work" / "report.md").read_text()
    assert not Estimate.from_dict(older).stale((6, "any"))
    assert Estimate.from_dict(recorded).stale((6, "other")) and not Estimate.from_dict(recorded).stale(
        (6, recorded["verdicts"]["sha256"]))
