"""The alignment check: IBM Model 1 learned by EM on tiny made-up bitext (audit/ibm1.py), the check's
flag and spans on a made-up batch without dictionaries, and real MQM pairs (WMT21 TED en-de, one
system's 529 pairs as the batch; skipped without the data or the FreeDict en-de dictionaries unless
CI=true)."""

from __future__ import annotations

import json
from itertools import permutations
from pathlib import Path

import pytest

from bbsard_audit.audit import ibm1
from bbsard_audit.audit.checks import alignment, lexical
from bbsard_audit.audit.signals import Batch

from conftest import missing

MQM = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mqm_ende_ted" / "pairs.jsonl"


def t(table: ibm1.Table, e: str, f: str) -> float:
    return float(table.matrix([e], [f])[0, 0])


# ------------------------------------------------------------------ EM on made-up bitext

KOEHN = ([["das", "haus"], ["das", "buch"], ["ein", "buch"]], [["the", "house"], ["the", "book"], ["a", "book"]])
"""The textbook example (Koehn, Statistical Machine Translation, ch. 4): no word pair is given."""


def test_em_learns_each_word_s_translation_from_co_occurrence_alone():
    table = ibm1.train(*KOEHN, diagonal=0.0)
    for e, f in (("das", "the"), ("haus", "house"), ("buch", "book"), ("ein", "a")):
        row = table.matrix([e], ["the", "house", "book", "a"])[0]
        assert ["the", "house", "book", "a"][row.argmax()] == f, (e, row)
    assert t(table, "das", "the") > 0.5 and t(table, "haus", "the") < t(table, "haus", "house")


def test_more_iterations_sharpen_the_table():
    one, five = (ibm1.train(*KOEHN, iterations=n, diagonal=0.0) for n in (1, 5))
    assert t(five, "buch", "book") > t(one, "buch", "book")
    assert t(five, "das", "the") > t(one, "das", "the")


def test_the_diagonal_prior_breaks_a_tie_co_occurrence_cannot():
    bitext = ([["a", "b"]] * 3, [["x", "y"]] * 3)
    plain, diagonal = ibm1.train(*bitext, diagonal=0.0), ibm1.train(*bitext)
    assert t(plain, "a", "x") == pytest.approx(t(plain, "a", "y"))
    assert t(diagonal, "a", "x") > t(diagonal, "a", "y") and t(diagonal, "b", "y") > t(diagonal, "b", "x")


def test_a_seed_word_pair_lends_a_rare_word_its_partner():
    source = [["a", "fluke"], ["a", "house"], ["a", "tree"]]
    target = [["einem", "fluch"], ["einem", "haus"], ["einem", "baum"]]
    alone, seeded = ibm1.train(source, target), ibm1.train(source, target, [("fluke", "zufall", 1.0)])
    assert t(alone, "fluke", "fluch") > 0.5  # seen once: aligned to whatever shares its sentence
    assert t(seeded, "fluke", "fluch") < t(alone, "fluke", "fluch") and t(seeded, "fluke", "zufall") > 0.3


def test_words_never_seen_together_have_probability_zero():
    table = ibm1.train(*KOEHN)
    m = table.matrix(["haus", "unknown"], ["book", "house", "zebra"])
    assert m.shape == (2, 3) and m[1].sum() == 0 and m[0, 2] == 0 and m[0, 1] > 0
    assert ibm1.train([], []).matrix(["a"], ["b"]).tolist() == [[0.0]]


# ------------------------------------------------------------------ the check on a made-up batch

EN = ("house", "tree", "stone", "river", "garden", "window")
DE = ("Haus", "Baum", "Stein", "Fluss", "Garten", "Fenster")


@pytest.fixture
def no_dictionaries(tmp_path, monkeypatch):
    """No dictionaries installed: the check still runs (cognates only), the lexical check is unavailable."""
    monkeypatch.setenv("BBSARD_AUDIT_DICTIONARIES", str(tmp_path))
    monkeypatch.setattr(lexical, "DICTIONARY_DIRS", ())
    lexical.lexicon.cache_clear()
    yield
    lexical.lexicon.cache_clear()


