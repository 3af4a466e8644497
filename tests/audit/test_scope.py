"""The packaged scope file (audit/data/scope.json, base/contracts/scope.py): read strictly, written by
bench_mqm.py from its own measurement, and the one source of docs/languages.md's Scope table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import bench_mqm
from bbsard_audit.audit import scope as measured
from bbsard_audit.base.contracts.scope import EVIDENCE, Scope, evidence
from bbsard_audit.base.errors import InputError

MODERN = {"checks_unavailable": [], "backtranslation": {"status": "skipped (no --backtranslations or --translator given)",
                                                        "translator": None},
          "qe": None, "timings_s": {"numbers": 0.1, "lexical": 1.0, "alignment": 0.5}, "cached_signals": []}


def test_the_packaged_file_is_the_dev_set_measurement():
    scope = Scope.read(measured.SCOPE_FILE)
    assert scope.dev_set.id == "mqm-ted-ende" and (scope.dev_set.source, scope.dev_set.target) == ("en", "de")
    assert "/" not in scope.dev_set.revision.removeprefix("sha256:")  # named by hash, never a path
    cats = {c.category: c for c in scope.categories}
    assert cats["Accuracy/Mistranslation"].recall.n == 833 and scope.clean.n == 4404 and scope.positives == 868
    assert not cats["Accuracy/Mistranslation"].above_chance  # the built-in checks do not see word-sense errors
    assert len(scope.tool_revision) >= 40 and not scope.tool_revision.endswith("+uncommitted")
    assert [e.name for e in scope.evidence] == list(EVIDENCE)
    assert not any(e.ran for e in scope.evidence if e.name in ("LLM judge", "COMET / QE"))


def test_docs_scope_table_is_generated_from_the_file():
    text = measured.DOC.read_text(encoding="utf-8")
    assert measured.update_docs(Scope.read(measured.SCOPE_FILE)) == text, \
        "docs/languages.md is stale: python -m bbsard_audit.audit.scope"
    assert "| Accuracy/Mistranslation (833) |" in text


@pytest.mark.parametrize("damage, message", [
    (lambda t: t[: len(t) // 2], "invalid JSON"),
    (lambda t: t.replace('"positives"', '"positive"'), "unknown key(s) 'positive'"),
    (lambda t: t.replace('"bbsard-audit scope 1"', '"bbsard-audit scope 9"'), "not a scope file (format"),
    (lambda t: t.replace('"count": 33', '"count": 9999'), "not a scope file: a rate needs"),
    (lambda t: t.replace('"name": "word alignment"', '"name": "telepathy"'), "not a scope file: evidence must name"),
])
def test_a_malformed_scope_file_is_one_line_naming_it(tmp_path, damage, message):
    path = tmp_path / "scope.json"
    path.write_text(damage(measured.SCOPE_FILE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(InputError) as err:
        Scope.read(path)
    line = err.value.one_line()
    assert "\n" not in line and str(path) in line and message in line


def test_evidence_from_a_sidecar():
    meta = {**MODERN, "backtranslation": {"status": "used", "translator": "Helsinki-NLP/opus-mt-nl-fr"},
            "judge": {"model": "qwen2.5:7b-instruct", "on": "flagged", "selected": 12}, "qe": {"model": "wmt22-cometkiwi-da"},
            "checks_unavailable": ["lexical: not available: install dict-freedict-fra-nld (apt-get install; ...)"]}
    got = {e.name: e for e in evidence(meta)}
    assert [e.name for e in evidence(meta)] == list(EVIDENCE)
    assert got["back-translations"].status == "used (Helsinki-NLP/opus-mt-nl-fr)"
    assert got["LLM judge"].ran and "qwen2.5:7b-instruct, on flagged pairs: 12 selected" in got["LLM judge"].status
    assert got["COMET / QE"].status == "used (wmt22-cometkiwi-da)"
    assert not got["bilingual dictionaries"].ran
    assert got["bilingual dictionaries"].status.startswith("not available: install dict-freedict-fra-nld")
    assert got["word alignment"].ran
    bare = {e.name: e for e in evidence(MODERN)}
    assert bare["LLM judge"].status == "not used: --judge llm:MODEL" and not bare["back-translations"].ran
    dry = {e.name: e for e in evidence({**MODERN, "judge": {"model": "m", "dry_run": True, "selected": 5}})}
    assert not dry["LLM judge"].ran and dry["LLM judge"].status == "dry run only: no pair judged"
    assert all(e.status == "not recorded in audit.meta.json" for e in evidence({"n_pairs": 3}))  # an old sidecar


def _labelled(tmp_path):
    """8 labelled pairs: 4 Mistranslation errors (1 flagged), 4 clean (1 flagged)."""
    (tmp_path / "pairs.jsonl").write_text("{}\n", encoding="utf-8")
    return pd.DataFrame({"id": [f"p{i}" for i in range(8)], "seg_id": range(8), "src_len": [40] * 8,
                         "positive": [True] * 4 + [False] * 4,
                         "cats": [("Accuracy/Mistranslation",)] * 4 + [()] * 4,
                         "flagged": [True, False, False, False, True, False, False, False],
                         "flags": ["number_mismatch", "", "", "", "xling_outlier", "", "", ""],
                         "p_error": np.linspace(0.9, 0.1, 8)})


def test_the_bench_writes_the_scope_from_its_own_measurement(tmp_path):
    meta = {**MODERN, "timings_s": {c.name: 0.1 for c in bench_mqm.all_checks()},
            "dataset": {"source": "mqm-ted-ende", "revision": "sha256:abc", "languages": {"source": "en", "target": "de"}}}
    record = bench_mqm.scope(_labelled(tmp_path), meta, tmp_path)
    record.write(tmp_path / "scope.json")
    back = Scope.read(tmp_path / "scope.json")
    (cat,) = back.categories
    assert (cat.recall.count, cat.recall.n, cat.caught_by) == (1, 4, {"number_mismatch": 1})
    assert (back.clean.count, back.clean.n, back.clean.share) == (1, 4, 0.25)
    assert back.p_error.auc == 1.0 and not cat.above_chance
    assert back.dev_set.labels.startswith("pairs.jsonl sha256:") and json.loads((tmp_path / "scope.json").read_text())


def test_the_bench_refuses_an_audit_older_than_its_checks(tmp_path):
    meta = {**MODERN, "timings_s": {"numbers": 0.1}, "dataset": {}}
    with pytest.raises(SystemExit, match="ran without the check\\(s\\) .*lexical.*: rerun the audit"):
        bench_mqm.scope(_labelled(tmp_path), meta, tmp_path)
