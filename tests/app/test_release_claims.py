"""The release card claims expert verification only for what was reviewed, and finds the campaign's
agreement.json / estimate.json where the other stages find campaign files (issue 23)."""

from __future__ import annotations

import shutil

import pandas as pd
from typer.testing import CliRunner
from release_fixtures import make_dataset, write_review

from bbsard_audit.app.cli import app
from bbsard_audit.app.release import build_release
from bbsard_audit.base.dataset import load_dataset


def _no_verdicts(path):
    pd.DataFrame(columns=["id", "verdict", "corrected_nl"]).to_csv(path, index=False)
    return path


def test_zero_verdicts_card_says_so_and_the_terminal_warns(tmp_path):
    src = make_dataset(tmp_path / "src")
    (tmp_path / "work").mkdir()
    verdicts = _no_verdicts(tmp_path / "work" / "verdicts.csv")
    res = CliRunner().invoke(app, ["release", "--dataset", str(src), "--verdicts", str(verdicts),
                                   "--out", str(tmp_path / "rel")])
    assert res.exit_code == 0, res.output  # an existing command line keeps working
    assert "warning: no pair has an expert verdict in verdicts.csv" in res.stderr
    assert "0 of 8 pairs reviewed" in res.stdout
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "expert-verified Dutch" not in card and "with expert-verified" not in card
    assert "pretty_name: bBSARD (Dutch not expert-verified)" in card
    assert "**No pair has an expert verdict**: all 8 pairs are" in card


def test_partial_review_is_claimed_as_partial(tmp_path):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    summary = build_release(ds, write_review(tmp_path / "work"), tmp_path / "rel")
    card = (tmp_path / "rel" / "README.md").read_text()
    assert summary.reviewed == 6 and summary.total == 8
    assert "pretty_name: bBSARD (Dutch partly expert-verified, 6 of 8 pairs)" in card
    assert "6 of 8 pairs (75.0%) were reviewed (a final expert verdict); the other 2 are not reviewed" in card
    assert "(expert-verified Dutch)" not in card
    assert "legal-error rate, estimated over all 8 pairs of the audit" in card


def test_agreement_is_found_in_the_campaign_folder_and_its_absence_says_where(tmp_path):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    work = tmp_path / "work"
    verdicts = write_review(work)
    campaign = work / "review"
    campaign.mkdir()
    (campaign / "campaign.json").write_text("{}")
    shutil.move(work / "agreement.json", campaign / "agreement.json")
    summary = build_release(ds, verdicts, tmp_path / "rel")
    card = (tmp_path / "rel" / "README.md").read_text()
    assert "| cohen_kappa[verdict] anna vs bart | 0.71 | [0.45, 0.9] |" in card
    assert not [w for w in summary.warnings if "agreement" in w]

    (campaign / "agreement.json").unlink()
    summary = build_release(ds, verdicts, tmp_path / "rel")
    card = (tmp_path / "rel" / "README.md").read_text()
    assert ("**Inter-annotator agreement**: not available (no `agreement.json` next to the verdicts nor in the "
            "campaign folder `review/`)") in card
    assert str(tmp_path) not in card  # shareable: no local path
    assert any(str(campaign / "agreement.json") in w for w in summary.warnings)
