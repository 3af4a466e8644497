"""The audit section's "What this audit can and cannot see": this audit's evidence from its sidecar, the
per-MQM-category figures from the packaged scope file (audit/data/scope.json), both renderings."""

from __future__ import annotations

import json

import pytest

from bbsard_audit.app.report import build_report
from bbsard_audit.audit import scope as measured
from report_fixtures import write_workdir

TITLE = "What this audit can and cannot see"


def _audit(tmp_path, **meta):
    """A work folder whose audit.meta.json records the evidence as today's audit writes it, plus `meta`."""
    wd = write_workdir(tmp_path, review=False, evaluation=False)
    sidecar = json.loads((wd / "audit.meta.json").read_text())
    sidecar |= {"backtranslation": {"status": "used", "translator": "file:backtranslations_nl_fr.jsonl#sha256:2103afa1cd6d"},
                "qe": None, "cached_signals": [], "timings_s": {"numbers": 0.1, "lexical": 0.4},
                "checks_unavailable": ["alignment: not available for a batch of 30 pairs (it learns word alignment "
                                       "from the batch: at least 200 pairs)"]} | meta
    (wd / "audit.meta.json").write_text(json.dumps(sidecar))
    return wd


def _block(md: str) -> str:
    start = md.index(f"### {TITLE}")
    return md[start:md.index("\n### ", start + 1)]


def test_without_a_model_the_block_lists_the_evidence_and_says_what_is_invisible(tmp_path):
    files = build_report(_audit(tmp_path))
    block = _block(files.markdown.read_text())
    assert "| back-translations | used (file:backtranslations_nl_fr.jsonl#sha256:2103afa1cd6d) |" in block
    assert "| LLM judge | not used: --judge llm:MODEL |" in block
    assert "| COMET / QE | not used: --qe comet:MODEL |" in block
    assert "| bilingual dictionaries | used (the `lexical` check) |" in block
    assert "| word alignment | not available for a batch of 30 pairs" in block
    assert "measured on another dataset, not on this audit's (fr→nl): WMT21 TED talks MQM, en→de (`mqm-ted-ende`" in block
    assert "| Accuracy/Mistranslation (833) | 4.0% [2.8%, 5.5%] |" in block
    # the conclusion open, before the folded evidence: the categories the flag catches at chance
    assert block.index("No model ran: addition and mistranslation are essentially invisible to this audit") < \
        block.index("<details>")
    assert "This audit also ran back-translations, which the dev set's audit did not" in block
    assert "The dev set's figures include word alignment, which this audit ran without." in block
    html = files.html.read_text()
    assert TITLE in html and "<td>Accuracy/Mistranslation (833)</td>" in html and "essentially invisible" in html


def test_with_a_judge_and_comet_the_block_claims_no_figure_for_them(tmp_path):
    wd = _audit(tmp_path, judge={"model": "qwen2.5:7b-instruct", "on": "flagged", "selected": 6},
                qe={"model": "Unbabel/wmt22-cometkiwi-da"})
    block = _block(build_report(wd).markdown.read_text())
    assert "| LLM judge | used (qwen2.5:7b-instruct, on flagged pairs: 6 selected) |" in block
    assert "| COMET / QE | used (Unbabel/wmt22-cometkiwi-da) |" in block
    assert "LLM judge and COMET / QE, which ran on this audit (not measured on this dev set)" in block
    assert ("This audit also ran back-translations, LLM judge and COMET / QE, which the dev set's audit did not: "
            "what that evidence adds on these categories was not measured") in block
    assert "The judge read only the 6 pairs `--judge-on flagged` selected" in block
    assert "essentially invisible" not in block


def test_the_figures_come_from_the_scope_file(tmp_path, monkeypatch):
    scope = json.loads(measured.SCOPE_FILE.read_text(encoding="utf-8"))
    cat = next(c for c in scope["categories"] if c["category"] == "Accuracy/Mistranslation")
    cat["recall"] = {"count": 500, "n": 833, "share": 500 / 833, "low": 0.566, "high": 0.633}
    cat["above_chance"] = True
    changed = tmp_path / "scope.json"
    changed.write_text(json.dumps(scope), encoding="utf-8")
    monkeypatch.setattr(measured, "SCOPE_FILE", changed)
    block = _block(build_report(_audit(tmp_path / "w")).markdown.read_text())
    assert "| Accuracy/Mistranslation (833) | 60.0% [56.6%, 63.3%] |" in block
    assert "4.0% [2.8%, 5.5%]" not in block and "Accuracy/Mistranslation (4.0%" not in block


@pytest.mark.parametrize("text", ['{"dev_set": ', "[]"])
def test_a_malformed_scope_file_is_one_line_naming_it(tmp_path, monkeypatch, text):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    bad = tmp_path / "scope.json"
    bad.write_text(text, encoding="utf-8")
    monkeypatch.setattr(measured, "SCOPE_FILE", bad)
    wd = _audit(tmp_path / "w")
    result = CliRunner().invoke(app, ["report", "--workdir", str(wd)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and str(bad) in result.stderr
    assert not (wd / "report.md").exists() and not (wd / "report.html").exists()
