"""The report and the release on the real bBSARD data (../shared): real runs through the eval stage, the
real audit when those stages are present (hand-written stage outputs stand in for a missing stage), an
illustrative verdicts file, the page checked in Chromium, and the release read back."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.dataset import load_dataset
from bbsard_audit.release import ReleasePolicy, build_release
from bbsard_audit.report import build_report
from chromium import CHROMEDRIVER, CHROMIUM, external, visit
from report_fixtures import write_workdir

pytestmark = pytest.mark.shared
RUNS = ("bm25_fr", "bm25_nl", "e5_fr", "e5_nl", "jina_fr", "jina_nl")


def _stage(module: str, *names: str):
    try:
        mod = importlib.import_module(module)
        return tuple(getattr(mod, n) for n in names)
    except (ImportError, AttributeError):
        return None


def illustrative_verdicts(ds, path):
    """A stand-in for a review of the test split: seeded, every verdict type, some corrections."""
    rng = np.random.default_rng(7)
    test = [p for p in ds.pairs if p.split == "test"]
    picked = rng.choice(len(test), size=60, replace=False)
    verdict = rng.choice(["correct", "minor", "legal"], size=60, p=[0.7, 0.15, 0.15])
    rows = [{"id": test[i].id, "verdict": v, "gold_labels_apply": "yes" if v != "legal" else "unsure",
             "corrected_nl": test[i].question_nl.rstrip("?") + " (herzien)?" if v == "legal" and k % 2 else "",
             "n_annotations": 2, "annotators": "reviewer_a;reviewer_b", "agreement_status": "agreed"}
            for k, (i, v) in enumerate(zip(picked, verdict))]
    pd.DataFrame(rows).to_csv(path, index=False)
    raw = [{"id": r["id"], "task_id": k, "annotation_id": 2 * k + j, "annotator": a,
            "verdict": r["verdict"] if j == 0 or k % 9 else "minor", "corrected_nl": r["corrected_nl"],
            "gold_labels_apply": r["gold_labels_apply"], "created_at": "2026-11-20T10:00:00Z",
            "updated_at": f"2026-11-2{j}T10:00:00Z"}
           for k, r in enumerate(rows) for j, a in enumerate(("reviewer_a", "reviewer_b"))]
    pd.DataFrame(raw).to_csv(path.with_name("annotations_raw.csv"), index=False)
    return path


@pytest.fixture(scope="module")
def real_workdir(shared_dir, shared_runs, tmp_path_factory):
    work = tmp_path_factory.mktemp("shared-report")
    ds = load_dataset(str(shared_dir))
    verdicts = illustrative_verdicts(ds, work / "verdicts.csv")
    real = []
    audit_api = _stage("bbsard_audit.audit.pipeline", "run_audit", "write_audit")
    if audit_api:
        run_audit, write_audit = audit_api
        result = run_audit(str(shared_dir), split="test",
                           backtranslations=shared_dir / "backtranslations_nl_fr.jsonl")
        write_audit(result, work, review_budget=40, control=20, seed=0)
        real.append("audit")
    # before eval: eval finds the estimate.json next to the verdicts (fragility.csv's expected errors)
    estimate_api = _stage("bbsard_audit.annotations.estimate", "estimate")
    if estimate_api and audit_api:
        audit = pd.read_csv(work / "audit.csv")
        queue = pd.read_csv(work / "review_queue.csv")
        result = estimate_api[0](audit, pd.read_csv(verdicts, keep_default_na=False), queue, seed=0)
        (work / "estimate.json").write_text(json.dumps(result.to_dict()))
        real.append("estimate")
    eval_api = _stage("bbsard_audit.eval.pipeline", "EvalConfig", "evaluate", "write_outputs")
    if eval_api:
        EvalConfig, evaluate, write_outputs = eval_api
        config = EvalConfig(runs={n: shared_runs / f"{n}.trec" for n in RUNS}, qrels=shared_runs / "qrels_test203.trec",
                            verdicts=verdicts, audit=work / "audit.csv" if audit_api else None,
                            resamples=1000, null_draws=1000, seed=0)
        write_outputs(evaluate(config), work)
        real.append("eval")
    agreement_api = _stage("bbsard_audit.annotations.agreement", "agreement")
    if agreement_api:
        report = agreement_api[0](pd.read_csv(work / "annotations_raw.csv", keep_default_na=False))
        (work / "agreement.json").write_text(json.dumps(report.to_dict()))
        real.append("agreement")
    calibrate_api = _stage("bbsard_audit.audit.calibration", "calibrate", "write_calibration")
    if calibrate_api and audit_api:
        calibrate, write_calibration = calibrate_api
        write_calibration(calibrate(work / "audit.csv", verdicts), work)
        real.append("calibrate")
    # hand-written stand-ins for stages not present in this checkout (never overwriting real outputs)
    stand_in = write_workdir(tmp_path_factory.mktemp("stand-in"), review=False,
                             audit="audit" not in real, evaluation="eval" not in real)
    for path in stand_in.iterdir():
        if not (work / path.name).exists():
            path.rename(work / path.name)
    return work, ds, verdicts, real


def test_real_report_renders_in_chromium(real_workdir, tmp_path):
    work, _, _, real = real_workdir
    files = build_report(work)
    assert files.sections == ("Findings", "Audit", "Review campaign", "Evaluation", "Provenance")
    md = files.markdown.read_text()
    assert "- **pairs reviewed**: 60" in md
    if "eval" in real:
        for name in RUNS:
            assert f"| {name} | recall@100 |" in md
        assert "- **queries (full)**: 203" in md
    if "audit" in real:
        assert "- **pairs audited**: 222" in md
    if "estimate" in real:
        assert "- **estimated share legally inaccurate**: " in md and "- **expected inaccurate pairs**: " in md
    if "calibrate" in real:
        assert "Per-signal precision / recall / ROC-AUC" in md
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("chromium and chromedriver not found (apt-get install chromium chromium-driver)")
    page = visit(files.html, tmp_path / "shared-report.png", width=1400)
    assert page.console_errors == [] and external(page.requests, files.html) == [] and page.resources == []
    assert page.sections == ["Findings", "Audit", "Review campaign", "Evaluation", "Provenance"]
    assert page.anchors_ok
    findings = page.text.split("Findings", 2)[2].split("\nAudit\n", 1)[0]
    if "audit" in real:
        flagged = int(pd.read_csv(work / "audit.csv")["flagged"].sum())
        assert f"{flagged:,} of 222 translations" in findings
    if "estimate" in real:
        share = json.loads((work / "estimate.json").read_text())["share_legal"]
        assert f"An estimated {100 * share:.1f}% (95% CI " in findings
    if "eval" in real:
        frag = pd.read_csv(work / "fragility.csv")
        assert "ndcg@10: Kendall τ" in findings and "map@100: Kendall τ" in findings
        assert f"of {len(frag):,} pairwise conclusions" in findings
        if "estimate" in real:
            assert frag.robust.notna().all() and "upper bound" in findings
    assert findings.count("→ ") >= 3
    assert page.images_loaded == page.images_total >= 5
    assert "pairs reviewed\n60" in page.text
    if "eval" in real:
        assert "jina_nl" in page.text and "203" in page.text


def test_real_release_round_trips(real_workdir, tmp_path):
    _, ds, verdicts, _ = real_workdir
    summary = build_release(ds, verdicts, tmp_path / "release", ReleasePolicy("exclude"))
    judged = pd.read_csv(verdicts, keep_default_na=False)
    dropped = int(((judged["verdict"] == "legal") & (judged["corrected_nl"] == "")).sum())
    assert summary.removed == dropped
    for src in (str(tmp_path / "release"), f"hf:{tmp_path / 'release'}/hf"):
        back = load_dataset(src, strict=True)
        assert len(back.pairs) == 1108 - dropped
        assert len(back.select("train")) == 886
        corrected = judged[judged["corrected_nl"] != ""]
        by_id = back.by_id()
        for row in corrected.itertuples():
            assert by_id[row.id].question_nl == row.corrected_nl
            assert by_id[row.id].meta_nl["verification"] == "corrected"
        if 274 in by_id:  # the duplicated gold id of question 274 stays deduplicated
            assert by_id[274].article_ids == ds.by_id()[274].article_ids
