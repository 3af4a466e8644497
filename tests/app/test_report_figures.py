"""Every review figure the report states has one definition and its scope beside it (issue 23): one
count of reviewed pairs in every section, queued pairs named as such, the legal-error rate (estimated
over its population) never confused with the share of reviewed pairs judged legal, nor with a
simulated campaign's rate."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from report_fixtures import write_workdir

from bbsard_audit.app.report import build_report
from bbsard_audit.app.report.simulation_section import SimulationRun, _estimate_scope
from bbsard_audit.app.review_figures import ReviewFigures


def _review_with_unresolved(tmp_path: Path) -> Path:
    """The fixture's 12 verdicts + 2 unresolved disagreements, and an estimate whose strata stand on 9 pairs."""
    wd = write_workdir(tmp_path)
    verdicts = pd.read_csv(wd / "verdicts.csv", keep_default_na=False)
    extra = pd.DataFrame({"id": [109, 110], "verdict": "", "corrected_nl": "", "gold_labels_apply": "",
                          "n_annotations": 2, "annotators": "anna;bart", "agreement_status": "unresolved"})
    pd.concat([verdicts, extra]).to_csv(wd / "verdicts.csv", index=False)
    estimate = json.loads((wd / "estimate.json").read_text())
    estimate["strata"][1]["reviewed"] = 3  # the pairs that stand for the stratum, not every reviewed pair
    (wd / "estimate.json").write_text(json.dumps(estimate))
    (wd / "verdicts.meta.json").unlink(missing_ok=True)  # the files were edited on purpose
    return wd


def test_one_count_of_reviewed_pairs_in_every_section(tmp_path):
    wd = _review_with_unresolved(tmp_path)
    md = build_report(wd).markdown.read_text()
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "2 of the 12 reviewed pairs (a final expert verdict) were judged legally inaccurate" in findings
    assert "9 expert-reviewed" not in findings
    assert "- **pairs reviewed**: 12 (2 unresolved disagreement(s) not counted)" in md
    assert "Reviewed means a final expert verdict in verdicts.csv" in md
    queue = pd.read_csv(wd / "review_queue.csv")
    done = int(queue["id"].isin(pd.read_csv(wd / "verdicts.csv").dropna(subset=["verdict"])["id"]).sum())
    assert f"- **queued pairs reviewed**: {done} of the {len(queue)} queued pairs" in md
    assert "- **verdict legal (share of reviewed)**: 2 (16.7%)" in md  # over the 12 reviewed, not 14 rows


def test_the_two_error_rates_name_their_scopes(tmp_path):
    wd = write_workdir(tmp_path)
    md = build_report(wd).markdown.read_text()
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "(legal-error rate, estimated over all 30 pairs of the audit)" in findings
    assert "16.7%, Wilson 95% CI 4.7%–44.8%, over the 12 reviewed pairs only" in findings
    assert "- **scope**: legal-error rate, estimated over all 30 pairs of the audit" in md


def test_the_estimate_names_the_split_from_its_sidecar_or_the_audits():
    est = type("E", (), {"share_legal": 0.146, "ci_low": 0.081, "ci_high": 0.266, "population": 222, "level": 0.95})
    assert ReviewFigures.of(estimate=est, split="test").legal_rate.named == \
        "legal-error rate, estimated over all 222 test pairs"
    assert ReviewFigures.of(estimate=est, split="test").legal_rate.percent() == "14.6% (95% CI 8.1%–26.6%)"


def test_the_simulated_campaign_rate_says_what_it_is_over():
    curve = pd.DataFrame({"round": [1], "reviewed": [68], "found_legal": [10], "estimate": [0.215],
                          "ci_low": [0.14], "ci_high": [0.32]})
    run = SimulationRun("learning", Path("campaign"), curve, {"n_pairs": 222, "split": "test", "oracle_coverage": {
        "oracle_rows": 68, "asked": 80, "unknown": 12}}, None)
    text = _estimate_scope([run])
    assert "own estimate over all 222 test pairs" in text and "68 oracle verdicts" in text
    assert "12 asked pair(s) without one left out" in text and "not the review's estimate (estimate.json)" in text
