"""Issue 31 item 1: the corpus checks on documents made of real citizen questions (bBSARD's French
questions and their real Dutch translations, ../shared; skipped without them). Each real false
alarm class of the leftovers check becomes a test: a translated question, an FAQ line, a label, a
quoted post is no LLM leftover; a real preface, note or chat line beside them still is."""

from __future__ import annotations

import csv

import pyarrow as pa
import pytest

from bbsard_audit.audit.corpus.checks.base import Docs
from bbsard_audit.audit.corpus.checks.meta_text import MetaTextCheck
from bbsard_audit.audit.leftovers import detector
from bbsard_audit.audit.unit_alignment import accounted
from bbsard_audit.base.languages import LanguagePair


@pytest.fixture(scope="module")
def questions(shared_dir):
    def read(lang: str) -> dict[str, str]:
        out = {}
        for split in ("train", "test"):
            with open(shared_dir / f"questions_{lang}_{split}.csv", encoding="utf-8") as f:
                out.update({r["id"]: r["question"] for r in csv.DictReader(f)})
        return out
    return read("fr"), read("nl")


def _page(questions, ids, marker="{k}. ") -> tuple[str, str]:
    fr, nl = questions
    return tuple("\n".join(marker.format(k=k + 1) + side[i] for k, i in enumerate(ids)) for side in (fr, nl))


def _flagged(pairs: list[tuple[str, str]], source: str = "fr", target: str = "nl") -> list[bool]:
    table = pa.table({"id": [str(k) for k in range(len(pairs))], "source_title": [""] * len(pairs),
                      "source_text": [s for s, _ in pairs], "target_title": [""] * len(pairs),
                      "target_text": [t for _, t in pairs]})
    result = MetaTextCheck().map(Docs(table, LanguagePair(source, target)), None)
    return [bool(f) for f in result.findings]


# Real questions the check called leftovers before (issue 31): 503 gave "note (NL) 'Tot wie kan ik me
# wenden voor hulp?'"; 585 and 501 are the same construction.
HELP = ("503", "585", "501")
FAQ = ("1102", "91", "503", "585")


def test_the_translated_question_tot_wie_kan_ik_me_wenden_is_no_leftover(questions):
    fr, nl = questions
    assert "Tot wie kan ik me wenden voor hulp?" in nl["503"]
    assert detector().find(nl["503"], "nl", fr["503"], "fr") == []
    source, target = _page(questions, HELP, "")
    assert detector().find(target, "nl", source, "fr") == []
    assert _flagged([(source, target)]) == [False]


def test_an_faq_page_a_thread_and_a_passage_of_real_questions_are_not_flagged_either_way(questions):
    fr, nl = questions
    faq = _page(questions, FAQ)
    thread = tuple(f"{side['503']}\n\n> {side['503']}\n{side['585']}\n\n{side['91']}" for side in (fr, nl))
    passage = tuple(" ".join(side[i] for i in FAQ) for side in (fr, nl))
    pairs = [faq, thread, passage]
    assert _flagged(pairs) == [False, False, False]
    assert _flagged([(t, s) for s, t in pairs], "nl", "fr") == [False, False, False]


def test_a_real_leftover_beside_real_questions_is_still_found(questions):
    source, target = _page(questions, HELP, "- ")
    prefaced = "Hier is de vertaling van de tekst:\n\n" + target
    noted = target + "\n\nNote: I kept the numbering of the original."
    chatty = target + "\nIk hoop dat dit helpt!"
    asked = target + "\nWil je dat ik ook de volgende vragen vertaal?"  # a question, but the translator's
    assert _flagged([(source, t) for t in (prefaced, noted, chatty, asked)]) == [True, True, True, True]
    found = detector().find(prefaced, "nl", source, "fr")
    assert prefaced[found[0].start:found[0].end] == "Hier is de vertaling van de tekst:"


def test_a_refusal_in_place_of_most_of_the_translation_is_found(questions):
    source, target = _page(questions, FAQ, "")
    cut = target.split("\n")[0] + "\n\nHet spijt me, maar ik kan deze tekst niet vertalen."
    assert _flagged([(source, cut)]) == [True]


def test_a_preface_without_a_translation_word_is_left_out_by_the_alignment(questions):
    """No cue names a translation here ('versie'), so only the alignment can tell: the real lines
    are matched, the preface is not."""
    source, target = _page(questions, FAQ, "")
    prefaced = "Natuurlijk. Hieronder staat de Nederlandse versie.\n\n" + target
    found = detector().find(prefaced, "nl", source, "fr")
    assert [prefaced[x.start:x.end] for x in found] == ["Natuurlijk. Hieronder staat de Nederlandse versie."]
    units = accounted(source, prefaced)
    assert not any(ok for a, _, ok, _ in units if a < len("Natuurlijk. Hieronder staat de Nederlandse versie."))
    assert sum(ok for a, _, ok, _ in units if a > len("Natuurlijk. Hieronder staat de Nederlandse versie.")) >= 5


def test_a_dropped_acronym_and_a_statement_turned_question_are_no_leftovers(questions):
    """Real test-split translations: '(RCD)' is dropped ('Je me suis porté caution ... (RCD).' ->
    'Ik heb me borg gesteld ...'), and 'Je m'adresse à la Région wallonne ...' became the question
    'Richt ik me tot het Waals Gewest ...?'."""
    fr, nl = questions
    rcd = next(k for k, q in fr.items() if "(RCD)" in q and "porté caution" in q)
    walloon = next(k for k, q in nl.items() if q.startswith("Ik denk dat mijn woning onbewoonbaar is. Richt ik me"))
    pages = [_page(questions, (rcd, "91", walloon), marker) for marker in ("", "- ")]
    pages.append(tuple(" ".join(side[i] for i in ("1102", rcd, walloon)) for side in (fr, nl)))
    assert _flagged(pages) == [False, False, False]

