"""The risk rule: noisy-OR of flag weights and soft continuous signals; config overrides and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.audit.findings import Finding
from bbsard_audit.audit.risk import RiskConfig, combine
from bbsard_audit.base.errors import InputError


def _cfg(tmp_path, text, suffix=".toml"):
    path = tmp_path / f"cfg{suffix}"
    path.write_text(text, encoding="utf-8")
    return RiskConfig.load(path)


def test_noisy_or_of_flag_weights_and_severity(tmp_path):
    cfg = _cfg(tmp_path, "[weights]\nterm_rejected = 0.8\nterm_missing = 0.3\n[signals]\n")
    cfg.rules.clear()
    findings = [[], [Finding("term_missing", "a")], [Finding("term_rejected", "b"), Finding("term_missing", "c")],
                [Finding("brand_new_flag", "d")]]
    out = combine(findings, pd.DataFrame(index=range(4)), cfg)
    assert out["risk"].tolist() == pytest.approx([0.0, 0.3, 1 - 0.2 * 0.7, cfg.default_weight])
    assert out["flagged"].tolist() == [False, False, True, cfg.default_weight >= cfg.flag_threshold]
    assert out.loc[2, "flags"] == "term_rejected;term_missing" and out.loc[2, "reasons"] == "b | c"
    assert out.loc[2, "severity"] == "high" and out.loc[0, "severity"] == "none"


def test_derived_flag_explains_itself_with_the_configured_reason():
    cfg = RiskConfig.load()
    out = combine([[], []], pd.DataFrame({"qa_sentence_gap": [0, 2], "qa_len_z": [0.0, -3.0]}), cfg)
    assert out.loc[0, "flags"] == "" and out.loc[1, "flags"] == "short_translation;sentence_dropped"
    assert "length z -3.0 < -2" in out.loc[1, "reasons"] and "2 more sentence(s)" in out.loc[1, "reasons"]
    assert out.loc[1, "flagged"]  # two weak rules together cross the threshold


def test_continuous_signal_is_soft_and_missing_values_add_nothing():
    cfg = RiskConfig.load()
    rule = cfg.rules["bt_chrf"]
    cols = pd.DataFrame({"bt_chrf": [95.0, rule.threshold, rule.threshold - 30, np.nan]})
    findings = [[], [], [Finding(rule.flag, "x")], []]
    risk = combine(findings, cols, cfg)["risk"].to_numpy()
    assert risk[0] < 0.01 and risk[1] == pytest.approx(rule.weight / 2) and risk[2] == pytest.approx(rule.weight, abs=0.01)
    assert risk[3] == 0.0  # no back-translation for this row: no evidence either way
    # the soft flag's own finding is not counted twice
    assert risk[2] <= rule.weight


def test_yaml_override_deep_merges(tmp_path):
    cfg = _cfg(tmp_path, "risk:\n  flag_threshold: 0.3\nweights:\n  term_missing: 0.1\n", ".yaml")
    assert cfg.flag_threshold == 0.3 and cfg.weights["term_missing"] == 0.1
    assert cfg.weights["term_rejected"] == RiskConfig.load().weights["term_rejected"]  # untouched default
    assert cfg.source.endswith("cfg.yaml")


@pytest.mark.parametrize("text, message", [
    ("[risk\nflag_threshold = 1", "cannot parse config"),
    ("[weights]\nterm_missing = 1.5\n", "weights.term_missing"),
    ("[signals.bt_chrf]\nscale = 0\n", "signals.bt_chrf"),
    ("[risk]\nflag_threshold = \"high\"\n", "risk.flag_threshold must be a number"),
    ("[signals.qa_len_z]\nreason = \"too short {nope}\"\n", "signals.qa_len_z.reason"),
])
def test_bad_config_is_one_input_error_naming_the_file(tmp_path, text, message):
    with pytest.raises(InputError) as err:
        _cfg(tmp_path, text)
    assert "cfg.toml" in str(err.value) and message in str(err.value)


def test_flags_doc_is_generated_and_complete():
    from bbsard_audit.audit.flagdoc import DOC, all_flags, render

    assert DOC.read_text(encoding="utf-8") == render(), "run `python -m bbsard_audit.audit.flagdoc`"
    cfg = RiskConfig.load()
    for flag in all_flags():
        assert f"`{flag}`" in DOC.read_text(encoding="utf-8")
        assert flag in cfg.weights or cfg.rule_for_flag(flag), f"{flag} has no weight in default_config.toml"
