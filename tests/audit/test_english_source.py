"""English (and German) sources carry the audit: glossary coverage, term matching with English
morphology and small gaps, and English negation that ordinary phrasing does not trip (issue 26)."""

from __future__ import annotations

import pytest

from bbsard_audit.audit.checks.negation import NegationCheck
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.signals import Batch
from bbsard_audit.audit.termmatch import TermMatcher, tokenize
from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import read_pack


@pytest.fixture(scope="module")
def glossary():
    return Glossary.load()


def test_every_french_concept_has_english_and_german_terms_each_with_a_source(glossary):
    assert sum("fr" in entry.terms for entry in glossary.entries) > 100
    for entry in glossary.entries:
        if "fr" in entry.terms:
            assert {"en", "de"} <= set(entry.terms), entry.id
            assert entry.sources["en"].strip() and entry.sources["de"].strip(), entry.id


def _flags(glossary, en: str, nl: str) -> list[str]:
    findings, _ = glossary.check_pairs([(en, nl)], ("en", "nl"))
    return [f.flag for f in findings[0]]


def test_belgian_institution_renderings_in_english_are_matched(glossary):
    # plural and the 'centre for' variant of the CPAS; a Belgian court with an article inside
    assert _flags(glossary, "Can the public centres for social welfare refuse to help me?",
                  "Kunnen de OCMW's weigeren mij te helpen?") == []
    assert _flags(glossary, "What is the role of the public prosecutor's office?", "Wat is de rol van het parket?") == []
    assert _flags(glossary, "What is the role of the public prosecutor's office?",
                  "Wat is de rol van de politie?") == ["term_rejected"]


def test_an_english_term_with_a_possessive_inside_still_triggers_and_a_gap_is_allowed():
    matcher = TermMatcher([("admin", "administration of property"), ("custody", "custody of the children")], "en")
    found = lambda text: [m.key for m in matcher.find(tokenize(text, "en"))]  # noqa: E731
    assert found("placed under administration of their property") == ["admin"]
    assert found("Can I ask for custody of my children?") == ["custody"]
    assert found("custody of children") == ["custody"]
    assert found("administration of the whole estate and property") == []  # 3 words apart: no match


def test_french_and_dutch_words_stay_adjacent():
    assert languages.get("fr").term_gaps is None and languages.get("nl").term_gaps is None
    matcher = TermMatcher([("jp", "juge de paix")], "fr")
    assert matcher.find(tokenize("le juge de la paix", "fr")) == []


def test_generic_english_words_do_not_trigger_the_glossary(glossary):
    # 'summoned' (lemma 'summon') is no writ of summons; 'called' is not the acronym CALL; 'tax' alone
    # does not demand 'belasting' where the Dutch names the specific tax
    assert _flags(glossary, "I have been summoned before the police court: what will happen?",
                  "Ik ben opgeroepen voor de politierechtbank, wat gaat er gebeuren?") == []
    assert _flags(glossary, "What is a joint application (formerly called voluntary appearance)?",
                  "Wat is het gezamenlijk verzoekschrift (voorheen vrijwillige verschijning genoemd)?") == []
    assert _flags(glossary, "Property tax: do I have to pay it in Brussels?",
                  "Onroerende voorheffing: moet ik die in Brussel betalen?") == []


@pytest.mark.parametrize("en, nl", [
    ("Can my landlord evict me if I stop paying my rent?", "Kan mijn verhuurder mij uitzetten als ik mijn huur niet meer betaal?"),
    ("Can I withhold my last 2 months' rent?", "Kan ik mijn laatste 2 maanden huur niet betalen?"),
    ("I am staying illegally in Belgium (undocumented).", "Ik verblijf illegaal in België (zonder papieren)."),
])
def test_ordinary_english_phrasing_does_not_raise_a_negation_mismatch(en, nl):
    findings = NegationCheck().score(Batch([en], [nl], pair=("en", "nl"))).findings
    assert findings == [[]]


def test_a_real_negation_mismatch_from_english_is_still_found():
    findings = NegationCheck().score(Batch(["Can my landlord evict me if I stop paying my rent?"],
                                           ["Kan mijn verhuurder mij uitzetten als ik mijn huur betaal?"],
                                           pair=("en", "nl"))).findings
    assert findings == [[]]  # lexical on one side only: too weak alone, by design
    findings = NegationCheck().score(Batch(["Can I not pay my rent?"], ["Kan ik mijn huur betalen?"], pair=("en", "nl"))).findings
    assert [f.flag for f in findings[0]] == ["negation_mismatch"]


def test_a_bad_term_gaps_section_is_one_line(tmp_path):
    pack = tmp_path / "en.yaml"
    pack.write_text("name: English\nterm_gaps: {skip: [the], max: many}\n", encoding="utf-8")
    with pytest.raises(InputError, match="term_gaps.max"):
        _ = read_pack(pack, languages.get("en").hooks).term_gaps
