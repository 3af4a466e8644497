"""Issue 26 items 3-4: LLM leftovers anywhere in a document or a question pair, with their spans,
not when the source holds them; the misalignment score calibrated on the corpus itself."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from bbsard_audit.audit.checks.leftovers import LeftoversCheck
from bbsard_audit.audit.corpus import documents as d
from bbsard_audit.audit.corpus.checks import alignment as al
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base.languages import LanguagePair

FR = ("Le preneur doit payer le loyer au bailleur le premier jour de chaque mois.\n\n"
      "Le bailleur délivre un reçu pour chaque paiement.")
NL = ("De huurder moet de huur aan de verhuurder betalen op de eerste dag van elke maand.\n\n"
      "De verhuurder geeft voor elke betaling een ontvangstbewijs.")


def audit(pairs):
    n = len(pairs)
    table = pa.table({"id": [f"d{i}" for i in range(n)], "source_title": [""] * n,
                      "source_text": [s for s, _ in pairs], "target_title": [""] * n,
                      "target_text": [t for _, t in pairs]})
    ctx = d.CorpusContext(LanguagePair("fr", "nl"))
    mapped = d.map_batch(table, ctx)
    return d.score_batch(mapped, d.reduce_stats([mapped], ctx), ctx).to_pandas()


def spans(cell: str) -> list[str]:
    return [s["text"] for s in json.loads(cell) if s["flag"] == "doc_meta_text"]


def test_a_trailing_english_note_on_a_dutch_document_is_found_with_its_span():
    note = "I kept the article numbering of the original and rendered 'preneur' as 'huurder'."
    out = audit([(FR, NL + "\n\n" + note), (FR, NL)])
    assert "doc_meta_text" in out["flags"][0] and "doc_meta_text" not in out["flags"][1]
    assert spans(out["spans"][0]) == [note]


def test_a_bracketed_remark_between_sentences_is_found_and_only_it():
    remark = "[Side note: the term 'bailleur' has no single Dutch equivalent]"
    first, second = NL.split("\n\n")
    out = audit([(FR, f"{first} {remark} {second}")])
    assert spans(out["spans"][0]) == [remark]


def test_a_quotation_the_source_holds_is_no_leftover():
    fr = FR + "\n\nLe formulaire porte la mention « Note : à compléter en lettres capitales »."
    nl = NL + "\n\nHet formulier draagt de vermelding 'Opmerking: in hoofdletters in te vullen'."
    quoted = (FR + " Le message « Sorry, we cannot process your request » s'affiche.",
              NL + " Het bericht 'Sorry, we cannot process your request' verschijnt.")
    out = audit([(fr, nl), quoted, (FR, NL + " (Opmerking: in hoofdletters in te vullen.)")])
    assert [("doc_meta_text" in f) for f in out["flags"]] == [False, False, True]


def test_a_question_pair_with_a_leftover_is_flagged_and_a_plain_one_is_not():
    fr = ["Mon propriétaire peut-il entrer chez moi sans prévenir ?"] * 3
    nl = ["Here is the Dutch translation:\nMag mijn verhuurder zonder verwittiging mijn woning betreden?",
          "Mag mijn verhuurder zonder verwittiging mijn woning betreden? (Opmerking: 'propriétaire' is vertaald als 'verhuurder'.)",
          "Kan ik niet weigeren als mijn verhuurder zonder verwittiging mijn woning wil betreden?"]
    result = LeftoversCheck().score(Batch(fr, nl, pair=LanguagePair("fr", "nl")))
    assert [bool(f) for f in result.findings] == [True, True, False]
    assert result.findings[0][0].spans[0].text == "Here is the Dutch translation:"
    assert result.findings[1][0].spans[0].text.startswith("(Opmerking:")
    assert list(result.columns["qa_leftovers"]) == [1, 1, 0]


def test_an_askers_kan_ik_nog_question_is_not_chat():
    """"Kan ik nog verzet aantekenen ...?" is the citizen asking, not an assistant's "Kan ik nog iets voor
    u doen?" (it fired on the sample before the chat cue was narrowed)."""
    fr = ["Puis-je encore faire opposition et dans quel délai ?", "Puis-je encore vous aider ?"]
    nl = ["Kan ik nog verzet aantekenen en binnen welke termijn?",
          "Mag ik nog opmerken dat... Kan ik nog iets voor u doen?"]
    result = LeftoversCheck().score(Batch(fr, nl, pair=LanguagePair("fr", "nl")))
    assert not result.findings[0]


def _features(shift: float = 0.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    n = 80
    cos = rng.normal(0.86, 0.015, n) + shift
    features = {"doc_align_cos": cos, "doc_align_worst": cos - 0.03, "doc_align_length": rng.normal(0.05, 0.05, n),
                "doc_align_entities": rng.uniform(0.7, 1.0, n), "doc_align_margin": rng.normal(0.06, 0.01, n),
                "doc_align_words": rng.uniform(0.6, 1.0, n)}
    features["doc_align_cos"][0], features["doc_align_worst"][0] = 0.62 + shift, 0.55 + shift  # another document
    features["doc_align_length"][0], features["doc_align_entities"][0] = 0.6, 0.0
    features["doc_align_margin"][0], features["doc_align_words"][0] = 0.005, 0.1
    return features


def _raised(features) -> tuple[np.ndarray, dict]:
    accumulator = al.AlignmentAccumulator(0.02, 3.5, 3.0)
    half = len(features["doc_align_cos"]) // 2
    for part in (slice(half, None), slice(0, half)):  # any order of the batches
        accumulator.add(pa.table({k: v[part] for k, v in features.items()}))
    summary = accumulator.finish()
    return al.raised(features, summary, al.combined(features, summary, 0.02), 0.02, 3.5, 3.0), summary


def test_the_misalignment_score_is_calibrated_on_the_corpus_itself():
    raised, summary = _raised(_features())
    assert np.flatnonzero(raised).tolist() == [0]
    assert summary["firing_rate"] == 1 / 80 and summary["score"]["n"] == 80
    shifted, _ = _raised(_features(shift=-0.25))  # a weaker embedder: every cosine lower, same verdicts
    assert np.array_equal(raised, shifted)
