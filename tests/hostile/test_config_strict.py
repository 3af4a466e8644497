"""Config files are strict: a misspelt key names the nearest valid one, numbers are finite, severity
levels ordered, a value never stands where a table belongs; every problem is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.errors import InputError

runner = CliRunner()


def load_risk(tmp_path: Path, text: str, suffix: str = ".toml"):
    from bbsard_audit.audit.risk import RiskConfig

    path = tmp_path / f"config{suffix}"
    path.write_text(text)
    return RiskConfig.load(path)


@pytest.mark.parametrize("text, message", [
    ("[weights]\nterm_rejectd = 0.9\n", "unknown key 'weights.term_rejectd' in [weights]; did you mean 'term_rejected'?"),
    ("[risks]\nflag_threshold = 0.4\n", "unknown section 'risks'; did you mean 'risk'?"),
    ("[signals.bt_chrf]\ntreshold = 30.0\n", "unknown key 'signals.bt_chrf.treshold' in [signals.bt_chrf]; did you mean 'threshold'?"),
    ("[signals.bt_chrff]\nthreshold = 30.0\n", "unknown section 'signals.bt_chrff' in [signals]; did you mean 'bt_chrf'?"),
    ("[crosslingual]\nmargn = 'ratio'\n", "did you mean 'margin'?"),
])
def test_unknown_keys_name_the_nearest_valid_one(tmp_path, text, message):
    with pytest.raises(InputError) as err:
        load_risk(tmp_path, text)
    assert message in err.value.one_line()


@pytest.mark.parametrize("text, suffix, message", [
    ("[signals.bt_chrf]\nthreshold = nan\n", ".toml", "signals.bt_chrf.threshold = nan: must be a finite number"),
    ("[signals.xling_z]\nscale = inf\n", ".toml", "signals.xling_z.scale = inf: must be a finite number"),
    ("[weights]\nomission = -inf\n", ".toml", "weights.omission = -inf: must be a finite number"),
    ("risk:\n  flag_threshold: .nan\n", ".yaml", "risk.flag_threshold = nan: must be a finite number"),
])
def test_nan_and_inf_are_rejected(tmp_path, text, suffix, message):
    with pytest.raises(InputError) as err:
        load_risk(tmp_path, text, suffix)
    assert message in err.value.one_line()


def test_severity_levels_must_be_ordered(tmp_path):
    with pytest.raises(InputError, match=r"ordered high > medium > low, got high = 0.3, medium = 0.5, low = 0.25"):
        load_risk(tmp_path, "[risk.severity]\nhigh = 0.3\n")


@pytest.mark.parametrize("text, message", [
    ("risk = 0.5\n", "risk must be a table ([risk]), not a number 0.5"),
    ("signals = 3\n", "signals must be a table ([signals]), not an integer 3"),
    ("[risk]\nseverity = 0.5\n", "risk.severity must be a table ([risk.severity]), not a number 0.5"),
    ("[signals]\nbt_chrf = 40\n", "signals.bt_chrf must be a table"),
    ("[risk]\nflag_threshold = 'high'\n", "risk.flag_threshold must be a number (like 0.5), not a string 'high'"),
    ("[crosslingual]\nk = 4.5\n", "crosslingual.k must be an integer (like 4), not a number 4.5"),
])
def test_a_scalar_where_a_table_belongs_and_wrong_kinds_are_one_line(tmp_path, text, message):
    with pytest.raises(InputError) as err:
        load_risk(tmp_path, text)
    assert message in err.value.one_line()


def test_a_valid_override_still_merges(tmp_path):
    cfg = load_risk(tmp_path, "[weights]\nomission = 0.3\nbt_divergent = 0.2\n[signals.bt_chrf]\nthreshold = 35\n")
    assert cfg.weights["omission"] == 0.3 and cfg.rules["bt_chrf"].threshold == 35.0
    assert cfg.weights["term_rejected"] == 0.85  # untouched defaults stay


def test_audit_cli_config_scalar_is_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("risk = 0.5\n")
    result = runner.invoke(app, ["audit", "--config", str(bad), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.strip() == f"error: {bad}: risk must be a table ([risk]), not a number 0.5"


# ---------------------------------------------------------------- adjudication.toml

@pytest.mark.parametrize("text, message", [
    ("[adjudication]\nrul = 'lenient'\n", "unknown key 'adjudication.rul' in [adjudication]; did you mean 'rule'?"),
    ("[adjudicaton]\nrule = 'lenient'\n", "unknown section 'adjudicaton'; did you mean 'adjudication'?"),
    ("adjudication = 'stricter'\n", "adjudication must be a table ([adjudication]), not a string 'stricter'"),
    ("[adjudication]\nthird_annotation_resolves = 'yes'\n",
     "adjudication.third_annotation_resolves must be a boolean (like True), not a string 'yes'"),
    ("[adjudication]\nrule = 'strict'\n", "adjudication rule 'strict' is not one of stricter, lenient, none"),
])
def test_adjudication_config_is_strict(tmp_path, text, message):
    from bbsard_audit.annotations.adjudication import AdjudicationRule

    path = tmp_path / "adjudication.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        AdjudicationRule.load(path)
    assert message in err.value.one_line()


def test_adjudication_partial_override_keeps_the_other_default(tmp_path):
    from bbsard_audit.annotations.adjudication import AdjudicationRule

    path = tmp_path / "adjudication.toml"
    path.write_text("[adjudication]\nrule = 'lenient'\n")
    assert AdjudicationRule.load(path) == AdjudicationRule(rule="lenient", third_annotation_resolves=True)


def test_agreement_cli_with_a_scalar_adjudication_config_is_one_line(tmp_path):
    from report_fixtures import write_workdir

    work = write_workdir(tmp_path / "w")
    bad = tmp_path / "adj.toml"
    bad.write_text("adjudication = 3\n")
    result = runner.invoke(app, ["annotate", "agreement", "--raw", str(work / "annotations_raw.csv"),
                                 "--n-boot", "20", "--adjudication", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "adjudication must be a table" in result.output


def test_label_studio_config_section_must_be_a_table_with_known_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    path = tmp_path / "config.toml"
    for text, message in (("label_studio = 'http://x'\n", "label_studio must be a table"),
                          ("[label_studio]\napi_kee = 'k'\n", "did you mean 'api_key'?")):
        path.write_text(text)
        result = runner.invoke(app, ["annotate", "status", "--project", "p", "--config", str(path)])
        assert result.exit_code == 2 and "Traceback" not in result.output and message in result.output, result.output
