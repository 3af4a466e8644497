"""Frictions three newcomers met following the README and docs from a fresh clone (round of
2026-12-05): each a message that now says what to do, or an output that now says what it holds."""

from __future__ import annotations

from pathlib import Path

from conftest import audit_frame
from typer.testing import CliRunner

from bbsard_audit.app.cli import app

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _error_line(result) -> str:
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def _work_folder(root: Path) -> Path:
    """The README's work folder $W: a run, qrels and an audit, and its campaign folder $W/review."""
    root.mkdir()
    (root / "review").mkdir()
    (root / "review" / "campaign.json").write_text("{}")
    (root / "qrels.trec").write_text("1 0 a 1\n2 0 b 1\n")
    (root / "run.trec").write_text("1 Q0 a 1 2.0 x\n2 Q0 a 1 2.0 x\n")
    audit_frame([1, 2], [True, False]).to_csv(root / "audit.csv", index=False)
    return root


def test_the_work_folder_given_as_campaign_names_the_campaign_folder_inside_it(tmp_path):
    """`--campaign $W` for `--campaign $W/review` said only "$W/campaign.json: not found"."""
    work = _work_folder(tmp_path / "w")
    line = _error_line(cli("eval", "--qrels", work / "qrels.trec", "--run", f"x={work / 'run.trec'}",
                           "--campaign", work, "--out", tmp_path / "out"))
    assert f"{work}: not a campaign folder (no campaign.json" in line and f"--campaign {work / 'review'}" in line, line
    assert not (tmp_path / "out").exists()
    line = _error_line(cli("annotate", "estimate", "--audit", work / "audit.csv", "--campaign", work,
                           "--out", tmp_path / "estimate.json"))
    assert f"--campaign {work / 'review'}" in line, line
    line = _error_line(cli("annotate", "push", "--audit", work / "audit.csv", "--project", "p", "--campaign", work,
                           "--next", "5", "--url", "http://127.0.0.1:9"))
    assert f"--campaign {work / 'review'}" in line, line
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _error_line(cli("eval", "--qrels", work / "qrels.trec", "--run", f"x={work / 'run.trec'}",
                           "--campaign", empty, "--out", tmp_path / "out"))
    assert line.endswith("`annotate push --campaign DIR --queue review_queue.csv` starts one in DIR)"), line


def test_eval_with_a_campaign_says_what_the_cleaned_benchmark_concludes():
    """Stage 4's `eval --campaign` wrote cleaned.csv, rank_sets.csv and cleaned_pairs.csv without a word:
    its terminal said only the verified subset's line, so the cleaned benchmark went unnoticed."""
    import pandas as pd

    from bbsard_audit.eval.ranking_shift import cleaned_said

    cleaned = pd.DataFrame({"system": ["a", "b"], "metric": "ndcg@10", "reviewed": 61, "unreviewed": 142})
    pairs = pd.DataFrame({"conclusion": ["holds"] * 68 + ["tied"] * 4})
    assert cleaned_said(cleaned, pairs) == (
        "cleaned benchmark (no legal error; 61 of 203 judged questions reviewed, the rest estimated from the "
        "campaign's draws): of 72 full-set conclusions (every metric), 68 hold, 4 tied, 0 flip (cleaned.csv with "
        "95% intervals, rank_sets.csv, cleaned_pairs.csv)")
    assert cleaned_said(None, None) is None


def test_an_mteb_results_file_given_as_a_run_says_which_mteb_file_is_a_run(tmp_path):
    """A curator passed MTEB's {task}.json (scores only) as --run and read "id dataset_revision: value must
    be a list of docids", which names neither the file's kind nor the one to give."""
    import json

    (tmp_path / "qrels.trec").write_text("q1 0 d1 1\n")
    results = tmp_path / "MiniLegal.json"
    results.write_text(json.dumps({"dataset_revision": "x", "task_name": "MiniLegal", "mteb_version": "1.14.0",
                                   "scores": {"test": [{"hf_subset": "de", "main_score": 0.5}]}}))
    line = _error_line(cli("eval", "--qrels", tmp_path / "qrels.trec", "--run", f"e5={results}",
                           "--out", tmp_path / "out"))
    assert f"{results}: an MTEB results file" in line and "save_predictions" in line, line
    predictions = tmp_path / "MiniLegal_predictions.json"  # the file to give instead: accepted
    predictions.write_text(json.dumps({"q1": {"d1": 0.9, "d2": 0.1}}))
    assert cli("eval", "--qrels", tmp_path / "qrels.trec", "--run", f"e5={predictions}",
               "--out", tmp_path / "out").exit_code == 0


def test_a_beir_qrels_file_given_as_qrels_says_how_beir_qrels_are_read(tmp_path):
    """A curator gave their benchmark's qrels/test.tsv to --qrels and read only "expected 4 columns"."""
    qrels = tmp_path / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    line = _error_line(cli("eval", "--qrels", qrels, "--run", f"x={tmp_path / 'run.trec'}", "--out", tmp_path / "out"))
    assert line == (f"error: {qrels}, row 1: expected 4 columns (qid iter docid grade), found 3; a BEIR qrels file "
                    "(query-id corpus-id score) is read with its queries through a manifest: --dataset FILE.yaml "
                    "--split NAME (docs/formats.md, Manifest)"), line
