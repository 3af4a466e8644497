"""The lexical check: dictd dictionaries read through a strict contract, per-word translation evidence
on made-up dictionaries, "not available: install ..." when a pair's dictionaries are missing, and the
real English-German dictionaries on a real MQM pair (skipped without them unless CI=true)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bbsard_audit.audit.checks import lexical
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base.contracts.dictionary import read_dictionary
from bbsard_audit.base.errors import InputError

from conftest import missing

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(n: int) -> str:
    out = ""
    while True:
        out = B64[n % 64] + out
        n //= 64
        if not n:
            return out


def write_dictd(folder: Path, name: str, entries: dict[str, str]) -> Path:
    """A made-up dictd dictionary: `headword -> translations line` (a header entry first, as FreeDict's)."""
    data, index = b"", []
    for head, line in {"00-database-info": "made up for a test", **entries}.items():
        text = f"{head} /x/\n{line}\n      \"an example\"  - ein Beispiel\n".encode()
        index.append(f"{head}\t{_b64(len(data))}\t{_b64(len(text))}")
        data += text
    (folder / f"{name}.dict.dz").write_bytes(gzip.compress(data))
    path = folder / f"{name}.index"
    path.write_text("\n".join(index) + "\n", encoding="utf-8")
    return path


EN_DE = {"galaxy": "Galaxie <fem>, Sternensystem <neut> [astron.]", "fluke": "Zufall <masc>, Glücksfall <masc>",
         "curse": "Fluch <masc>", "talk": "reden, sprechen", "know sth.": "wissen <v>", "house": "Haus <neut>"}
DE_EN = {"Fluch": "curse, oath", "Zufall": "chance, fluke", "reden": "talk", "Haus": "house", "Stern": "star",
         "Stein": "stone", "Baum": "tree"}


@pytest.fixture
def dictionaries(tmp_path, monkeypatch):
    """Made-up en<->de dictionaries as the only ones the check finds."""
    write_dictd(tmp_path, "freedict-eng-deu", EN_DE)
    write_dictd(tmp_path, "freedict-deu-eng", DE_EN)
    monkeypatch.setenv("BBSARD_AUDIT_DICTIONARIES", str(tmp_path))
    monkeypatch.setattr(lexical, "DICTIONARY_DIRS", ())
    lexical.lexicon.cache_clear()
    yield tmp_path
    lexical.lexicon.cache_clear()


def score(pairs, pair=("en", "de")):
    return lexical.LexicalCheck().score(Batch([s for s, _ in pairs], [t for _, t in pairs], pair=pair))


# ------------------------------------------------------------------ the contract

def test_reader_keeps_translations_and_drops_notes_and_examples(tmp_path):
    d = read_dictionary(write_dictd(tmp_path, "freedict-eng-deu", EN_DE))
    assert d.entries["galaxy"] == ("Galaxie", "Sternensystem")
    assert d.entries["know sth."] == ("wissen",)
    assert "00-database-info" not in d.entries and d.name == "freedict-eng-deu" and len(d.sha256) == 64


def test_truncated_data_file_is_one_line_naming_it(tmp_path):
    index = write_dictd(tmp_path, "freedict-eng-deu", EN_DE)
    data = tmp_path / "freedict-eng-deu.dict.dz"
    data.write_bytes(data.read_bytes()[:-20])
    with pytest.raises(InputError) as err:
        read_dictionary(index)
    assert "freedict-eng-deu.dict.dz" in str(err.value) and "\n" not in str(err.value)


def test_index_in_another_format_names_file_and_row(tmp_path):
    index = write_dictd(tmp_path, "freedict-eng-deu", EN_DE)
    index.write_text(index.read_text() + "galaxy,Galaxie\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_dictionary(index)
    assert str(err.value).startswith(f"{index}, row 8: not a dictd index line") and "\n" not in str(err.value)


def test_index_pointing_past_the_data_is_truncation(tmp_path):
    index = write_dictd(tmp_path, "freedict-eng-deu", EN_DE)
    index.write_text(index.read_text() + "zebra\tzzzz\tB\n", encoding="utf-8")
    with pytest.raises(InputError, match="past the end of freedict-eng-deu.dict.dz"):
        read_dictionary(index)


# ------------------------------------------------------------------ the check on made-up pairs

def test_word_translated_into_something_unrelated_is_evidence_on_both_sides_below_the_flag(dictionaries):
    result = score([("Galaxies form by a fluke in every house.", "Galaxien bilden sich durch einen Fluch in jedem Haus.")])
    row = result.columns.iloc[0]
    assert (row["qa_lex_unrendered"], row["qa_lex_unexplained"], row["qa_lex_mistranslated"]) == (1, 1, 1)
    assert result.findings == [[]]  # one word each side: too common on correct pairs to raise the flag


def test_faithful_words_leave_no_evidence(dictionaries):
    result = score([("Galaxies form by a fluke in every house.", "Galaxien entstehen durch Zufall in jedem Haus."),
                    ("We talk about the galaxy cluster.", "Wir reden über den Galaxienhaufen.")])
    assert result.columns["qa_lex_mistranslated"].tolist() == [0, 0]
    assert result.columns["qa_lex_unrendered"].tolist() == [0, 0]


def test_four_lost_words_and_four_strangers_raise_the_flag_with_spans_on_both_sides(dictionaries):
    source, target = "A fluke, a galaxy, a talk and a house.", "Ein Fluch, ein Stern, ein Baum und ein Stein."
    result = score([(source, target)])
    (finding,) = result.findings[0]
    assert finding.flag == "lexical_mismatch"
    assert {(s.side, s.text) for s in finding.spans} == {
        ("source", "fluke"), ("source", "galaxy"), ("source", "talk"), ("source", "house"),
        ("target", "Fluch"), ("target", "Stern"), ("target", "Baum"), ("target", "Stein")}
    assert "'fluke'" in finding.reason and "'Fluch'" in finding.reason


def test_words_the_dictionaries_do_not_know_are_no_evidence(dictionaries):
    result = score([("Quasars glow.", "Irrlichter flackern.")])
    assert result.columns.iloc[0][["qa_lex_unrendered", "qa_lex_unexplained"]].tolist() == [0, 0]


def test_missing_dictionaries_are_listed_as_not_available_never_passed(tmp_path, monkeypatch):
    monkeypatch.setenv("BBSARD_AUDIT_DICTIONARIES", str(tmp_path))
    monkeypatch.setattr(lexical, "DICTIONARY_DIRS", ())
    lexical.lexicon.cache_clear()
    try:
        result = score([("A house.", "Ein Haus.")])
    finally:
        lexical.lexicon.cache_clear()
    (note,) = result.meta["checks_unavailable"]
    assert note.startswith("lexical: not available: install dict-freedict-eng-deu dict-freedict-deu-eng")
    assert result.findings == [[]] and result.columns.isna().all().all()


def test_a_broken_dictionary_stops_the_check_with_one_line(dictionaries):
    (dictionaries / "freedict-deu-eng.index").write_text("Haus only\n", encoding="utf-8")
    with pytest.raises(InputError, match="freedict-deu-eng.index, row 1"):
        score([("A house.", "Ein Haus.")])


# ------------------------------------------------------------------ the real dictionaries, a real MQM pair

def test_real_mqm_mistranslation_fluke_as_fluch_is_evidence():
    """WMT21 TED en-de, metricsystem4_s508 (MQM: Accuracy/Mistranslation, Major, 'Fluch'): with Debian's
    FreeDict en<->de, 'fluke' finds no rendering and 'Fluch' renders nothing; Nemo_s508's 'Glücksfall'
    does render it."""
    lexical.lexicon.cache_clear()
    if lexical.dictionary_file("en", "de") is None or lexical.dictionary_file("de", "en") is None:
        missing("FreeDict en<->de not installed (apt-get install dict-freedict-eng-deu dict-freedict-deu-eng)")
    result = score([("We're not just talking about a fluke.", "Wir reden nicht nur von einem Fluch."),
                    ("We're not just talking about a fluke.", "Wir reden hier nicht nur von einem Glücksfall.")])
    assert result.columns["qa_lex_unrendered"].tolist() == [1, 0]
    assert result.columns["qa_lex_unexplained"].tolist() == [1, 0]


def test_the_report_lists_a_check_that_did_not_run(tmp_path):
    import json

    from bbsard_audit.app.report import build_report
    from report_fixtures import write_workdir

    root = write_workdir(tmp_path)
    meta = json.loads((root / "audit.meta.json").read_text())
    note = "lexical: not available: install dict-freedict-eng-deu dict-freedict-deu-eng"
    (root / "audit.meta.json").write_text(json.dumps({**meta, "checks_unavailable": [note]}))
    assert f"- **checks not run**: {note}" in build_report(root).markdown.read_text()
