"""Self-test: each injector makes the error it names (and only when it applies), and the whole
self-test on the sample reports recall, false-flag rate and ROC-AUC."""

from __future__ import annotations

import pytest

from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.selftest import ErrorInjector


@pytest.fixture(scope="module")
def injector():
    return ErrorInjector(Glossary.load(), seed=0, source="fr")


def test_role_swap_swaps_both_ways(injector):
    assert injector.role_swap("", "Mag mijn verhuurder de huur verhogen?") == "Mag mijn huurder de huur verhogen?"
    assert injector.role_swap("", "Moet de werknemer opzeggen?") == "Moet de werkgever opzeggen?"
    assert injector.role_swap("", "Wat is een kot?") is None


def test_negation_added_or_removed(injector):
    assert injector.negation("", "Mag ik niet weigeren?") == "Mag ik weigeren?"
    assert injector.negation("", "Mag ik weigeren om overuren te maken?") == "Mag ik niet weigeren om overuren te maken?"
    assert injector.negation("", "Kan de eigenaar de huur verhogen?") == "Kan de eigenaar niet de huur verhogen?"


def test_number_region_institution(injector):
    assert injector.number_change("", "Ik huur sinds 8 maanden.") == "Ik huur sinds 16 maanden."
    assert injector.number_change("", "Binnen drie maanden?") == "Binnen vier maanden?"
    assert injector.number_change("", "Wat is een huurwaarborg?") is None
    swapped = injector.region_swap("", "Kan ik in Wallonië huren?")
    assert swapped != "Kan ik in Wallonië huren?" and ("Brussel" in swapped or "Vlaanderen" in swapped)
    assert injector.institution_swap("", "Kan het OCMW helpen?") == "Kan het RVA helpen?"


def test_term_swap_needs_the_french_term_and_uses_a_rejected_rendering(injector):
    fr = "Puis-je saisir le juge de paix ?"
    nl = "Kan ik naar de vrederechter stappen?"
    out = injector.term_swap(fr, nl)
    entry = next(e for e in Glossary.load().entries if "juge de paix" in e.fr)
    assert out is not None and "vrederechter" not in out
    assert any(r.term.lstrip("=") in out for r in entry.nl_rejected)
    assert injector.term_swap("Qu'est-ce qu'un kot ?", nl) is None  # French term absent: not applicable


def test_clause_omission_and_untranslated(injector):
    assert injector.clause_omitted("", "Ik ben huurder. Mag de eigenaar binnenkomen?") == "Mag de eigenaar binnenkomen?"
    assert injector.clause_omitted("", "Ik heb net een woning gekregen, hoe zeg ik mijn huur op?") == "Hoe zeg ik mijn huur op?"
    assert injector.clause_omitted("", "Wat is een kot?") is None
    out = injector.untranslated_fr("Le propriétaire peut-il entrer dans mon logement ?",
                                   "Mag de eigenaar mijn woning binnengaan?")
    assert out.startswith("Mag de") and out.endswith("dans mon logement ?")
