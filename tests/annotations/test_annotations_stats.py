"""Agreement, adjudication, estimate, pull merging and input checks (no server needed)."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.annotations.adjudication import AdjudicationRule, adjudicate, disagreements
from bbsard_audit.annotations.agreement import RatingMatrix, agreement, cohen_kappa, krippendorff_alpha
from bbsard_audit.annotations.estimate import estimate
from bbsard_audit.annotations.pull import RAW_COLUMNS, merge_raw, pull, raw_from_export
from bbsard_audit.annotations.simulate import annotation_result
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, build_tasks, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.contracts.audit import Layout
from conftest import write_review_files

runner = CliRunner()


def raw_rows(table: dict[str, dict[int, str]], stamp: str = "2026-01-01T00:00:00Z") -> pd.DataFrame:
    rows = [{"id": q, "task_id": q, "annotation_id": i, "annotator": who, "verdict": v,
             "corrected_nl": "", "gold_labels_apply": "", "created_at": stamp, "updated_at": stamp}
            for i, (who, verdicts) in enumerate(table.items()) for q, v in verdicts.items()]
    return pd.DataFrame(rows, columns=RAW_COLUMNS)


def test_kappa_matches_hand_computation():
    # 10 items; table (rows a, cols b) over correct/minor/legal:
    # [[4,1,0],[0,2,1],[1,0,1]] -> po = 7/10; pa = (.5,.3,.2), pb = (.5,.3,.2); pe = .38
    a = np.array([0, 0, 0, 0, 0, 1, 1, 1, 2, 2])
    b = np.array([0, 0, 0, 0, 1, 1, 1, 2, 0, 2])
    score = cohen_kappa(a, b, 3, n_boot=500, seed=1)
    assert score.value == pytest.approx((0.7 - 0.38) / (1 - 0.38))
    assert score.ci_low < score.value < score.ci_high
    assert cohen_kappa(a, b, 3, n_boot=500, seed=1) == score  # seeded: reproducible
    assert cohen_kappa(a, a, 3, n_boot=100).value == 1.0


def test_alpha_matches_krippendorff_package_with_missing_ratings():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, 80)
    codes = np.where(rng.random((80, 4)) < 0.75, truth[:, None], rng.integers(0, 3, (80, 4)))
    codes = np.where(rng.random((80, 4)) < 0.3, -1, codes)
    matrix = RatingMatrix(np.arange(80), ("a", "b", "c", "d"), codes, ("correct", "minor", "legal"))
    ours = krippendorff_alpha(matrix.counts(), n_boot=300)
    reference = krippendorff.alpha(reliability_data=np.where(codes < 0, np.nan, codes).T.astype(float),
                                   level_of_measurement="nominal")
    assert ours.value == pytest.approx(reference, abs=1e-12)
    assert ours.ci_low < ours.value < ours.ci_high


def test_agreement_report_on_verdicts_and_legal_split():
    a = {1: "legal", 2: "correct", 3: "minor", 4: "correct", 5: "legal", 6: "correct"}
    b = {1: "legal", 2: "minor", 3: "minor", 4: "correct", 5: "correct", 6: "correct", 7: "legal"}
    report = agreement(raw_rows({"a": a, "b": b}), n_boot=200)
    names = {s.name: s for s in report.scores}
    assert set(names) == {"krippendorff_alpha[verdict]", "cohen_kappa[verdict]",
                          "krippendorff_alpha[legal_vs_not]", "cohen_kappa[legal_vs_not]"}
    assert names["cohen_kappa[verdict]"].n_items == 6  # item 7 has one annotation
    # legal vs not: a = [1,0,0,0,1,0], b = [1,0,0,0,0,0] -> po=5/6, pe=(2/6*1/6 + 4/6*5/6)=22/36
    assert names["cohen_kappa[legal_vs_not]"].value == pytest.approx((5 / 6 - 22 / 36) / (1 - 22 / 36))
    table = disagreements(raw_rows({"a": a, "b": b}), AdjudicationRule())
    assert table[["id", "verdict:a", "verdict:b", "verdict"]].values.tolist() == [
        [2, "correct", "minor", "minor"], [5, "legal", "correct", "legal"]]
    assert disagreements(raw_rows({"a": a, "b": a}), AdjudicationRule()).empty


@pytest.mark.parametrize("rule,verdicts,expected", [
    ("stricter", ["correct", "legal"], ("legal", "adjudicated", "rule:stricter")),
    ("lenient", ["correct", "legal"], ("correct", "adjudicated", "rule:lenient")),
    ("none", ["correct", "legal"], ("", "unresolved", "")),
    ("stricter", ["correct", "legal", "correct"], ("correct", "adjudicated", "majority")),
    ("stricter", ["correct", "legal", "minor"], ("legal", "adjudicated", "rule:stricter")),
    ("none", ["minor", "minor"], ("minor", "agreed", "")),
    ("none", ["minor"], ("minor", "single", "")),
])
def test_adjudication_rules(rule, verdicts, expected):
    assert AdjudicationRule(rule).resolve(verdicts) == expected


def test_adjudication_config_file_and_bad_rule(tmp_path):
    cfg = tmp_path / "adj.toml"
    cfg.write_text('[adjudication]\nrule = "lenient"\nthird_annotation_resolves = false\n')
    rule = AdjudicationRule.load(cfg)
    assert rule.resolve(["legal", "correct", "correct"]) == ("correct", "adjudicated", "rule:lenient")
    assert AdjudicationRule.load().rule == "stricter"  # the shipped default
    cfg.write_text('[adjudication]\nrule = "coin-flip"\n')
    with pytest.raises(InputError, match="coin-flip"):
        AdjudicationRule.load(cfg)


def _export(annotations: list[tuple[int, int, int, str, str]]) -> list[dict]:
    """Label Studio JSON export tasks from (question id, annotation id, user id, verdict, updated_at)."""
    tasks: dict[int, dict] = {}
    for qid, ann_id, user, verdict, stamp in annotations:
        task = tasks.setdefault(qid, {"id": qid * 10, "data": {"question_id": qid}, "annotations": []})
        task["annotations"].append({"id": ann_id, "completed_by": user, "result": annotation_result(verdict, layout=Layout()),
                                    "was_cancelled": False, "created_at": stamp, "updated_at": stamp})
    return list(tasks.values())


def test_pull_is_additive_and_survives_a_reset(tmp_path):
    users = {1: "a@x.org", 2: "b@x.org"}
    out = tmp_path / "verdicts.csv"
    first = _export([(1, 1, 1, "legal", "2026-01-01T10:00:00Z"), (2, 2, 1, "correct", "2026-01-01T10:00:00Z")])
    pull(first, out, users=users, rule=AdjudicationRule(), source={"test": 1})
    # the server was reset: ids restart at 1, only b's new annotation exists, a's old one is gone
    second = _export([(1, 1, 2, "minor", "2026-01-02T10:00:00Z")])
    raw, verdicts = pull(second, out, users=users, rule=AdjudicationRule(), source={"test": 2})
    assert len(raw) == 3
    v = verdicts.set_index("id")
    assert v.loc[1, ["verdict", "annotators", "agreement_status", "adjudicated_by"]].tolist() == [
        "legal", "a@x.org;b@x.org", "adjudicated", "rule:stricter"]
    assert v.loc[2, "verdict"] == "correct"
    # an annotator who edits an annotation: the later update replaces the earlier one
    third = _export([(2, 9, 1, "minor", "2026-01-03T10:00:00Z")])
    raw, verdicts = pull(third, out, users=users, rule=AdjudicationRule(), source={"test": 3})
    assert len(raw) == 3 and verdicts.set_index("id").loc[2, "verdict"] == "minor"
    # an older copy of the same annotation never overwrites a newer one
    assert len(merge_raw(raw, raw_from_export(first, users))) == 3
    assert merge_raw(raw, raw_from_export(first, users)).set_index(["id", "annotator"]).loc[
        (2, "a@x.org"), "verdict"] == "minor"


def test_cancelled_and_empty_annotations_are_ignored():
    tasks = _export([(1, 1, 1, "legal", "2026-01-01T10:00:00Z")])
    tasks[0]["annotations"].append({"id": 2, "completed_by": 2, "result": [], "was_cancelled": False})
    tasks[0]["annotations"].append({"id": 3, "completed_by": 3, "result": annotation_result("correct", layout=Layout()),
                                    "was_cancelled": True})
    tasks.append({"id": 99, "data": {"text": "not one of ours"}, "annotations": []})
    assert raw_from_export(tasks)["annotator"].tolist() == ["user:1"]


def _population(n_flagged: int, n_unflagged: int) -> pd.DataFrame:
    ids = np.arange(n_flagged + n_unflagged)
    return pd.DataFrame({"id": ids, "split": "test", "flagged": ids < n_flagged})


def test_estimate_hand_computed_and_census():
    audit = _population(20, 180)
    queue = pd.DataFrame({"id": np.r_[0:20, 20:50], "queue": ["risk"] * 20 + ["control"] * 30})
    legal_ids = set(range(0, 12)) | {20, 21, 22}  # 12/20 in the risk queue, 3/30 in the control
    verdicts = pd.DataFrame({"id": queue["id"], "verdict": ["legal" if q in legal_ids else "correct"
                                                           for q in queue["id"]]})
    result = estimate(audit, verdicts, queue, draws=20000, seed=3)
    assert result.share_legal == pytest.approx((12 + 180 * 3 / 30) / 200)
    assert result.ci_low < result.share_legal < result.ci_high
    assert result.ci_low >= 12 / 200  # the census stratum's 12 errors are certain
    strata = {s.name: s for s in result.strata}
    assert (strata["risk_queue"].population, strata["unflagged"].population, strata["flagged"].population) \
        == (20, 180, 0)
    # everything reviewed: no uncertainty left
    everyone = pd.DataFrame({"id": audit["id"], "verdict": ["legal"] * 10 + ["correct"] * 190})
    census = estimate(audit, everyone, queue, draws=2000)
    assert census.share_legal == census.ci_low == census.ci_high == pytest.approx(0.05)


def test_estimate_interval_covers_the_truth():
    """Coverage of the 95% interval over repeated control samples from a known population."""
    rng = np.random.default_rng(11)
    audit = _population(30, 470)
    truth_legal = np.r_[rng.random(30) < 0.5, rng.random(470) < 0.04]
    hits = 0
    for rep in range(150):
        control = rng.choice(np.arange(30, 500), size=60, replace=False)
        ids = np.r_[np.arange(30), control]
        queue = pd.DataFrame({"id": ids, "queue": ["risk"] * 30 + ["control"] * 60})
        verdicts = pd.DataFrame({"id": ids, "verdict": np.where(truth_legal[ids], "legal", "correct")})
        result = estimate(audit, verdicts, queue, draws=2000, seed=rep)
        hits += result.ci_low <= truth_legal.mean() <= result.ci_high
    assert hits / 150 >= 0.88


def test_estimate_uses_the_audit_control_strata():
    """Control strata of unequal size and error rate: stratified, not pooled."""
    audit = _population(10, 210)
    risk = pd.DataFrame({"id": np.arange(10), "queue": "risk", "stratum": "flagged", "stratum_size": 10})
    a = pd.DataFrame({"id": np.arange(10, 20), "queue": "control", "stratum": "test/A", "stratum_size": 150})
    b = pd.DataFrame({"id": np.arange(160, 170), "queue": "control", "stratum": "test/B", "stratum_size": 40})
    queue = pd.concat([risk, a, b], ignore_index=True)
    legal = {*range(5), *range(160, 165)}  # 5/10 risk, 0/10 in A, 5/10 in B
    verdicts = pd.DataFrame({"id": queue["id"], "verdict": ["legal" if q in legal else "correct"
                                                           for q in queue["id"]]})
    result = estimate(audit, verdicts, queue, draws=4000)
    strata = {s.name: s for s in result.strata}
    assert (strata["unflagged:test/A"].population, strata["unflagged:test/B"].population,
            strata["unflagged:other"].population) == (150, 40, 20)
    # the 20 unflagged pairs of strata the control missed borrow the pooled control rate 5/20
    assert result.share_legal == pytest.approx((5 + 150 * 0 + 40 * 0.5 + 20 * 5 / 20) / 220)
    assert any("unflagged:other" in note for note in result.assumptions)
    # a budget smaller than the flags: the 4 flagged pairs left out borrow the risk queue's rate
    short = estimate(audit, verdicts[verdicts["id"] >= 4], queue[queue["id"] >= 4], draws=2000)
    assert {s.name: s.population for s in short.strata}["flagged"] == 4
    assert short.share_legal == pytest.approx((1 + 4 * 1 / 6 + 20 + 20 * 5 / 20) / 220)
    assert any("stratum flagged" in note for note in short.assumptions)
    # sizes that do not nest in the population (e.g. another split's): pooled, with a note
    wide = queue.assign(stratum_size=queue["stratum_size"] * 10)
    pooled = estimate(audit, verdicts, wide, draws=2000)
    assert pooled.share_legal == pytest.approx((5 + 210 * 5 / 20) / 220)
    assert "pooled" in pooled.assumptions[0]


def test_estimate_many_small_error_free_strata_keep_the_estimate_inside_its_interval():
    """Seven small control strata with 0 errors each (the real audit's shape) must not inflate
    the interval above the point estimate (per-stratum priors would add ~5 points here)."""
    audit = _population(27, 195)
    sizes = [35, 13, 62, 22, 54, 3, 6]
    sampled = [7, 3, 13, 4, 11, 1, 1]
    rows = [pd.DataFrame({"id": np.arange(27), "queue": "risk", "stratum": "flagged", "stratum_size": 27})]
    start = 27
    for h, (size, n) in enumerate(zip(sizes, sampled)):
        rows.append(pd.DataFrame({"id": np.arange(start, start + n), "queue": "control",
                                  "stratum": f"test/{h}", "stratum_size": size}))
        start += size
    queue = pd.concat(rows, ignore_index=True)
    verdicts = pd.DataFrame({"id": queue["id"], "verdict": np.where(queue["id"] < 16, "legal", "correct")})
    result = estimate(audit, verdicts, queue)
    assert result.share_legal == pytest.approx(16 / 222)
    assert result.ci_low <= result.share_legal <= result.ci_high
    assert result.ci_high < 16 / 222 + 0.06


def test_estimate_interval_covers_the_truth_with_control_strata():
    """Same, with the audit's design: proportional control allocation over unequal strata."""
    rng = np.random.default_rng(12)
    audit = _population(20, 380)
    bounds = [20, 220, 320, 380 + 20]  # three control strata of 200, 100 and 80 pairs
    rates = [0.02, 0.08, 0.15]
    truth_legal = np.r_[rng.random(20) < 0.5, *[rng.random(b - a) < r for a, b, r in
                                                 zip(bounds[:-1], bounds[1:], rates)]]
    hits = 0
    for rep in range(150):
        parts = [pd.DataFrame({"id": np.arange(20), "queue": "risk", "stratum": "flagged", "stratum_size": 20})]
        for h, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            ids = rng.choice(np.arange(a, b), size=round(60 * (b - a) / 380), replace=False)
            parts.append(pd.DataFrame({"id": ids, "queue": "control", "stratum": f"s{h}", "stratum_size": b - a}))
        queue = pd.concat(parts, ignore_index=True)
        verdicts = pd.DataFrame({"id": queue["id"], "verdict": np.where(truth_legal[queue["id"]], "legal", "correct")})
        result = estimate(audit, verdicts, queue, draws=2000, seed=rep)
        hits += result.ci_low <= truth_legal.mean() <= result.ci_high
    assert hits / 150 >= 0.88


def test_estimate_needs_a_reviewed_stratum():
    audit = _population(5, 50)
    with pytest.raises(InputError, match="none reviewed"):
        estimate(audit, pd.DataFrame({"id": [], "verdict": []}), None)


def test_read_audit_bad_input_is_one_line_with_row_and_id(tmp_path, toy_pairs):
    audit, queue = write_review_files(tmp_path, toy_pairs)
    frame = pd.read_csv(queue, dtype=str, keep_default_na=False)
    frame.loc[3, "risk"] = "high"
    frame.to_csv(queue, index=False)
    with pytest.raises(InputError) as err:
        read_audit(queue, QUEUE_COLUMNS)
    assert err.value.one_line() == f"{queue}, row 5, id {frame.loc[3, 'id']}: risk 'high' is not a number"
    res = runner.invoke(app, ["annotate", "export-tasks", "--audit", str(audit), "--queue", str(queue),
                              "--out", str(tmp_path / "t.json")])
    assert res.exit_code == 2 and res.output.startswith("error: ") and res.output.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


def test_export_tasks_offline_round_trip(tmp_path, toy_pairs):
    """Air-gapped path: export-tasks JSON -> (reviewers in an offline LS) -> pull --from-file."""
    audit, queue = write_review_files(tmp_path, toy_pairs)
    res = runner.invoke(app, ["annotate", "export-tasks", "--audit", str(audit), "--queue", str(queue),
                              "--out", str(tmp_path / "tasks.json")])
    assert res.exit_code == 0, res.output
    # where the labelling config is and what to do with it (it said "with the labelling config in the sidecar")
    assert f"is `label_config` of {tmp_path / 'tasks.meta.json'}, then import {tmp_path / 'tasks.json'}" in \
        " ".join(res.output.split()), res.output
    tasks = json.loads((tmp_path / "tasks.json").read_text())
    assert tasks == build_tasks(read_audit(queue, QUEUE_COLUMNS), model_version="audit", layout=Layout.of(queue))
    assert "<Choices name=\"verdict\"" in json.loads((tmp_path / "tasks.meta.json").read_text())["label_config"]
    exported = [dict(t, id=i + 1, annotations=[{"id": i + 1, "completed_by": {"id": 3, "email": "r@x.org"},
                                                  "result": annotation_result("legal" if i % 2 else "correct", layout=Layout()),
                                                  "was_cancelled": False, "created_at": "2026-01-05T09:00:00Z", "updated_at": "2026-01-05T09:00:00Z"}])
                for i, t in enumerate(tasks)]
    (tmp_path / "export.json").write_text(json.dumps(exported))
    out = tmp_path / "v" / "verdicts.csv"
    res = runner.invoke(app, ["annotate", "pull", "--from-file", str(tmp_path / "export.json"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    verdicts = pd.read_csv(out)
    assert len(verdicts) == len(tasks) and set(verdicts["annotators"]) == {"r@x.org"}
    (tmp_path / "broken.json").write_text("{not json")
    res = runner.invoke(app, ["annotate", "pull", "--from-file", str(tmp_path / "broken.json"), "--out", str(out)])
    assert res.exit_code == 2 and "broken.json" in res.output
    # missing or malformed inputs of agreement / estimate: one line naming the file (and row, id)
    res = runner.invoke(app, ["annotate", "agreement", "--raw", str(tmp_path / "nope.csv"), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "nope.csv" in res.output and res.output.count("\n") == 1
    bad = pd.read_csv(out, dtype=str).assign(id=lambda f: f["id"].where(f.index != 2, "x7"))
    bad.to_csv(tmp_path / "bad_verdicts.csv", index=False)
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--verdicts",
                              str(tmp_path / "bad_verdicts.csv"), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and res.output.strip().endswith("row 4: id 'x7' is not an integer")
    assert not (tmp_path / "e.json").exists()


def test_unresponsive_server_times_out_as_one_line(tmp_path, monkeypatch):
    """A server that accepts connections but never answers: timeout, retries, one line, exit 2."""
    import socket
    import time

    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "t" * 40)
    monkeypatch.setenv("BBSARD_AUDIT_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        url = f"http://127.0.0.1:{mute.getsockname()[1]}"
        started = time.monotonic()
        res = runner.invoke(app, ["annotate", "status", "--project", "p-x", "--url", url,
                                  "--timeout", "0.5", "--retries", "1"])
    assert res.exit_code == 2
    assert res.output.startswith("error: list projects: Label Studio at") and "timed out" in res.output
    assert res.output.count("\n") == 1 and time.monotonic() - started < 10


def test_adjudication_reproduces_the_sample_verdicts():
    """The embedded sample (written independently): same statuses, same agreed verdicts.

    Its three disagreements were adjudicated by a person (id 37 ended `minor`, where the
    stricter rule says `legal`), so only which ids need adjudication is compared for those.
    """
    from bbsard_audit.annotations.pull import read_raw
    from bbsard_audit.base.dataset import sample_dir

    raw = read_raw(sample_dir() / "annotations_raw.csv")
    ours = adjudicate(raw, AdjudicationRule.load()).set_index("id")
    theirs = pd.read_csv(sample_dir() / "verdicts.csv", keep_default_na=False).set_index("id")
    assert ours.index.equals(theirs.index)
    assert (ours["agreement_status"] == theirs["agreement_status"]).all()
    settled = ours["agreement_status"] != "adjudicated"
    assert (ours.loc[settled, "verdict"] == theirs.loc[settled, "verdict"]).all()
    assert ours.index[~settled].tolist() == [24, 29, 37]
    assert (ours.loc[~settled, "adjudicated_by"] == "rule:stricter").all()


def test_reviews_outside_the_control_sample_count_exactly_never_as_a_sample():
    """Unflagged pairs reviewed off-design (not drawn into the control sample) must not stand for
    their stratum (counting them as a sample put 52 reviews into a 3-pair stratum once): their
    verdicts count exactly, the control rate of each stratum is unchanged."""
    audit = pd.DataFrame({"id": range(300), "flagged": [i < 40 for i in range(300)]})
    queue = pd.DataFrame({"id": list(range(40)) + list(range(40, 80)),
                          "queue": ["risk"] * 40 + ["control"] * 40,
                          "stratum": ["-"] * 40 + ["a"] * 20 + ["b"] * 20,
                          "stratum_size": [0] * 40 + [150] * 20 + [110] * 20})
    design = pd.DataFrame({"id": list(range(80)),
                           "verdict": ["legal"] * 10 + ["correct"] * 30 + ["correct"] * 39 + ["legal"]})
    off_design = pd.DataFrame({"id": range(100, 160), "verdict": ["legal"] * 60})
    clean = estimate(audit, design, queue, seed=3)
    polluted = estimate(audit, pd.concat([design, off_design]), queue, seed=3)
    rates = lambda e: {s.name: s.rate for s in e.strata}  # noqa: E731
    assert rates(polluted) == rates(clean) and polluted.found_legal == clean.found_legal + 60
    left = {m.name: m for m in polluted.unreviewed}
    assert left["all"].unreviewed == 300 - 80 - 60
    assert polluted.share_legal == pytest.approx((polluted.found_legal + left["all"].expected) / 300)
    assert clean.ci_low <= clean.share_legal <= clean.ci_high
