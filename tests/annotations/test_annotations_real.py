"""Done-when of the annotation stage, on the real 222-question test split and a real server.

The audit and its review queue come from `bbsard-audit audit --review-budget 40 --control 40`
when the audit stage is installed, else from a stand-in that writes the same contract
(docs/formats.md) from the real pairs and back-translations; two simulated reviewers annotate
through the API; pull, agreement and the error-rate estimate run through the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.annotations import simulate
from bbsard_audit.annotations.connection import Connection
from bbsard_audit.annotations.project import ReviewProject
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.contracts.audit import Layout
from conftest import write_review_files
from test_estimator_design import as_format2

pytestmark = [pytest.mark.shared, pytest.mark.label_studio, pytest.mark.timeout(1800)]


def test_real_test_split_push_annotate_pull_agreement_estimate(shared_dir, ls_env, tmp_path):
    ds = load_dataset(str(shared_dir), strict=False, with_corpus=False)
    pairs = ds.select("test")
    assert len(pairs) == 222
    bt = {int(r["id"]): r["backtranslation"] for r in map(json.loads, (
        shared_dir / "backtranslations_nl_fr.jsonl").read_text(encoding="utf-8").splitlines())}
    run = tmp_path / "run"
    invoke = CliRunner().invoke
    audit, queue = _review_files(invoke, shared_dir, run, pairs, bt)
    n_queued = len(pd.read_csv(queue))
    assert 40 < n_queued <= 80

    res = invoke(app, ["annotate", "push", "--audit", str(audit), "--queue", str(queue),
                       "--project", "bbsard-test-review", "--dataset", str(shared_dir)])
    assert res.exit_code == 0, res.output
    assert f"{n_queued} task(s) imported" in res.output
    project = ReviewProject.open(Connection(ls_env.url, ls_env.token), "bbsard-test-review", layout=Layout())
    exported = project.export()
    task = exported[0]
    pair = ds.by_id()[task["data"]["question_id"]]
    assert task["data"]["question_nl"] == pair.target
    assert task["data"]["backtranslation"] == bt[pair.id]
    assert task["data"]["gold_articles"].split("\n") == [str(a) for a in pair.article_ids]
    rows = pd.read_csv(audit, dtype=str, keep_default_na=False).set_index("id")
    if "spans" in rows.columns:  # the audit's evidence spans are the prediction's labels regions
        spans_of = {t["id"]: json.loads(rows.loc[str(t["data"]["question_id"]), "spans"] or "[]") for t in exported}
        task = next(t for t in exported if spans_of[t["id"]])  # the risk queue has evidence spans
        pred = project.client.predictions.get(task["predictions"][0] if isinstance(task["predictions"][0], int)
                                              else task["predictions"][0]["id"])
        regions = {(s["side"], s["start"], s["end"], s["category"]): s["text"] for s in spans_of[task["id"]]}
        assert sorted(r["value"]["text"] for r in pred.result if r["type"] == "labels") == sorted(regions.values())

    # two reviewers: A calls risky pairs legal more often; B agrees with A on ~85% of pairs
    q = pd.read_csv(queue)
    rng = np.random.default_rng(5)
    legal_p = np.where(q["queue"] == "risk", 0.4, 0.05)
    a = dict(zip(q["id"], np.where(rng.random(len(q)) < legal_p, "legal",
                                   np.where(rng.random(len(q)) < 0.2, "minor", "correct"))))
    flip = rng.random(len(q)) < 0.15
    b = {qid: (("correct" if v != "correct" else "minor") if f else v) for (qid, v), f in zip(a.items(), flip)}
    assert simulate.annotate(project, "reviewer.a@example.org", a.get) == n_queued
    assert simulate.annotate(project, "reviewer.b@example.org", b.get,
                             corrected=lambda qid: ds.by_id()[qid].target + " (gecorrigeerd)") == n_queued

    out = run / "verdicts.csv"
    res = invoke(app, ["annotate", "pull", "--project", "bbsard-test-review", "--out", str(out)])
    assert res.exit_code == 0, res.output
    verdicts = pd.read_csv(out, keep_default_na=False)
    assert len(verdicts) == n_queued and (verdicts["n_annotations"] == 2).all()
    n_disagree = sum(a[k] != b[k] for k in a)
    assert (verdicts["adjudicated_by"] == "rule:stricter").sum() == n_disagree
    spans = pd.read_csv(run / "error_spans.csv")  # the simulated reviewers marked no span
    assert list(spans.columns) == ["id", "annotator", "side", "start", "end", "text", "category", "note"]
    assert spans.empty

    res = invoke(app, ["annotate", "agreement", "--raw", str(run / "annotations_raw.csv"), "--out", str(run)])
    assert res.exit_code == 0, res.output
    report = json.loads((run / "agreement.json").read_text())
    kappa = next(s for s in report["scores"] if s["name"] == "cohen_kappa[verdict]")
    assert 0.3 < kappa["value"] < 0.95 and kappa["ci_low"] < kappa["value"] < kappa["ci_high"]
    assert report["n_disagreements"] == n_disagree

    res = invoke(app, ["annotate", "estimate", "--audit", str(audit), "--queue", str(queue),
                       "--verdicts", str(out), "--out", str(run / "estimate.json"), "--split", "test"])
    assert res.exit_code == 0, res.output
    est = json.loads((run / "estimate.json").read_text())
    strata = {s["name"]: s for s in est["strata"]}
    assert sum(s["population"] for s in strata.values()) == 222
    assert strata["risk_queue"]["population"] == strata["risk_queue"]["reviewed"] == (q["queue"] == "risk").sum()
    assert sum(s["control"] for s in strata.values()) == (q["queue"] == "control").sum() == 40
    if "inclusion_prob" in q.columns:  # the audit stage's design: every other pair in a sampled risk band
        bands = [s for name, s in strata.items() if name != "risk_queue"]
        assert bands and all(s["control"] >= 2 for s in bands)
        found = sum(s["found_legal"] for s in strata.values())
        expected = found + sum(s["unreviewed"] * s["rate"] for s in bands)
        assert est["found_legal"] == found and est["share_legal"] == pytest.approx(expected / 222)
    assert est["ci_low"] <= est["share_legal"] <= est["ci_high"]
    assert json.loads((run / "estimate.meta.json").read_text())["seed"] == 0
    left = {m["name"]: m for m in est["unreviewed"]}
    assert left["all"]["unreviewed"] == 222 - n_queued
    assert left["all"]["expected"] == pytest.approx(sum(m["expected"] for k, m in left.items() if k != "all"))
    assert left["all"]["ci_low"] <= left["all"]["expected"] <= left["all"]["ci_high"]


def test_real_campaign_estimates_at_once_and_a_queued_batch_changes_nothing(shared_dir, ls_env, tmp_path):
    """Issue 14 on the real test split: a 14-pair control sample estimates at once; `push --next 20`
    with no new verdict leaves the rate and its interval unchanged; once those 20 are reviewed the
    estimate moves as the design says (their verdicts exact, each band's rest at its control rate)."""
    invoke = CliRunner().invoke
    run, camp, name = tmp_path / "run", tmp_path / "camp", "bbsard-test-campaign"
    res = invoke(app, ["audit", "--dataset", str(shared_dir), "--split", "test", "--backtranslations",
                       str(shared_dir / "backtranslations_nl_fr.jsonl"), "--review-budget", "20",
                       "--control", "14", "--out", str(run)])
    assert res.exit_code == 0, res.output
    audit, queue = run / "audit.csv", run / "review_queue.csv"
    res = invoke(app, ["annotate", "push", "--audit", str(audit), "--queue", str(queue), "--project", name,
                       "--campaign", str(camp)])
    assert res.exit_code == 0, res.output
    as_format2(camp)  # issue 14's design (format 2, risk batches): an older campaign folder still reads and grows
    project = ReviewProject.open(Connection(ls_env.url, ls_env.token), name, layout=Layout())
    frame = pd.read_csv(audit)
    legal = dict(zip(frame["id"], np.where(np.random.default_rng(14).random(len(frame)) < frame["risk"] / 2,
                                           "legal", "correct")))
    start = pd.read_csv(queue)
    first_reviewer = set(start["id"].head(10))  # 10 tasks get only one annotation for now
    assert simulate.annotate(project, "camp.a@example.org", legal.get) == len(start)
    assert simulate.annotate(project, "camp.b@example.org", lambda q: legal[q] if q not in first_reviewer else None) \
        == len(start) - 10
    res = invoke(app, ["annotate", "status", "--project", name])
    assert res.exit_code == 0, res.output
    assert f"{len(start) - 10} of {len(start)} task(s) done (2 annotation(s) required per task), 10 awaiting a " \
           f"second annotator, 0 never annotated; {2 * len(start) - 10} annotation(s) in all" in res.output
    assert invoke(app, ["annotate", "pull", "--project", name, "--out", str(camp / "verdicts.csv")]).exit_code == 0

    def estimate(tag):
        out = tmp_path / f"estimate-{tag}.json"
        res = invoke(app, ["annotate", "estimate", "--audit", str(audit), "--campaign", str(camp), "--out", str(out),
                           "--split", "test", "--max-missed", "5"])
        assert res.exit_code == 0, res.output
        return json.loads(out.read_text()), res.output

    first, output = estimate("start")  # at once: every pair of the split is in a sampled stratum
    assert sum(s["population"] for s in first["strata"]) == 222 and "not in the campaign's population" not in output
    assert ("target met" if first["target"]["met"] else
            f"target not met: stopping bound {first['errors_left']['stopping_bound']:.1f} errors left") in output

    res = invoke(app, ["annotate", "push", "--audit", str(audit), "--project", name, "--campaign", str(camp),
                       "--next", "20"])
    assert res.exit_code == 0, res.output
    assert "batch 1 queues 20 pair(s)" in res.output and "20 task(s) imported" in res.output
    res = invoke(app, ["annotate", "status", "--project", name])
    assert f"{len(start) - 10} of {len(start) + 20} task(s) done (2 annotation(s) required per task), 10 awaiting " \
           "a second annotator, 20 never annotated" in res.output
    queued, _ = estimate("queued")
    keys = ("share_legal", "ci_low", "ci_high")
    assert [queued[k] for k in keys] == [first[k] for k in keys]

    batch = json.loads((camp / "campaign.json").read_text())["batches"][1]["risk"]
    for reviewer in ("camp.a@example.org", "camp.b@example.org"):
        simulate.annotate(project, reviewer, lambda q: legal[q] if q in batch else None)
    assert invoke(app, ["annotate", "pull", "--project", name, "--out", str(camp / "verdicts.csv")]).exit_code == 0
    after, _ = estimate("reviewed")
    assert after["found_legal"] == first["found_legal"] + sum(legal[q] == "legal" for q in batch)
    before = {s["name"]: s for s in first["strata"]}
    strata = json.loads((camp / "campaign.json").read_text())["design"]["strata"]
    moved = 0.0
    for s in after["strata"]:
        took = len(set(batch) & set(strata[s["name"]]))
        assert s["unreviewed"] == before[s["name"]]["unreviewed"] - took and s["rate"] == before[s["name"]]["rate"]
        moved += took * (s["rate"] or 0)
    assert after["share_legal"] == pytest.approx(
        (after["found_legal"] + first["unreviewed"][0]["expected"] - moved) / 222)


def _review_files(invoke, shared_dir, run, pairs, bt):
    """The audit stage's own audit.csv + review_queue.csv when it is installed, else the stand-in."""
    has_audit = invoke(app, ["audit", "--help"])
    if has_audit.exit_code == 0 and "--review-budget" in has_audit.output:
        res = invoke(app, ["audit", "--dataset", str(shared_dir), "--split", "test", "--backtranslations",
                           str(shared_dir / "backtranslations_nl_fr.jsonl"), "--review-budget", "40",
                           "--control", "40", "--out", str(run)])
        assert res.exit_code == 0, res.output
        return run / "audit.csv", run / "review_queue.csv"
    return write_review_files(run, pairs, bt, seed=4, budget=40, control=40)
