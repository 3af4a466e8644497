"""The report and the release on the real bBSARD data (../shared): the real audit, real runs through the
eval stage, agreement, estimate and calibration on an illustrative verdicts file, the page checked in
Chromium, and the release read back."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.annotations.agreement import agreement
from bbsard_audit.annotations.estimate import estimate
from bbsard_audit.audit.calibration import calibrate, write_calibration
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit, write_audit
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.eval.pipeline import EvalConfig, evaluate, write_outputs
from bbsard_audit.app.release import ReleasePolicy, build_release
from bbsard_audit.app.report import build_report
from chromium import external, require_chromium, visit

pytestmark = pytest.mark.shared
RUNS = ("bm25_fr", "bm25_nl", "e5_fr", "e5_nl", "jina_fr", "jina_nl")


def illustrative_verdicts(ds, path):
    """A stand-in for a review of the test split: seeded, every verdict type, some corrections."""
    rng = np.random.default_rng(7)
    test = [p for p in ds.pairs if p.split == "test"]
    picked = rng.choice(len(test), size=60, replace=False)
    verdict = rng.choice(["correct", "minor", "legal"], size=60, p=[0.7, 0.15, 0.15])
    rows = [{"id": test[i].id, "verdict": v, "gold_labels_apply": "yes" if v != "legal" else "unsure",
             "corrected_nl": test[i].target.rstrip("?") + " (herzien)?" if v == "legal" and k % 2 else "",
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
    """Every stage run for real on the shared data (a broken stage fails here, never a stand-in)."""
    work = tmp_path_factory.mktemp("shared-report")
    ds = load_dataset(str(shared_dir))
    verdicts = illustrative_verdicts(ds, work / "verdicts.csv")
    result = run_audit(str(shared_dir), AuditOptions(split="test",
                                                     backtranslations=shared_dir / "backtranslations_nl_fr.jsonl"))
    write_audit(result, work, review_budget=40, control=20, seed=0)
    # before eval: eval finds the estimate.json next to the verdicts (fragility.csv's expected errors)
    audit, queue = pd.read_csv(work / "audit.csv"), pd.read_csv(work / "review_queue.csv")
    estimated = estimate(audit, pd.read_csv(verdicts, keep_default_na=False), queue, seed=0)
    (work / "estimate.json").write_text(json.dumps(estimated.to_dict()))
    config = EvalConfig(runs={n: shared_runs / f"{n}.trec" for n in RUNS}, qrels=shared_runs / "qrels_test203.trec",
                        verdicts=verdicts, audit=work / "audit.csv", resamples=1000, null_draws=1000, seed=0)
    write_outputs(evaluate(config), work)
    report = agreement(pd.read_csv(work / "annotations_raw.csv", keep_default_na=False))
    (work / "agreement.json").write_text(json.dumps(report.to_dict()))
    write_calibration(calibrate(work / "audit.csv", verdicts), work)
    return work, ds, verdicts


def test_real_report_renders_in_chromium(real_workdir, tmp_path):
    work, _, _ = real_workdir
    files = build_report(work)
    assert files.sections == ("Findings", "Audit", "Review campaign", "Evaluation", "Provenance")
    md = files.markdown.read_text()
    assert "- **pairs reviewed**: 60" in md
    for name in RUNS:
        assert f"| {name} | recall@100 |" in md
    assert "- **queries (full)**: 203" in md
    assert "- **pairs audited**: 222" in md
    assert "- **estimated share legally inaccurate**: " in md and "- **expected inaccurate pairs**: " in md
    assert "Per-signal precision / recall / ROC-AUC" in md
    require_chromium()
    page = visit(files.html, tmp_path / "shared-report.png", width=1400)
    assert page.console_errors == [] and external(page.requests, files.html) == [] and page.resources == []
    assert page.sections == ["Findings", "Audit", "Review campaign", "Evaluation", "Provenance"]
    assert page.anchors_ok
    findings = page.text.split("Findings", 2)[2].split("\nAudit\n", 1)[0]
    flagged = int(pd.read_csv(work / "audit.csv")["flagged"].sum())
    assert f"{flagged:,} of 222 translations" in findings
    share = json.loads((work / "estimate.json").read_text())["share_legal"]
    assert f"An estimated {100 * share:.1f}% (95% CI " in findings
    frag = pd.read_csv(work / "fragility.csv")
    assert "Kendall τ" in findings and "ndcg@10" in findings and "map@100" in findings
    assert f"of {len(frag):,} pairwise conclusions" in findings
    assert frag.robust.notna().all() and "upper bound" in findings
    assert findings.count("→ ") >= 3
    assert page.images_loaded == page.images_total >= 5
    assert "pairs reviewed\n60" in page.text
    assert "jina_nl" in page.text and "203" in page.text


def test_real_release_round_trips(real_workdir, tmp_path):
    _, ds, verdicts = real_workdir
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
            assert by_id[row.id].target == row.corrected_nl
            assert by_id[row.id].target_meta["verification"] == "corrected"
        if 274 in by_id:  # the duplicated gold id of question 274 stays deduplicated
            assert by_id[274].article_ids == ds.by_id()[274].article_ids
