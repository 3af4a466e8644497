"""Report from stage outputs: sections only for files present, numbers right, bad input one line."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from bbsard_audit.base.errors import InputError
from bbsard_audit.app.report import build_report, load_workdir
from report_fixtures import write_workdir


def test_full_workdir_has_every_section_and_key_numbers(tmp_path):
    files = build_report(write_workdir(tmp_path))
    assert files.sections == ("Findings", "Audit", "Review campaign", "Evaluation", "Provenance")
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
    assert only_eval.sections == ("Findings", "Evaluation", "Provenance")
    only_audit = build_report(write_workdir(tmp_path / "a", review=False, evaluation=False))
    assert only_audit.sections == ("Findings", "Audit", "Provenance")
    (tmp_path / "empty").mkdir()  # no stage output: refused, nothing written (issue 15)
    with pytest.raises(InputError, match="no stage output here"):
        build_report(tmp_path / "empty")
    assert not any((tmp_path / "empty").iterdir())


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


def test_cli_report_and_bad_workdir(tmp_path):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    wd = write_workdir(tmp_path / "w", evaluation=False)
    runner = CliRunner()
    ok = runner.invoke(app, ["report", "--workdir", str(wd), "--out", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    assert "sections: Findings, Audit, Review campaign, Provenance" in ok.stdout
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


def test_findings_first_in_sentences_with_numbers_linking_to_their_sections(tmp_path):
    files = build_report(write_workdir(tmp_path))
    md = files.markdown.read_text()
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert md.index("## Findings") < md.index("## Audit")
    lines = [line for line in findings.splitlines() if line.startswith("- ")]
    assert lines[0] == ("- 6 of 30 translations (20.0%) are flagged as suspect; the most frequent flags are "
                        "`legal_term` (2 pairs), `negation` (1 pair), `number` (1 pair); 7 flags raised on flagged "
                        "pairs in all. ([Flagged pairs by type](#audit-flags))")
    assert lines[1].startswith("- An estimated 8.3% (95% CI 3.1%–17.2%) of the translations are legally inaccurate, "
                               "about 2 pairs (legal-error rate, estimated over all 30 pairs of the audit); 2 of the "
                               "12 reviewed pairs (a final expert verdict) were judged legally inaccurate: 16.7%, "
                               "Wilson 95% CI 4.7%–44.8%, over the 12 reviewed pairs only")
    assert lines[1].endswith("(#review-estimate))")
    shift = [line for line in lines if line.startswith("- ndcg@10:") or line.startswith("- map@100:")]
    assert len(shift) == 2 and all("(#evaluation-shift)" in line for line in shift)
    assert shift[0].startswith("- ndcg@10: Kendall τ between the system orders on the full set and after "
                               "verification (190 verified questions: evaluated, reviewed and judged correct or minor) is "
                               "0.33; 1 system pair(s) swap places, 0 significantly")
    recall = next(line for line in lines if "recall@100" in line and "Kendall" in line) if any(
        line.startswith("- recall@100") for line in lines) else None
    assert recall is None  # only the headline metrics present (ndcg@10, map@100) get a sentence
    assert lines[-1] == ("- 1 of 3 pairwise conclusions (system a beats b on a metric) are fragile: removing no more "
                         "questions than the legally inaccurate ones expected among the 13 judged questions not "
                         "reviewed (expected 1.2, upper bound 4.5) could undo them; the most fragile, recall@100 "
                         "bm25_fr &gt; e5_fr (Δ 0.008, p = 0.41), is undone by removing 2 of 203 questions. "
                         "([Fragile conclusions](#evaluation-fragility))")
    for anchor in ("audit-flags", "review-estimate", "evaluation-shift", "evaluation-fragility"):
        assert f'<a id="{anchor}"></a>' in md
        assert f'<section id="{anchor}">' in files.html.read_text()
    # the evaluation section lists the fragile conclusions first, the non-robust ones on top
    evaluation = md.split("## Evaluation", 1)[1]
    assert evaluation.index("### Fragile conclusions") < evaluation.index("### Metrics, full vs verified")
    assert "| recall@100 | bm25_fr | e5_fr | 0.008 | 0.410 | 2 of 203 | 4.5 | no |" in evaluation


def test_the_null_model_decides_whether_an_order_survives(tmp_path):
    wd = write_workdir(tmp_path, audit=False, review=False)
    null = pd.read_csv(wd / "null_model.csv")
    null.assign(metric="ndcg@10").to_csv(wd / "null_model.csv", index=False)
    findings = build_report(wd).markdown.read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    ndcg = next(line for line in findings.splitlines() if line.startswith("- ndcg@10"))
    assert ("is 0.33 (below the 95% range [0.67, 1.00] of removing 13 questions at random, p = 0.02); 1 system "
            "pair(s) swap places, 0 significantly: the order does not survive verification.") in ndcg
    assert "- map@100:" in findings and "the order survives verification" in findings  # no null row: flips decide


def test_too_few_verified_questions_to_tell(tmp_path):
    """A null range as wide as [0.07, 1.00] (10 verified questions of 203) cannot tell survival from
    change: the sentence says so, with the verified count, instead of 'the order survives'."""
    wd = write_workdir(tmp_path, audit=False, review=False)
    shift = pd.read_csv(wd / "ranking_shift.csv")
    shift.assign(kendall_tau=1.0, n_flips=0, n_flips_significant=0, n_queries_b=10).to_csv(
        wd / "ranking_shift.csv", index=False)
    null = pd.read_csv(wd / "null_model.csv")
    null.loc[null["statistic"] == "kendall_tau", ["null_low", "null_high", "p_value"]] = [0.07, 1.0, 1.0]
    null.assign(metric="ndcg@10").to_csv(wd / "null_model.csv", index=False)
    for name in ("ranking_shift.meta.json", "null_model.meta.json"):  # the files were edited on purpose
        (wd / name).unlink(missing_ok=True)
    findings = build_report(wd).markdown.read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    [line] = [line for line in findings.splitlines() if "Kendall τ" in line]
    assert "after verification (10 verified questions: evaluated, reviewed and judged correct or minor) is 1.00 " \
           "on ndcg@10" in line
    assert "anywhere in [0.07, 1.00] on ndcg@10" in line and "too few verified questions (10) to tell whether" in line
    assert "to tell whether verification changes the system order" in line and "survives" not in line


def test_long_tables_fold_into_details_without_scripts(tmp_path):
    wd = write_workdir(tmp_path)
    audit = pd.read_csv(wd / "audit.csv")
    files = build_report(wd)
    html = files.html.read_text()
    assert "<script" not in html and "<details><summary>" in html
    # the top-risk table shows one pair open; the other nine are folded, none lost
    top = html.split('id="audit-top"', 1)[1].split("</section>", 1)[0]
    opened, folded = top.split("<details>", 1)
    assert opened.count("<tr>") == 2 and folded.count("<tr>") == 1 + min(len(audit), 10) - 1
    # provenance: one collapsed block per stage
    prov = html.split('<section id="provenance">', 1)[1]
    for stage in ("audit", "review", "eval"):
        assert f'<section id="provenance-{stage}">' in prov
    assert prov.count("<details><summary>") >= 3


def test_findings_before_any_review(tmp_path):
    """Audit + eval without verdicts: the order full -> unflagged, fragility against 5% of the questions."""
    wd = write_workdir(tmp_path, review=False)
    shift = pd.read_csv(wd / "ranking_shift.csv").assign(subset_b="unflagged")
    shift.to_csv(wd / "ranking_shift.csv", index=False)
    frag = pd.read_csv(wd / "fragility.csv")
    frag.assign(expected_errors_unverified=None, expected_errors_unverified_high=None, robust=None).to_csv(
        wd / "fragility.csv", index=False)
    md = build_report(wd).markdown.read_text()
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "legally inaccurate" not in findings  # no verdicts, no estimate: no sentence about them
    assert ("- ndcg@10: Kendall τ between the system orders on the full set and after keeping only the unflagged "
            "questions is 0.33; 1 system pair(s) swap places, 0 significantly: the order survives keeping only "
            "the unflagged questions.") in findings
    assert ("- 1 of 3 pairwise conclusions (system a beats b on a metric) are undone by removing at most 10 of 203 "
            "judged questions (5%); the most fragile, recall@100 bm25_fr &gt; e5_fr (Δ 0.008, p = 0.41), is undone by "
            "removing 2 of 203 questions.") in findings
    evaluation = md.split("## Evaluation", 1)[1]
    assert "| recall@100 | bm25_fr | e5_fr | 0.008 | 0.410 | 2 of 203 |" in evaluation
    assert "expected errors, upper bound" not in evaluation


def test_one_sentence_when_every_headline_metric_keeps_its_order(tmp_path):
    """Three identical 'the order survives' sentences would bury the news: they become one."""
    wd = write_workdir(tmp_path)
    shift = pd.read_csv(wd / "ranking_shift.csv")
    shift.assign(kendall_tau=1.0, n_flips=0, n_flips_significant=0).to_csv(wd / "ranking_shift.csv", index=False)
    null = pd.read_csv(wd / "null_model.csv")
    null.loc[null["statistic"] == "kendall_tau", "p_value"] = 1.0
    null.to_csv(wd / "null_model.csv", index=False)
    for name in ("ranking_shift.meta.json", "null_model.meta.json"):  # the files were edited on purpose
        (wd / name).unlink(missing_ok=True)
    md = build_report(wd).markdown.read_text()
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    taus = [line for line in findings.splitlines() if "Kendall τ" in line]
    assert len(taus) == 1, taus
    assert taus[0].startswith("- The system order survives verification on every headline metric: Kendall τ between "
                              "the orders on the full set and after verification (190 verified questions: evaluated, reviewed "
                              "and judged correct or minor) is 1.00 on ndcg@10 and 1.00 on "
                              "map@100")
    assert taus[0].endswith("no system pair swaps places. ([Ranking shift: Kendall tau and the random-removal null]"
                            "(#evaluation-shift))")