def _batch(extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every ordered triple of the six words, faithfully, twice (240 pairs), then `extra`."""
    pairs = [(" ".join(EN[i] for i in p) + ".", " ".join(DE[i] for i in p) + ".") for p in permutations(range(6), 3)]
    return pairs * 2 + extra


def test_three_words_rendered_as_three_others_raise_the_flag_with_spans(no_dictionaries):
    pairs = _batch([("house tree stone.", "Fluss Garten Fenster."), ("house tree stone.", "Haus Baum Stein.")])
    result = alignment.AlignmentCheck().score(Batch([s for s, _ in pairs], [t for _, t in pairs], pair=("en", "de")))
    assert "checks_unavailable" not in result.meta
    wrong, right = result.findings[-2], result.findings[-1]
    (finding,) = wrong
    assert finding.flag == "alignment_gap" and right == []
    assert {(s.side, s.text) for s in finding.spans} == {
        ("source", "house"), ("source", "tree"), ("source", "stone"),
        ("target", "Fluss"), ("target", "Garten"), ("target", "Fenster")}
    row = result.columns.iloc[-2]
    assert row["qa_align_gap"] == 3 and result.columns.iloc[-1]["qa_align_gap"] == 0
    assert row["qa_align_content"] < result.columns.iloc[-1]["qa_align_content"]


def test_a_name_copied_as_it_is_is_never_at_fault(no_dictionaries):
    pairs = _batch([("Zorblax tree stone.", "Zorblax Baum Stein.")])
    result = alignment.AlignmentCheck().score(Batch([s for s, _ in pairs], [t for _, t in pairs], pair=("en", "de")))
    assert result.columns.iloc[-1][["qa_align_unaligned_{source}", "qa_align_unaligned_{target}"]].tolist() == [0, 0]


def test_a_batch_too_small_to_learn_from_is_listed_as_not_available(no_dictionaries):
    result = alignment.AlignmentCheck().score(Batch(["A house."], ["Ein Haus."], pair=("en", "de")))
    (note,) = result.meta["checks_unavailable"]
    assert note.startswith("alignment: not available for a batch of 1 pairs")
    assert result.findings == [[]] and result.columns.isna().all(axis=None)


# ------------------------------------------------------------------ real MQM pairs

def _system(name: str) -> list[dict]:
    if not MQM.exists():
        missing(f"{MQM} (the MQM TED en-de dev set) is not there")
    if lexical.dictionary_file("en", "de") is None or lexical.dictionary_file("de", "en") is None:
        missing("the FreeDict en-de dictionaries are not installed (apt-get install dict-freedict-eng-deu "
                "dict-freedict-deu-eng)")
    rows = [json.loads(line) for line in MQM.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if r["system"] == name]


def _findings(rows: list[dict]) -> dict[str, list]:
    result = alignment.AlignmentCheck().score(Batch([r["source"] for r in rows], [r["target"] for r in rows],
                                                    pair=("en", "de")))
    return {r["id"]: f for r, f in zip(rows, result.findings)}


def test_real_mistranslation_ringing_as_schwingt_is_flagged_on_its_word():
    """ref_s96: 'the space around us is ringing' -> 'der Weltraum um uns herum schwingt' (the rater's
    Major Accuracy/Mistranslation on 'schwingt'); the batch is the reference's 529 pairs."""
    (finding,) = _findings(_system("ref"))["ref_s96"]
    assert finding.flag == "alignment_gap"
    assert ("target", "schwingt") in {(s.side, s.text) for s in finding.spans}
    assert ("source", "ringing") in {(s.side, s.text) for s in finding.spans}


def test_real_false_alarm_names_and_compounds_are_rendered():
    """UEdin_s428 (clean): 'Biased Chains' copied and 'self-assembly systems' -> 'Selbstmontagesystemen'
    were five 'unaligned' words each side before the lexical check's renderings were set aside."""
    assert _findings(_system("UEdin"))["UEdin_s428"] == []
