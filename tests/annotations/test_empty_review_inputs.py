"""Empty review inputs are said as such, never as a result (issue 23): `annotate agreement` on a file
with no annotation refuses in one line and writes nothing; `audit calibrate` on a verdicts file with no
verdict says so, naming the file; `annotate status` says what each of its numbers counts."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest
from conftest import audit_frame, write_review_files
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.verdicts import RAW

runner = CliRunner()


def test_agreement_on_no_annotation_refuses_and_writes_nothing(tmp_path):
    raw = tmp_path / "annotations_raw.csv"
    pd.DataFrame(columns=[c.name for c in RAW.columns if c.required]).to_csv(raw, index=False)
    out = tmp_path / "out"
    res = runner.invoke(app, ["annotate", "agreement", "--raw", str(raw), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert res.output.count("\n") == 1 and "annotations_raw.csv" in res.output
    assert "no annotation in this file" in res.output and "disagreement" not in res.output
    assert not out.exists()


def test_calibrate_on_an_empty_verdicts_file_says_it_holds_no_verdict(tmp_path):
    audit_frame(range(1, 6), [True, False, True, False, False]).to_csv(tmp_path / "audit.csv", index=False)
    pd.DataFrame(columns=["id", "verdict"]).to_csv(tmp_path / "verdicts.csv", index=False)
    res = runner.invoke(app, ["audit", "calibrate", "--audit", str(tmp_path / "audit.csv"),
                              "--verdicts", str(tmp_path / "verdicts.csv"), "--out", str(tmp_path / "cal")])
    assert res.exit_code == 2, res.output
    assert res.output.count("\n") == 1 and "verdicts.csv" in res.output
    assert "holds no verdict" in res.output and "matches" not in res.output


@pytest.mark.label_studio
@pytest.mark.timeout(1800)
def test_status_says_what_each_number_counts(ls_env, tmp_path, toy_pairs):
    audit, queue = write_review_files(tmp_path / "run", toy_pairs[:2], budget=1, control=1)
    name = f"t-{uuid.uuid4().hex[:10]}"
    pushed = runner.invoke(app, ["annotate", "push", "--audit", str(audit), "--project", name, "--overlap", "2"])
    assert pushed.exit_code == 0, pushed.output
    res = runner.invoke(app, ["annotate", "status", "--project", name])
    assert res.exit_code == 0, res.output
    assert ("0 of 2 task(s) done (2 annotation(s) required per task), 0 awaiting a second annotator, "
            "2 never annotated; 0 annotation(s) in all") in res.output
