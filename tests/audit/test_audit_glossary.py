"""Signal 3: the Belgian legal glossary flags wrong terms and leaves correct synonyms alone."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from bbsard_audit.audit import glossary as glossary_module
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return Glossary.load()


def flags_of(glossary: Glossary, fr: str, nl: str) -> list[str]:
    findings, _ = glossary.check_pairs([(fr, nl)], BBSARD)
    return [f.flag for f in findings[0]]


def test_shipped_glossary_is_large_versioned_and_sourced(glossary):
    assert len(glossary.entries) >= 150
    assert glossary.version
    domains = glossary.domains()
    for domain in ("housing", "family", "debts", "justice", "social", "immigration", "work"):
        assert domains.get(domain, 0) >= 5, domain
    assert all(e.source and e.nl_accepted and e.fr for e in glossary.entries)
    kinds = {r.kind for e in glossary.entries for r in e.nl_rejected}
    assert kinds == {"wrong_concept", "netherlands"}


def test_rejected_rendering_is_flagged_with_a_readable_reason(glossary):
    findings, columns = glossary.check_pairs([
        ("Quelles sont les compétences du juge de paix ?", "Wat zijn de bevoegdheden van de politierechter?"),
    ], BBSARD)
    assert [f.flag for f in findings[0]] == ["term_rejected"]
    assert findings[0][0].reason.startswith("FR 'juge de paix' expects 'vrederechter'; NL has 'politierechter'")
    assert columns.loc[0, "gl_expected"] == 1 and columns.loc[0, "gl_matched"] == 0
    assert columns.loc[0, "gl_rejected"] == 1


def test_netherlands_usage_is_non_belgian(glossary):
    flags = flags_of(glossary, "Quelles sont les compétences du juge de paix ?",
                     "Wat zijn de bevoegdheden van de kantonrechter?")
    assert "non_belgian" in flags and "term_missing" in flags
    # wherever it appears, even when the French has no glossary term
    assert flags_of(glossary, "Ai-je droit à une aide ?", "Heb ik recht op een bijstandsuitkering?") == ["non_belgian"]
    assert flags_of(glossary, "Puis-je recevoir une aide pour payer mon loyer ?",
                    "Kan ik huurtoeslag krijgen om mijn huur te betalen?") == ["non_belgian"]


def test_missing_term_is_flagged(glossary):
    findings, _ = glossary.check_pairs([
        ("Qu'est-ce que le règlement collectif de dettes ?", "Wat is een afbetalingsregeling?"),
    ], BBSARD)
    assert [f.flag for f in findings[0]] == ["term_missing"]
    assert "collectieve schuldenregeling" in findings[0][0].reason


@pytest.mark.parametrize("fr, nl", [
    # synonyms and inflections
    ("Comment récupérer la garantie locative à Bruxelles ?", "Hoe krijg ik mijn huurwaarborg terug in Brussel?"),
    ("Mon bail est-il enregistré ?", "Is mijn huurcontract geregistreerd?"),
    ("Mon bail est-il enregistré ?", "Is mijn huurovereenkomst geregistreerd?"),
    ("Les juges de paix sont-ils compétents ?", "Zijn de vrederechters bevoegd?"),
    ("Le CPAS peut-il retenir mon revenu d'intégration ?", "Kan het OCMW mijn leefloon inhouden?"),
    ("Le CPAS peut-il retenir mon RIS ?", "Kan het OCMW mijn leefloon inhouden?"),
    ("Puis-je obtenir l'aide juridique ?", "Kan ik juridische bijstand krijgen?"),
    ("Qui paie les allocations familiales ?", "Wie betaalt het groeipakket?"),
    ("Qui paie les allocations familiales ?", "Wie betaalt de kinderbijslag?"),
    ("Ma mutuelle doit-elle payer ?", "Moet mijn ziekenfonds betalen?"),
    ("Ma mutuelle doit-elle payer ?", "Moet mijn mutualiteit betalen?"),
    # word order changes and multi-word terms split by the sentence
    ("L'huissier de justice peut-il saisir mes meubles ?", "Kunnen mijn meubels door de gerechtsdeurwaarder in beslag genomen worden?"),
    ("Quand faire l'état des lieux ?", "Wanneer moet de plaatsbeschrijving worden opgemaakt?"),
    # compounds: the accepted term as head or first part of a Dutch compound
    ("Mon bail étudiant peut-il être résilié ?", "Kan mijn studentenhuurcontract worden opgezegd?"),
    ("Le loyer peut-il être indexé ?", "Mag de huurindexering worden toegepast?"),
    # 'voogdij' is rejected for 'garde' but right when the French also says 'tutelle'
    ("La tutelle remplace-t-elle la garde des enfants ?", "Vervangt de voogdij het hoederecht over de kinderen?"),
    # longest match: 'bail de résidence principale' hides 'bail'
    ("Qu'est-ce qu'un bail de résidence principale ?", "Wat is een woninghuurovereenkomst?"),
])
def test_correct_translations_are_not_flagged(glossary, fr, nl):
    assert flags_of(glossary, fr, nl) == []


def test_compound_rule_does_not_confuse_different_terms(glossary):
    # 'vredegerecht' (court) is not 'vrederechter' (judge) but is accepted for 'justice de paix' only
    assert flags_of(glossary, "Qui est le juge de paix ?", "Wie is het vredegerecht?") == ["term_missing"]
    assert flags_of(glossary, "Où est la justice de paix ?", "Waar is het vredegerecht?") == []
    # a 3-letter acronym never matches inside a word: 'ind' (NL immigration service) in 'bewind'
    assert flags_of(glossary, "Suis-je sous administration de biens ?", "Sta ik onder bewind?") == []


def test_columns_are_numeric_one_row_per_pair(glossary):
    pairs = [("Le juge de paix ?", "De vrederechter?"), ("Bonjour", "Hallo"), ("Le CPAS ?", "De gemeente?")]
    findings, columns = glossary.check_pairs(pairs, BBSARD)
    assert len(findings) == len(columns) == 3
    assert {"gl_expected", "gl_matched", "gl_rejected"} <= set(columns.columns)
    assert all(pd.api.types.is_numeric_dtype(columns[c]) for c in columns.columns)
    assert columns["gl_expected"].tolist() == [1, 0, 1]
    assert columns["gl_matched"].tolist() == [1, 0, 0]


def test_flags_are_documented_in_docs():
    doc = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert glossary_module.FLAGS
    for flag in glossary_module.FLAGS:
        assert f"`{flag}`" in doc, flag


_ENTRY = "  - id: juge\n    fr: [juge]\n    nl: [rechter]\n    domain: justice\n    source: s\n"


@pytest.mark.parametrize("content, message, names_entry", [
    ("version: 1\nentries: []\n", "non-empty list", False),
    ("entries:\n" + _ENTRY, "`version`", False),
    ("version: 1\nentries: [\n", "not a readable YAML", False),
    ("version: 1\nentries:\n" + _ENTRY.replace("    nl: [rechter]\n", ""), "`nl`", True),
    ("version: 1\nentries:\n" + _ENTRY.replace("    source: s\n", ""), "`source`", True),
    ("version: 1\nentries:\n" + _ENTRY + "    reject:\n      - {term: x, kind: bad, reason: r}\n", "kind 'bad'", True),
    ("version: 1\nentries:\n" + _ENTRY + "    reject:\n      - {term: rechter, kind: wrong_concept, reason: r}\n",
     "both accepted and rejected", True),
    ("version: 1\nentries:\n" + _ENTRY + _ENTRY, "duplicate", True),
    ("version: 1\nentries:\n" + _ENTRY + "    colour: blue\n", "unknown field", True),
])
def test_bad_glossary_file_names_file_and_entry(tmp_path, content, message, names_entry):
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        Glossary.load(path)
    line = info.value.one_line()
    assert str(path) in line and message in line, line
    if names_entry:
        assert re.search(r"row \d+, id juge", line), line


def test_missing_glossary_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        Glossary.load(tmp_path / "nope.yaml")


def test_custom_glossary_file(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("version: t1\nentries:\n  - id: bail\n    fr: [bail]\n    nl: [huurovereenkomst]\n"
                    "    reject:\n      - {term: pacht, kind: wrong_concept, reason: farm lease}\n"
                    "    domain: housing\n    source: BW art. 1714\n", encoding="utf-8")
    g = Glossary.load(path)
    assert g.version == "t1" and len(g.entries) == 1
    assert flags_of(g, "Mon bail ?", "Mijn pacht?") == ["term_rejected"]
    assert flags_of(g, "Mon bail ?", "Mijn huurovereenkomst?") == []


def test_every_entry_accepts_its_renderings_and_flags_its_rejections(glossary):
    """Consistency of the whole shipped glossary: each accepted rendering satisfies each French
    form, each wrong-concept rendering gives term_rejected and each Netherlands one non_belgian."""
    problems = []
    for e in glossary.entries:
        for fr in e.fr:
            pairs = [(f"Une question sur {fr} ici ?", f"Een vraag over {acc.lstrip('=')} hier?") for acc in e.nl_accepted]
            findings, _ = glossary.check_pairs(pairs, BBSARD)
            problems += [(e.id, fr, acc, f) for acc, f in zip(e.nl_accepted, findings) if f]
            pairs = [(f"Une question sur {fr} ici ?", f"Een vraag over {r.term} hier?") for r in e.nl_rejected]
            findings, _ = glossary.check_pairs(pairs, BBSARD)
            want = {"wrong_concept": "term_rejected", "netherlands": "non_belgian"}
            problems += [(e.id, fr, r.term, f) for r, f in zip(e.nl_rejected, findings)
                         if want[r.kind] not in {x.flag for x in f}]
    assert not problems, problems[:5]


def test_swaps_for_the_selftest_are_detected(glossary):
    swaps = glossary.swaps()
    assert len(swaps) >= 40
    by_id = {e.id: e for e in glossary.entries}
    pairs = [(f"Question : {by_id[i].fr[0]} ?", f"Vraag: {wrong}?") for i, _, wrong in swaps]
    findings, _ = glossary.check_pairs(pairs, BBSARD)
    assert all("term_rejected" in {f.flag for f in fs} for fs in findings)


def test_traffic_offences_are_overtredingen(glossary):
    assert flags_of(glossary, "J'ai commis une infraction. Que faire ?", "Ik heb een overtreding begaan. Wat nu?") \
        == ["term_rejected"]
    assert flags_of(glossary, "J'ai commis une infraction de roulage.", "Ik heb een verkeersovertreding begaan.") == []
    assert flags_of(glossary, "Une infraction au stationnement ?", "Een verkeersovertreding bij het parkeren?") == []


def test_lemma_cache_survives_damage_and_writes_atomically(tmp_path):
    import json

    from bbsard_audit.audit.termmatch import LemmaCache

    path = tmp_path / "lemmas" / "simplemma.json"
    path.parent.mkdir()
    path.write_text("{not json", encoding="utf-8")
    cache = LemmaCache(path)
    assert cache.lemma("huurders", "nl") == "huurder"  # damaged file ignored, simplemma asked
    cache.flush()
    assert json.loads(path.read_text(encoding="utf-8"))["nl"]["huurders"] == "huurder"
    assert LemmaCache(path).lemma("huurders", "nl") == "huurder"
    assert not [p for p in path.parent.iterdir() if p.suffix == ".tmp"]


LEARNED = """\
version: "learned-1"
learned_from: {audit: "0" , verdicts: "1"}
entries:
- id: learned-astreinte-q12
  domain: justice
  fr: [astreinte]
  nl: [dwangsom]
  reject:
    - {term: boete, kind: wrong_concept, reason: "an astreinte is a dwangsom, not a fine"}
  source: "expert review of question 12 (anna)"
