"""`bbsard-audit demo` on the embedded sample: every step that ran left its outputs, the rest say why not."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit import demo
from bbsard_audit.cli import app
from bbsard_audit.dataset import load_dataset, sample_dir

EXPECTED = {  # step -> files it must leave in the demo folder
    "validate": ["dataset.json"],
    "audit": ["audit.csv", "audit.meta.json", "review_queue.csv"],
    "selftest": ["selftest.csv", "selftest.json"],
    "verdicts": ["verdicts.csv", "annotations_raw.csv"],
    "agreement": ["agreement.json", "disagreements.csv"],
    "estimate": ["estimate.json"],
    "calibrate": ["calibration.json"],
    "eval": ["metrics.csv", "ranking_shift.csv", "pairwise.csv", "null_model.csv", "fr_nl_gap.csv"],
    "report": ["report.html", "report.md"],
    "release": ["release/CHANGELOG.csv", "release/README.md", "release/hf/test/dataset_dict.json"],
}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    if not (sample_dir() / "questions_fr_test.csv").exists():
        pytest.skip("the embedded sample (bbsard_audit/sample) is not in this checkout yet")
    out = tmp_path_factory.mktemp("demo") / "out"
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["demo", "--out", str(out)])
    return out, result, time.perf_counter() - started


def test_demo_ends_with_the_report_path_and_is_fast(demo_run):
    out, result, seconds = demo_run
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == str(out / "report.html")
    assert seconds < 120


def test_every_step_ran_or_says_why_not(demo_run):
    out, _, _ = demo_run
    steps = {s["name"]: s for s in json.loads((out / "demo.json").read_text())["steps"]}
    assert list(steps) == [name for name, _ in demo.STEPS]
    assert steps["validate"]["status"] == steps["report"]["status"] == "ran"
    for name, step in steps.items():
        if step["status"] == "ran":
            for rel in EXPECTED[name]:
                assert (out / rel).exists(), f"{name} ran but {rel} is missing"
        else:
            assert step["detail"], name
    if steps["verdicts"]["status"] == "ran":
        assert steps["release"]["status"] == "ran"


def test_outputs_are_consistent_with_the_sample(demo_run):
    out, _, _ = demo_run
    steps = {s["name"]: s["status"] for s in json.loads((out / "demo.json").read_text())["steps"]}
    ds = load_dataset("sample")
    html = (out / "report.html").read_text()
    if steps["audit"] == "ran":
        audit = pd.read_csv(out / "audit.csv")
        assert sorted(audit["id"]) == sorted(p.id for p in ds.pairs)
        assert "<h2>Audit</h2>" in html
    if steps["eval"] == "ran":
        metrics = pd.read_csv(out / "metrics.csv")
        systems = set(metrics["system"])
        assert any(s.endswith("fr") for s in systems) and any(s.endswith("nl") for s in systems), systems
        assert "full" in set(metrics["subset"])
        if steps["verdicts"] == "ran":
            assert "verified" in set(metrics["subset"])
        assert "<h2>Evaluation</h2>" in html
    if steps["verdicts"] == "ran":
        assert "<h2>Review campaign</h2>" in html
    if steps["release"] == "ran":
        release = out / "release"
        for src in (str(release), f"hf:{release}/hf"):
            back = load_dataset(src)
            assert {p.id for p in back.pairs} <= {p.id for p in ds.pairs}
            assert all(p.meta_nl["verification"] for p in back.pairs)


def test_a_missing_stage_is_skipped_with_a_reason(monkeypatch, tmp_path):
    def unavailable(module, *names):
        raise ImportError(f"No module named {module!r}")

    monkeypatch.setattr(demo, "_import", unavailable)
    for step, stage in ((demo._eval, "eval"), (demo._audit, "audit")):
        with pytest.raises(demo.Skipped, match=f"{stage} not available"):
            step({"out": tmp_path})


def test_terminal_describes_the_queue_written_and_counts_flags_like_the_report(demo_run):
    """One flag count with one label in the terminal and the report; the queue as review_queue.csv has it."""
    out, result, _ = demo_run
    steps = {s["name"]: s for s in json.loads((out / "demo.json").read_text())["steps"]}
    if steps["audit"]["status"] != "ran":
        pytest.skip("audit did not run")
    audit, queue = pd.read_csv(out / "audit.csv"), pd.read_csv(out / "review_queue.csv")
    flagged = audit[audit["flagged"]]
    n_flags = int(flagged["flags"].fillna("").str.split(";").explode().ne("").sum())
    risk, control = int((queue["queue"] == "risk").sum()), int((queue["queue"] == "control").sum())
    coverage = "all" if risk == len(flagged) else f"the {risk} riskiest of {len(flagged)}"
    detail = steps["audit"]["detail"]
    assert detail == (f"{len(audit)} pairs audited, {len(flagged)} flagged, {n_flags} flags raised on flagged pairs; "
                      f"review queue: {risk} flagged ({coverage}) + {control} control")
    assert "- **flags raised on flagged pairs**: " + str(n_flags) in (out / "report.md").read_text()


@pytest.mark.browser
def test_demo_report_is_short_and_opens_with_findings_in_chromium(demo_run, tmp_path):
    from chromium import require_chromium, visit

    require_chromium()
    out, _, _ = demo_run
    page = visit(out / "report.html", tmp_path / "demo.png", width=1400)
    assert page.console_errors == [] and page.anchors_ok
    assert page.height <= 9000, page.height
    assert page.sections[0] == "Findings"
    findings = page.text.split("Findings", 2)[2].split("\nAudit\n", 1)[0]
    assert "translations" in findings and "flagged as suspect" in findings
    assert "legally inaccurate" in findings and "% CI" in findings
    assert "Kendall τ" in findings and "pairwise conclusions" in findings
    assert findings.count("→ ") >= 4  # every sentence links to its section
