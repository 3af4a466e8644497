"""Issue 25 (roles): one source registry for both audits. A side reader registered with a `corpus`
hook is what `audit corpus` reads for a manifest side of its format: no branch in the corpus reader."""

from __future__ import annotations

import pytest

from bbsard_audit.audit.corpus.reader import open_corpus
from bbsard_audit.base.errors import InputError
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