"""


def test_layered_glossary_adds_learned_rules_that_name_their_review(tmp_path):
    learned = tmp_path / "learned_glossary.yaml"
    learned.write_text(LEARNED, encoding="utf-8")
    shipped = Glossary.load()
    layered = Glossary.layered([glossary_module.SHIPPED, learned])
    assert len(layered.entries) == len(shipped.entries) + 1
    assert [layer.name for layer in layered.layers] == ["glossary.yaml", "learned_glossary.yaml"]
    assert all(len(layer.sha256) == 64 for layer in layered.layers)
    assert not any(e.learned for e in layered.entries[:-1]) and layered.entries[-1].learned
    findings, _ = layered.check_pairs([("Le juge peut-il imposer une astreinte ?", "Kan de rechter een boete opleggen?")], BBSARD)
    [finding] = [f for f in findings[0] if f.flag == "term_rejected"]
    assert finding.reason.endswith("[learned rule learned-astreinte-q12 from expert review of question 12 (anna)]")
    # shipped rules name no review; the shipped glossary alone does not know this rule
    findings, _ = shipped.check_pairs([("Le juge peut-il imposer une astreinte ?", "Kan de rechter een boete opleggen?")], BBSARD)
    assert not any(f.flag == "term_rejected" for f in findings[0])
    # Glossary objects and paths mix
    assert len(Glossary.layered([shipped, learned]).entries) == len(layered.entries)


def test_a_learned_rule_on_a_shipped_french_term_fires_through_layered(tmp_path):
    """Matching keeps one entry per French span: appended after the shipped 'bail' entry, a learned
    'bail' rule would never fire; layered merges it into the shipped entry instead."""
    learned = tmp_path / "learned_glossary.yaml"
    learned.write_text(LEARNED.replace("learned-astreinte-q12", "learned-bail-q7").replace("[astreinte]", "[bail]")
                       .replace("[dwangsom]", "[huurovereenkomst, pachtovereenkomst]"), encoding="utf-8")
    shipped = Glossary.load()
    pair = ("Puis-je résilier le bail ?", "Kan ik de boete opzeggen?")
    assert not any(f.flag == "term_rejected" for f in shipped.check_pairs([pair], BBSARD)[0][0])
    layered = Glossary.layered([glossary_module.SHIPPED, learned])
    assert len(layered.entries) == len(shipped.entries)  # merged, not appended
    [bail] = [e for e in layered.entries if e.id == "bail"]
    # the shipped entry wins: its rejection of 'pachtovereenkomst' stays, the learned acceptance is dropped
    assert "pachtovereenkomst" not in bail.nl_accepted and [r.term for r in bail.nl_rejected][-1] == "boete"
    [finding] = [f for f in layered.check_pairs([pair], BBSARD)[0][0] if f.flag == "term_rejected"]
    assert finding.reason.endswith("[learned rule learned-bail-q7 from expert review of question 12 (anna)]")
    assert "'boete'" in finding.reason and finding.spans[-1].text == "boete"
    # the shipped entry's own rejections still name no rule
    [own] = layered.check_pairs([("Le bail est-il valable ?", "Is de pachtovereenkomst geldig?")], BBSARD)[0][0]
    assert own.flag == "term_rejected" and "learned rule" not in own.reason


def test_layer_redefining_an_entry_is_one_line(tmp_path):
    bad = tmp_path / "learned.yaml"
    bad.write_text(LEARNED.replace("learned-astreinte-q12", "insalubrite"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        Glossary.layered([glossary_module.SHIPPED, bad])
    message = str(err.value)
    assert "\n" not in message and "insalubrite" in message and "glossary.yaml" in message
    with pytest.raises(InputError, match="unknown top-level key"):
        bad.write_text(LEARNED.replace("learned_from", "learnt_from"), encoding="utf-8")
        Glossary.load(bad)


def test_glossary_signature_follows_every_layers_content(tmp_path):
    from bbsard_audit.audit.glossary import GlossarySignal

    learned = tmp_path / "learned.yaml"
    learned.write_text(LEARNED, encoding="utf-8")
    before = GlossarySignal([glossary_module.SHIPPED, learned]).signature()
    assert before != GlossarySignal(None).signature()
    assert GlossarySignal([glossary_module.SHIPPED, learned]).signature() == before
    learned.write_text(LEARNED.replace("boete", "geldboete"), encoding="utf-8")
    assert GlossarySignal([glossary_module.SHIPPED, learned]).signature() != before
