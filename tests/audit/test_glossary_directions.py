"""The glossary in every direction: accept-only terms never trigger, a source term several concepts
share is rendered by any of them, and the shipped glossary checks NL->FR, EN->NL and FR->DE as it
checks FR->NL (a wrong term fires, a correct rendering does not), including on bBSARD's real pairs."""

from __future__ import annotations

import pandas as pd
import pytest

from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.base.errors import InputError


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return Glossary.load()


def flags(glossary: Glossary, pair: tuple[str, str], source: str, target: str) -> list[str]:
    return [f.flag for f in glossary.check_pairs([(source, target)], pair)[0][0]]


def reasons(glossary: Glossary, pair: tuple[str, str], source: str, target: str) -> list[str]:
    return [f.reason for f in glossary.check_pairs([(source, target)], pair)[0][0]]


TWO = """version: v1
entries:
- id: mariage
  domain: family
  terms: {fr: [mariage], nl: [huwelijk, getrouwd]}
  accept_only: {fr: [marié], nl: [getrouwd]}
  sources: {fr: a, nl: a}
- id: conjoint
  domain: family
  terms: {fr: [conjoint], nl: [echtgenoot, getrouwd]}
  sources: {fr: a, nl: a}
"""


def test_an_accept_only_term_is_accepted_but_never_triggers(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(TWO, encoding="utf-8")
    g = Glossary.load(path)
    mariage = g.entries[0]
    assert mariage.triggers("nl") == ("huwelijk",) and mariage.accepted("nl") == ("huwelijk", "getrouwd")
    assert mariage.triggers("fr") == ("mariage",) and mariage.accepted("fr") == ("mariage", "marié")
    # FR -> NL: the accept-only French 'marié' does not trigger; 'getrouwd' is an accepted rendering
    assert flags(g, ("fr", "nl"), "Je suis marié.", "Ik ben alleen.") == []
    assert flags(g, ("fr", "nl"), "Le mariage ?", "Ben ik getrouwd?") == []
    # NL -> FR: 'huwelijk' triggers and accepts the accept-only 'marié'; a missing rendering fires
    assert flags(g, ("nl", "fr"), "Het huwelijk?", "Suis-je marié ?") == []
    assert reasons(g, ("nl", "fr"), "Het huwelijk?", "Le divorce ?") == ["NL 'huwelijk' expects 'mariage'; not found in FR"]
    # 'getrouwd' is accept-only in mariage but a trigger of conjoint: it expects the spouse only
    assert reasons(g, ("nl", "fr"), "Ik ben getrouwd.", "Je suis marié.") == \
        ["NL 'getrouwd' expects 'conjoint'; not found in FR"]


def test_a_source_term_several_concepts_share_is_rendered_by_any_of_them(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(TWO.replace("accept_only: {fr: [marié], nl: [getrouwd]}", "accept_only: {fr: [marié]}"),
                    encoding="utf-8")
    g = Glossary.load(path)
    # 'getrouwd' renders mariage or conjoint: either French term will do, and a miss names both
    assert flags(g, ("nl", "fr"), "Ik ben getrouwd.", "Je suis marié.") == []
    assert flags(g, ("nl", "fr"), "Ik ben getrouwd.", "Mon conjoint ?") == []
    found, columns = g.check_pairs([("Ik ben getrouwd.", "Je suis seul.")], ("nl", "fr"))
    assert [f.reason for f in found[0]] == ["NL 'getrouwd' expects 'mariage' or 'conjoint'; not found in FR"]
    assert columns.loc[0, "gl_expected"] == columns.loc[0, "gl_missing"] == 1


def test_a_compound_head_is_no_alternative_of_a_whole_word(glossary):
    # 'verhuurder' (landlord) contains 'huurder' (tenant) as its head: the tenant's French term does
    # not render it
    assert flags(glossary, ("nl", "fr"), "Mag de verhuurder binnenkomen?", "Le locataire peut-il entrer ?") == \
        ["term_rejected"]
    assert flags(glossary, ("nl", "fr"), "Mag de verhuurder binnenkomen?", "Le bailleur peut-il entrer ?") == []


@pytest.mark.parametrize("extra, message", [
    ("  accept_only: {de: [Ehe]}\n", "`accept_only` has de, which `terms` has no terms in"),
    ("  accept_only: {nl: []}\n", "`accept_only.nl` must be a non-empty list"),
    ("  accept_only: [marié]\n", "`accept_only` must map language codes"),
    ("  accept_only: {nl: [scheiding]}\n  reject: {nl: [{term: scheiding, kind: wrong_concept, reason: x}]}\n",
     "both accepted and rejected: scheiding"),
])
def test_bad_accept_only_is_a_one_line_input_error(tmp_path, extra, message):
    path = tmp_path / "g.yaml"
    path.write_text("version: v1\nentries:\n- id: c1\n  domain: family\n  terms: {fr: [mariage], nl: [huwelijk]}\n"
                    + extra + "  sources: {fr: a, nl: a}\n", encoding="utf-8")
    with pytest.raises(InputError, match="row 1, id c1") as err:
        Glossary.load(path)
    assert message in str(err.value)


# ------------------------------------------------------------------ the shipped glossary per direction

@pytest.mark.parametrize("nl, fr", [
    # generic Dutch words are accepted renderings, not triggers
    ("Ik ben getrouwd. Moet ik mijn kind erkennen?", "Je suis marié(e). Dois-je reconnaître mon enfant ?"),
    ("Welke inkomsten tellen als ik alleen woon?", "Quels revenus comptent si je vis seul ?"),
    ("Wie moet de kosten van de plaatsbeschrijving betalen?", "Qui doit payer l'état des lieux ?"),
    ("Hoe verloopt de procedure voor het aanvragen van nationaliteit?", "Comment se déroule la procédure de demande de nationalité ?"),
    # the ways French says the concept: 'propriétaire' for the landlord, 'convoqué en justice'
    ("Kan mijn verhuurder de huur verhogen?", "Mon propriétaire peut-il augmenter le loyer ?"),
    ("Ik ben gedagvaard. Moet ik een advocaat nemen?", "Je suis convoqué en justice. Dois-je prendre un avocat ?"),
    ("Ik ga trouwen. Welke documenten?", "Je me marie. Quels documents ?"),
    # court for judge (metonymy) is accepted both ways
    ("Wat kan de familierechtbank beslissen?", "Que peut décider le juge de la famille ?"),
])
def test_nl_to_fr_leaves_correct_renderings_alone(glossary, nl, fr):
    assert flags(glossary, ("nl", "fr"), nl, fr) == []


def test_nl_to_fr_finds_a_wrong_concept(glossary):
    assert reasons(glossary, ("nl", "fr"), "Wat doet de vrederechter?", "Que fait le tribunal de police ?") == [
        "NL 'vrederechter' expects 'juge de paix'; FR has 'tribunal de police' (judge of the police court "
        "(tribunal de police))"]
    assert flags(glossary, ("nl", "fr"), "Is mijn woning onbewoonbaar?", "Mon logement est-il insalubre ?") == \
        ["term_missing"]  # the real GPT-4o error the FR->NL check reports as term_rejected
    assert flags(glossary, ("nl", "fr"), "Wat is een collectieve schuldenregeling?", "Qu'est-ce qu'une médiation de dettes ?") \
        == ["term_rejected"]


@pytest.mark.parametrize("en, nl, expected", [
    ("Can my landlord evict me?", "Kan mijn huurder mij uitzetten?", ["term_rejected"]),
    ("Can my landlord evict me?", "Kan mijn verhuurder mij uitzetten?", []),
    ("Who can apply for a collective debt settlement?", "Wie kan schuldbemiddeling aanvragen?", ["term_rejected"]),
    ("Who can apply for a collective debt settlement?", "Wie kan een collectieve schuldenregeling aanvragen?", []),
    ("Does the tenant pay the rent to the lessor?", "Betaalt de huurder de huur aan de verhuurder?", []),
    ("Can the tenant sublet?", "Mag de verhuurder onderverhuren?", ["term_rejected"]),
    ("Can I get the integration income from the public social welfare centre?",
     "Kan ik een leefloon krijgen van het OCMW?", []),
    ("Can I get the integration income from the public social welfare centre?",
     "Kan ik een werkloosheidsuitkering krijgen van de gemeente?", ["term_rejected", "term_rejected"]),
    # generic English words are accept-only: 'minor' repairs, a 'will' to pay, a 'fine' day
    ("Who pays for minor repairs? I will pay if it is fine.", "Wie betaalt kleine herstellingen?", []),
])
def test_en_to_nl(glossary, en, nl, expected):
    assert flags(glossary, ("en", "nl"), en, nl) == expected


@pytest.mark.parametrize("fr, de, expected", [
    ("Le CPAS peut-il m'accorder le revenu d'intégration ?", "Kann das ÖSHZ mir das Eingliederungseinkommen gewähren?", []),
    ("Le CPAS peut-il m'accorder le revenu d'intégration ?", "Kann die Gemeinde mir Arbeitslosengeld gewähren?",
     ["term_missing", "term_missing"]),
    ("Le locataire doit-il payer l'état des lieux ?", "Muss der Mieter den Ortsbefund bezahlen?", []),
    ("Le locataire doit-il payer l'état des lieux ?", "Muss der Vermieter den Ortsbefund bezahlen?", ["term_rejected"]),
    ("Qui peut demander un règlement collectif de dettes ?", "Wer kann eine kollektive Schuldenregelung beantragen?", []),
    ("Qui peut demander un règlement collectif de dettes ?", "Wer kann eine Schuldnerberatung beantragen?", ["term_missing"]),
    ("Mon employeur peut-il me licencier pour motif grave ?",
     "Kann mein Arbeitgeber mich aus schwerwiegendem Grund entlassen?", []),
    ("Que fait le greffier du tribunal de police ?", "Was macht der Greffier des Polizeigerichts?", []),
    ("Que fait le greffier du tribunal de police ?", "Was macht der Richter des Friedensgerichts?",
     ["term_missing", "term_rejected"]),
])
def test_fr_to_de(glossary, fr, de, expected):
    assert flags(glossary, ("fr", "de"), fr, de) == expected


def test_every_english_and_german_source_says_whether_it_was_checked(glossary):
    for e in glossary.entries:
        for lang in ("en", "de"):
            if lang in e.terms:
                assert e.sources[lang].strip(), e.id
    unverified = {lang: sum(e.sources.get(lang, "").startswith("unverified") for e in glossary.entries)
                  for lang in ("en", "de")}
    assert 0 < unverified["de"] < glossary.coverage()["de"] and 0 < unverified["en"] < glossary.coverage()["en"]


@pytest.mark.shared
def test_nl_to_fr_fires_about_as_often_as_fr_to_nl_on_the_real_train_pairs(glossary, shared_dir):
    """bBSARD's French are the originals, so nearly every pair is a correct rendering both ways: the
    reverse direction must not fire on generic words (it fired on 440 of 886 before accept-only terms)."""
    fr = pd.read_csv(shared_dir / "questions_fr_train.csv")
    nl = pd.read_csv(shared_dir / "questions_nl_train.csv")
    pairs = fr.merge(nl, on="id", suffixes=("_fr", "_nl"))
    fired = {pair: sum(bool(f) for f in glossary.check_pairs(
        list(zip(pairs[f"question_{pair[0]}"], pairs[f"question_{pair[1]}"])), pair)[0])
        for pair in (("fr", "nl"), ("nl", "fr"))}
    assert fired[("fr", "nl")] <= 60 and fired[("nl", "fr")] <= 1.5 * fired[("fr", "nl")], fired
