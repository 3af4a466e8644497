"""Report from stage outputs: sections only for files present, numbers right, bad input one line."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from bbsard_audit.errors import InputError
from bbsard_audit.report import build_report, load_workdir
from bbsard_audit.report.loaders import find_estimates
from report_fixtures import write_workdir


def test_full_workdir_has_every_section_and_key_numbers(tmp_path):
    files = build_report(write_workdir(tmp_path))
    assert files.sections == ("Audit", "Review campaign", "Evaluation", "Provenance")
    md = files.markdown.read_text()
    assert "- **pairs audited**: 30" in md
    assert "- **flagged**: 6 (20.0%)" in md
    assert "| legal_term | 2 | 33.3% |" in md
    assert "| cohen kappa[verdict] | anna & bart | 0.620 | [0.410, 0.800] | 12 |" in md
    assert "- **estimated share legally inaccurate**: 0.083 [0.031, 0.172]" in md
    assert "| unflagged | 24 | 6 | 0 | 0.000 | [0.000, 0.390] |" in md
    assert "| recall on meaning-changing errors | 0.864 |" in md
    assert "| recall@100 | verified | bm25_fr | e5_fr | 0.598 | 0.631 | -0.033 | 0.012 | 0.036 | yes | 190 |" in md
    assert "| recall@100 | verified | kendall_tau | 0.333 | 0.950 | 0.667 | 1.000 | 0.800 | 0.016 | 190 | 13 |" in md
    assert "| bm25 | verdict | legal | 2 | 0.187 [0.157, 0.217] |" in md and "| 101 |" not in md
    # rank flip bm25_fr <-> e5_fr on recall@100, computed from metrics.csv
    assert "| recall@100 | bm25_fr | 2 | 3 |" in md and "| recall@100 | e5_fr | 3 | 2 |" in md
    # calibration computed from audit.csv x verdicts.csv: 6 flagged reviewed, 2 legal both flagged
    assert "| legally inaccurate (legal) | 12 | 2 | 6 | 0.333 [0.097, 0.700] | 1.000 [0.342, 1.000] |" in md
    html = files.html.read_text()
    assert html.count("data:image/png;base64,") >= 6
    assert "Content-Security-Policy" in html and "<script" not in html
    assert not re.search(r"""(src|href)=["']https?:""", html)


def test_sections_follow_the_files_present(tmp_path):
    only_eval = build_report(write_workdir(tmp_path / "e", audit=False, review=False))
    assert only_eval.sections == ("Evaluation", "Provenance")
    only_audit = build_report(write_workdir(tmp_path / "a", review=False, evaluation=False))
    assert only_audit.sections == ("Audit", "Provenance")
    (tmp_path / "empty").mkdir()
    empty = build_report(tmp_path / "empty")
    assert empty.sections == ("Provenance",)
    assert "No provenance sidecars" in empty.markdown.read_text()


def test_top_risk_pairs_are_side_by_side_and_escaped(tmp_path):
    wd = write_workdir(tmp_path, review=False, evaluation=False)
    audit = pd.read_csv(wd / "audit.csv")
    audit.loc[0, ["question_nl", "risk", "flagged", "flags", "reasons"]] = [
        "<script>alert(1)</script> Wat?", 0.99, True, "legal_term", "first reason | second reason"]
    audit.to_csv(wd / "audit.csv", index=False)
    files = build_report(wd)
    html = files.html.read_text()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; Wat?" in html
    md = files.markdown.read_text()
    top = next(line for line in md.splitlines() if line.startswith("| 100 |"))
    assert "0.990" in top and "first reason<br>second reason" in top


def test_secrets_in_sidecars_never_reach_the_report(tmp_path):
    files = build_report(write_workdir(tmp_path))
    for text in (files.html.read_text(), files.markdown.read_text()):
        assert "SECRET" not in text and "hf_token" not in text and "api_key" not in text
        assert "stricter verdict wins" in text  # the rest of the sidecar is kept


def test_extra_columns_are_shown_but_a_json_layout_the_producer_does_not_write_is_one_line(tmp_path):
    """The report reads JSON through the producers' own records: no key guessing (issue 10)."""
    wd = write_workdir(tmp_path)
    metrics = pd.read_csv(wd / "metrics.csv").assign(new_column="x")
    metrics.to_csv(wd / "metrics.csv", index=False)
    build_report(wd)
    (wd / "agreement.json").write_text(json.dumps({"kappa": 0.5, "ci": [0.3, 0.7], "brand_new": {"x": "y"}}))
    with pytest.raises(InputError, match=r"agreement.json: unknown key\(s\) 'brand_new', 'ci', 'kappa'"):
        build_report(wd)
    assert not (wd / "report.html").exists() or "brand_new" not in (wd / "report.html").read_text()


@pytest.mark.parametrize("name, column", [("audit.csv", "risk"), ("metrics.csv", "subset"),
                                          ("verdicts.csv", "verdict"), ("ranking_shift.csv", "kendall_tau")])
def test_missing_required_column_is_one_clear_error(tmp_path, name, column):
    wd = write_workdir(tmp_path)
    pd.read_csv(wd / name).drop(columns=[column]).to_csv(wd / name, index=False)
    with pytest.raises(InputError, match=rf"{re.escape(name)}: missing column\(s\) {column}"):
        load_workdir(wd)
    assert not (wd / "report.html").exists()


def test_non_integer_id_names_file_and_row(tmp_path):
    wd = write_workdir(tmp_path, audit=False, evaluation=False)
    frame = pd.read_csv(wd / "verdicts.csv")
    frame["id"] = frame["id"].astype(str)
    frame.loc[3, "id"] = "q7"
    frame.to_csv(wd / "verdicts.csv", index=False)
    with pytest.raises(InputError) as err:
        load_workdir(wd)
    assert err.value.one_line().endswith("verdicts.csv, row 5: id 'q7' is not an integer")


def test_find_estimates_reads_common_layouts():
    found = {e.name: e for e in find_estimates({
        "overall": {"kappa": 0.4, "ci_low": 0.1, "ci_high": 0.6, "n": 30},
        "alpha": {"value": 0.45, "ci": [0.2, 0.7]}, "roc_auc": 0.9, "label": "text is skipped",
        "strata": [{"stratum": "flagged", "rate": 0.3, "lower": 0.2, "upper": 0.4}]})}
    assert found["overall.kappa"] == found["overall.kappa"].__class__("overall.kappa", 0.4, 0.1, 0.6, 30)
    assert (found["alpha"].value, found["alpha"].ci_low, found["alpha"].ci_high) == (0.45, 0.2, 0.7)
    assert found["roc_auc"].ci_low is None
    assert found["strata[flagged].rate"].ci_high == 0.4
    assert "label" not in found


def test_cli_report_and_bad_workdir(tmp_path):
    from typer.testing import CliRunner

    from bbsard_audit.cli import app

    wd = write_workdir(tmp_path / "w", evaluation=False)
    runner = CliRunner()
    ok = runner.invoke(app, ["report", "--workdir", str(wd), "--out", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    assert "sections: Audit, Review campaign, Provenance" in ok.stdout
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "out" / "report.meta.json").exists()
    bad = runner.invoke(app, ["report", "--workdir", str(tmp_path / "nope")])
    assert bad.exit_code == 2
    assert bad.stderr.strip() == f"error: {tmp_path / 'nope'}: work folder not found"
    pd.read_csv(wd / "audit.csv").drop(columns=["flags"]).to_csv(wd / "audit.csv", index=False)
    broken = runner.invoke(app, ["report", "--workdir", str(wd)])
    assert broken.exit_code == 2 and "audit.csv: missing column(s) flags" in broken.stderr
    assert "Traceback" not in broken.output


def test_empty_files_one_subset_one_system_still_render(tmp_path):
    wd = write_workdir(tmp_path)
    for name in ("verdicts.csv", "pairwise.csv", "audit.csv", "annotations_raw.csv"):
        pd.read_csv(wd / name).head(0).to_csv(wd / name, index=False)
    metrics = pd.read_csv(wd / "metrics.csv")
    metrics[(metrics.subset == "full") & (metrics.system == "bm25_fr")].to_csv(wd / "metrics.csv", index=False)
    files = build_report(wd)
    md = files.markdown.read_text()
    assert "- **pairs audited**: 0" in md and "- **pairs reviewed**: 0" in md
    assert "System ranks from" not in md  # one subset: no slope chart
    assert "0 system pair(s) whose order" in md
