"""`audit learn` and `audit --learned`: term rules from expert corrections, conflicts, layering,
refitted weights, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from bbsard_audit.annotations.draw import DrawRule
from bbsard_audit.audit import learn as L
from bbsard_audit.audit.glossary import Glossary, _PairMatcher
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.audit.termmatch import tokenize
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import sample_dir
from bbsard_audit.base.io import MANIFEST
from bbsard_audit.base.languages import BBSARD

runner = CliRunner()
VERDICTS = sample_dir() / "verdicts.csv"


def _run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def audit_csv(tmp_path_factory, embedding_cache):
    out = tmp_path_factory.mktemp("learn_audit")
    result = _run("audit", "--dataset", "sample", "--cache-dir", embedding_cache, "--out", out)
    assert result.exit_code == 0, result.output
    return out / "audit.csv"


def test_a_multiword_change_is_one_rendering():
    changes = L.changed_renderings("Kan ik in hoger beroep gaan bij het hof van beroep?",
                                   "Kan ik in hoger beroep gaan bij de rechtbank van eerste aanleg?")
    assert [(r, a) for r, a, _ in changes] == [("hof van beroep", "rechtbank van eerste aanleg")]


def test_nl_spans_keep_only_the_marked_change():
    t, c = "De huurder van de woning belt de politierechter.", "De verhuurder van de woning belt de vrederechter."
    assert {r for r, _, _ in L.changed_renderings(t, c)} == {"huurder", "politierechter"}
    start = t.index("politierechter")
    assert [r for r, _, _ in L.changed_renderings(t, c, [(start, start + len("politierechter"))])] == ["politierechter"]


def test_dice_alignment_finds_the_term_a_translation_repeats():
    pairs = [("Le bailleur peut-il augmenter le loyer ?", "Mag de verhuurder de huur verhogen?"),
             ("Quand le loyer est-il dû ?", "Wanneer is de huur verschuldigd?"),
             ("Le loyer comprend-il les charges ?", "Omvat de huur de kosten?"),
             ("Le bailleur doit-il réparer le toit ?", "Moet de verhuurder het dak herstellen?")]
    aligner = L.Aligner(pairs)
    term, dice = aligner.align(pairs[1][0], [" ".join(tokenize("huur", "nl").lemmas)], 0.5)
    assert term == "loyer" and dice == 1.0


def test_learn_on_the_sample_verdicts(audit_csv, tmp_path):
    result = _run("audit", "learn", "--audit", audit_csv, "--verdicts", VERDICTS, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    raw = yaml.safe_load((tmp_path / "learned_glossary.yaml").read_text(encoding="utf-8"))
    assert set(raw["learned_from"]) == {"audit", "verdicts"} and len(raw["learned_from"]["audit"]) == 64
    learned = Glossary.load(tmp_path / "learned_glossary.yaml")  # the shipped glossary's format
    by_fr = {e.fr[0]: e for e in learned.entries}
    flanders = by_fr["flandre"]
    assert "vlaanderen" in flanders.nl_accepted and [r.term for r in flanders.nl_rejected] == ["wallonië"]
    assert flanders.source == "expert review of question 3 (reviewer_a;reviewer_b)"
    # question 22's 'hof van beroep' -> 'rechtbank van eerste aanleg' is already a shipped entry: it
    # confirms that entry, it is not a new rule (nor in the learned glossary); so does question 1's
    # 'huurder' -> 'verhuurder' for 'bailleur' (the shipped landlord/tenant rejection)
    assert "tribunal de première instance" not in by_fr and "bailleur" not in by_fr
    confirming = pd.read_csv(tmp_path / "learned_confirming.csv")
    assert sorted(confirming["confirms"]) == ["bailleur", "juge_de_paix", "tribunal_premiere_instance"]
    assert "2 new rule(s), 3 confirming shipped entries (bailleur, juge_de_paix, tribunal_premiere_instance)" in \
        " ".join(result.output.split())
    # question 29's correction rejects a rendering the shipped glossary accepts: reported, not merged
    conflicts = pd.read_csv(tmp_path / "learned_conflicts.csv")
    assert list(conflicts["source"]) == ["expert review of question 29 (reviewer_a;reviewer_b)"]
    assert "allocations familiales" not in by_fr and "conflict" in result.output
    assert not (tmp_path / "learned_weights.toml").exists()  # 21 verdicts: too few to refit


def test_spans_name_the_french_term(audit_csv, tmp_path):
    audit = pd.read_csv(audit_csv).set_index("id")
    fr = audit.loc[3, "question_fr"]
    start = fr.index("Flandre")
    spans = tmp_path / "error_spans.csv"
    pd.DataFrame([{"id": 3, "annotator": "reviewer_a", "side": "fr", "start": start, "end": start + 7,
                   "text": "Flandre", "category": "entity", "note": ""}]).to_csv(spans, index=False)
    result = L.learn(audit_csv, VERDICTS, spans)
    rule = next(r for r in result.rules if r.id == 3)
    assert (rule.fr, rule.method, rule.accepted) == ("flandre", "span", "vlaanderen")


def test_experts_who_disagree_are_reported():
    a = L.TermRule("flandre", "vlaanderen", "wallonië", 3, "alice", "dice", 0.8)
    b = L.TermRule("flandre", "wallonië", "vlaanderen", 7, "bob", "dice", 0.8)
    c = L.TermRule("loyer", "huur", "lening", 9, "carol", "glossary", 1.0)
    rules, conflicts = L.find_conflicts([a, b, c], Glossary.load())
    assert rules == [c]
    assert sorted((x.rule.id, x.conflicts_with) for x in conflicts) == [
        (3, "expert review of question 7 (bob)"), (7, "expert review of question 3 (alice)")]


def test_layered_rules_flag_other_questions_and_name_the_review():
    base = Glossary.load()
    rule = L.TermRule("bail", "huurovereenkomst", "borgtocht", 775, "alice@x", "dice", 0.5)
    new = L.TermRule("astreinte", "dwangsom", "boete", 12, "bob", "dice", 0.5)
    learned = L.to_glossary(L.learned_entries([rule, new], base), "t")
    layered = Glossary.layered([base, learned])
    findings, _ = layered.check_pairs([
        ("Le bailleur peut-il résilier le bail ?", "Kan de verhuurder de borgtocht opzeggen?"),
        ("Le juge peut-il imposer une astreinte ?", "Kan de rechter een boete opleggen?")], BBSARD)
    reasons = [" | ".join(f.reason for f in row) for row in findings]
    # 'bail' is merged into the shipped entry, 'astreinte' is a new entry: both name their review
    assert "[learned rule learned_bail from expert review of question 775 (alice@x)]" in reasons[0]
    assert "expert review of question 12 (bob)" in reasons[1]
    assert all(any(f.flag == "term_rejected" for f in row) for row in findings)
    assert len(layered.entries) == len(base.entries) + 1


def test_enough_verdicts_refit_the_weights(audit_csv, tmp_path):
    audit = pd.read_csv(audit_csv)
    verdicts = tmp_path / "verdicts.csv"
    flagged = audit["flagged"].astype(str).str.lower().eq("true")
    pd.DataFrame({"id": audit["id"], "verdict": ["legal" if f else "correct" for f in flagged],
                  "corrected_nl": ""}).to_csv(verdicts, index=False)
    assert flagged.sum() >= 5 and len(audit) >= 30
    written = L.write_learned(L.learn(audit_csv, verdicts), tmp_path / "out")
    weights = RiskConfig.load(tmp_path / "out" / "learned_weights.toml").weights
    assert tmp_path / "out" / "calibration.csv" in written
    default = RiskConfig.load()
    soft = {rule.flag for rule in default.rules.values()}
    assert weights and not set(weights) & soft  # continuous signals have their weight in [signals.*]
    raised = audit.loc[flagged, "flags"].fillna("").str.split(";").explode()
    top = raised[(raised != "") & ~raised.isin(soft)].value_counts().index[0]
    assert weights[top] > default.weights.get(top, default.default_weight)  # precision 1 pulls it up


def test_audit_learned_names_the_review(audit_csv, tmp_path, embedding_cache):
    learned = tmp_path / "learned"
    assert _run("audit", "learn", "--audit", audit_csv, "--verdicts", VERDICTS, "--out", learned).exit_code == 0
    result = _run("audit", "--dataset", "sample", "--learned", learned / "learned_glossary.yaml",
                  "--cache-dir", embedding_cache, "--out", tmp_path / "a")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "a" / "audit.csv").set_index("id")
    assert "expert review of question 3 (reviewer_a;reviewer_b)" in frame.loc[3, "reasons"]


@pytest.mark.parametrize("case, message", [
    ("verdict_id", "verdict for a question that is not in the audit"),
    ("verdict_value", "is not one of correct, minor, legal"),
    ("span_bounds", "outside the nl question"),
    ("span_text", "does not match the question"),
])
def test_bad_learn_input(audit_csv, tmp_path, case, message):
    verdicts, spans = tmp_path / "v.csv", None
    shutil.copy(VERDICTS, verdicts)
    frame = pd.read_csv(VERDICTS)
    nl = pd.read_csv(audit_csv).set_index("id").loc[1, "question_nl"]
    if case == "verdict_id":
        frame.loc[len(frame)] = {**frame.iloc[0].to_dict(), "id": 99999}
        frame.to_csv(verdicts, index=False)
    elif case == "verdict_value":
        frame.loc[0, "verdict"] = "wrong"
        frame.to_csv(verdicts, index=False)
    else:
        spans = tmp_path / "s.csv"
        start, end, text = (len(nl) - 2, len(nl) + 5, "x") if case == "span_bounds" else (0, 3, "xyz")
        pd.DataFrame([{"id": 1, "annotator": "a", "side": "nl", "start": start, "end": end, "text": text,
                       "category": "terminology", "note": ""}]).to_csv(spans, index=False)
    args = ["--spans", spans] if spans else []
    result = _run("audit", "learn", "--audit", audit_csv, "--verdicts", verdicts, *args, "--out", tmp_path / "o")
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_learned_file_that_is_not_a_glossary(tmp_path, embedding_cache):
    bad = tmp_path / "learned.yaml"
    bad.write_text("rules: [a, b]\n", encoding="utf-8")
    result = _run("audit", "--dataset", "sample", "--learned", bad, "--cache-dir", embedding_cache, "--out", tmp_path / "o")
    assert result.exit_code == 2 and "not a glossary" in result.output and str(bad) in result.output
    assert not (tmp_path / "o").exists()


def test_the_glossary_term_that_agrees_with_the_correction_wins():
    index = L._GlossaryIndex(Glossary.load())
    fr = "L'administrateur de biens peut-il faire appel à un médiateur de dettes ?"  # the wrong one first
    assert index.align(fr, "bewindvoerder", "schuldbemiddelaar") == "médiateur de dettes"


def test_grammar_and_word_order_edits_are_no_term_rules():
    def why(translation, correction):
        [(rejected, accepted, _)] = L.changed_renderings(translation, correction)
        return L.not_a_term(rejected, accepted, tokenize(translation, "nl"), tokenize(correction, "nl"))

    assert why("Mag ik de huur verhogen?", "Mag men de huur verhogen?") == "pronoun or person change"
    assert why("Wat zijn mijn rechten?", "Wat zijn uw rechten?") == "pronoun or person change"
    assert why("Kan de politierechter de huur verlagen?", "Kan de vrederechter de huur verlagen?") is None
    t, c = tokenize("Moet de huur betaald worden?", "nl"), tokenize("Moet betaald de huur worden?", "nl")
    assert L.not_a_term("huur betaald", "betaald huur", t, c).startswith("word order")
    assert L.not_a_term("huurder", "?", t, c) == "punctuation or digits only"
    assert L.not_a_term("huurder zijn", "huurder ook zijn", t, c) == "function words only"
    assert L.not_a_french_term("?") == "the French term has no letter"
    assert L.not_a_french_term("vous") is not None and L.not_a_french_term("juge de paix") is None


def test_a_span_without_letters_is_never_learned_and_never_read(audit_csv, tmp_path, embedding_cache):
    """A reviewer's French span on '?' used to become the term of a learned entry, and the next
    audit crashed reading the file `audit learn` wrote: now the rule is dropped with a note, and the
    glossary reader refuses such a term in one line."""
    audit = pd.read_csv(audit_csv).set_index("id")
    fr = audit.loc[3, "question_fr"]
    spans = tmp_path / "error_spans.csv"
    pd.DataFrame([{"id": 3, "annotator": "reviewer_a", "side": "fr", "start": fr.index("?"),
                   "end": fr.index("?") + 1, "text": "?", "category": "other", "note": ""}]).to_csv(spans, index=False)
    result = L.learn(audit_csv, VERDICTS, spans)
    assert not [r for r in result.rules if r.id == 3]
    assert {"id": 3, "fr": "?", "why": "the French term has no letter"}.items() <= next(
        u for u in result.unaligned if u["id"] == 3 and "fr" in u).items()
    L.write_learned(result, tmp_path / "learned")
    ran = _run("audit", "--dataset", "sample", "--learned", tmp_path / "learned" / "learned_glossary.yaml",
               "--cache-dir", embedding_cache, "--out", tmp_path / "a")
    assert ran.exit_code == 0, ran.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(L.glossary_yaml([{"id": "learned_q", "domain": "learned", "fr": ["?"], "nl": ["vlaanderen"],
                                     "reject": [], "source": "expert review of question 3"}], {"a": "b"}),
                   encoding="utf-8")
    ran = _run("audit", "--dataset", "sample", "--learned", bad, "--cache-dir", embedding_cache, "--out", tmp_path / "b")
    assert ran.exit_code == 2 and len(ran.output.strip().splitlines()) == 1
    assert "term '?' has no letter" in ran.output and "learned_q" in ran.output and not (tmp_path / "b").exists()


def test_the_refitted_ranking_orders_the_next_batch(audit_csv, tmp_path, embedding_cache):
    """`audit learn` with >= 30 verdicts writes learned_ranking.json; `audit --learned` with it makes
    `risk` the refitted review priority (flags unchanged), which is what `push --next` queues by."""
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.audit import ranking
    from bbsard_audit.base.contracts.learned import RankingModel
    from bbsard_audit.audit.options import AuditOptions
    from bbsard_audit.audit.pipeline import review_queue, run_audit

    audit = pd.read_csv(audit_csv)
    verdicts = tmp_path / "verdicts.csv"
    flags = audit["flags"].fillna("").str.replace("lexical_mismatch", "")  # dictionary evidence: not what they see
    legal = flags.str.contains("term_|mismatch")  # the experts agree with these flags
    pd.DataFrame({"id": audit["id"], "verdict": ["legal" if x else "correct" for x in legal],
                  "corrected_nl": ""}).to_csv(verdicts, index=False)
    assert legal.sum() >= 5
    learned = tmp_path / "learned"
    assert _run("audit", "learn", "--audit", audit_csv, "--verdicts", verdicts, "--out", learned).exit_code == 0
    model = RankingModel.read(learned / "learned_ranking.json")
    assert model.n_verdicts == len(audit) and model.n_positive == legal.sum()
    p, _ = ranking.predict(audit, model)
    assert set(audit["id"][np.argsort(-p)[:legal.sum()]]) == set(audit["id"][legal])  # it learned what they see
    ran = _run("audit", "--dataset", "sample", "--learned", learned / "learned_ranking.json",
               "--cache-dir", embedding_cache, "--out", tmp_path / "a")
    assert ran.exit_code == 0, ran.output
    ranked = pd.read_csv(tmp_path / "a" / "audit.csv")
    assert (ranked["rule_risk"].round(6) == audit["risk"].round(6)).all()
    assert (ranked["flagged"] == audit["flagged"]).all()  # flags (the estimator's strata) stay the rule's
    library = run_audit("sample", AuditOptions(learned=(learned / "learned_ranking.json",), cache_dir=embedding_cache))
    assert library.frame["risk"].round(9).tolist() == ranked["risk"].round(9).tolist()  # the command's audit
    assert library.meta["ranking"]["n_verdicts"] == model.n_verdicts
    rows, _ = ranking.review_order(audit, model)
    assert ranked.sort_values("risk", ascending=False)["id"].tolist() == audit["id"].to_numpy()[rows].tolist()
    queue, _ = review_queue(audit, 3, 2, 0)
    campaign = Campaign.start(tmp_path / "c", project="p", audit=audit, audit_path=audit_csv, queue=queue,
                              queue_path=audit_csv)
    inside = ranked[ranked["id"].isin(campaign.population)]
    batch = campaign.add_batch(inside, tmp_path / "a" / "audit.csv", 4, set(), DrawRule(certain=1.0))
    expected = [i for i in audit["id"].to_numpy()[rows] if i not in set(queue["id"]) and i in campaign.population][:3]
    assert batch["id"].tolist()[:3] == expected  # a draw: its certain part (all but one pair) in refitted order


def test_a_bad_ranking_file_is_one_line(tmp_path, embedding_cache):
    bad = tmp_path / "learned_ranking.json"
    bad.write_text('{"features": ["rule_logit"], "means": [0.0]}', encoding="utf-8")
    ran = _run("audit", "--dataset", "sample", "--learned", bad, "--cache-dir", embedding_cache, "--out", tmp_path / "o")
    assert ran.exit_code == 2 and len(ran.output.strip().splitlines()) == 1 and "learned_ranking.json" in ran.output
    assert not (tmp_path / "o").exists()


def test_each_batch_spends_its_share_where_the_model_is_least_sure(audit_csv):
    """Slot k explores when floor(k * share) > floor((k - 1) * share); an exploring slot takes the
    pair with the highest upper bound logit + z * sd among those not yet placed."""
    from dataclasses import replace

    from bbsard_audit.audit import ranking

    audit = pd.read_csv(audit_csv)
    verdicts = pd.DataFrame({"id": audit["id"][:12], "verdict": ["legal"] * 4 + ["correct"] * 8})
    model = ranking.fit(audit, verdicts, explore=0.0)
    p, sd = ranking.predict(audit, model)
    order, slots = ranking.review_order(audit, model)
    assert not slots.any() and (np.diff(p[order]) <= 1e-12).all()  # no share: by probability alone
    explore = replace(model, explore_share=0.25)
    order, slots = ranking.review_order(audit, explore)
    assert slots.tolist()[:8] == [False, False, False, True] * 2
    upper = np.log(p / (1 - p)) + model.explore_z * sd
    for k in np.flatnonzero(slots):
        rest = np.setdiff1d(np.arange(len(audit)), order[:k])
        assert upper[order[k]] == upper[rest].max()
    assert sorted(order) == list(range(len(audit)))  # every pair once


def test_learn_reruns_replace_only_its_own_set(audit_csv, tmp_path):
    """`audit learn` writes one set under output ownership: a rerun replaces its own files (also a
    folder an older version wrote without a manifest, whose sidecars vouch for its files), drops the
    ranking and weights fewer verdicts no longer give, and never replaces a file someone edited."""
    audit = pd.read_csv(audit_csv)
    many = tmp_path / "many.csv"
    flagged = audit["flagged"].astype(str).str.lower().eq("true")
    pd.DataFrame({"id": audit["id"], "verdict": ["legal" if f else "correct" for f in flagged],
                  "corrected_nl": ""}).to_csv(many, index=False)
    out = tmp_path / "learned"
    assert _run("audit", "learn", "--audit", audit_csv, "--verdicts", many, "--out", out).exit_code == 0
    assert (out / "learned_ranking.json").exists() and (out / "learned_weights.toml").exists()
    (out / MANIFEST).unlink()  # as an older version left it: no ownership records
    result = _run("audit", "learn", "--audit", audit_csv, "--verdicts", many, "--out", out)
    assert result.exit_code == 0, result.output  # its sidecars vouch for every file: replaced
    assert json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]["learned_ranking.json"]["command"] \
        == "audit learn"
    # a rerun with fewer verdicts removes the ranking and weights it recorded: never a mixed set
    fresh = out
    assert _run("audit", "learn", "--audit", audit_csv, "--verdicts", VERDICTS, "--out", fresh).exit_code == 0
    assert not (fresh / "learned_ranking.json").exists() and not (fresh / "learned_weights.toml").exists()
    assert not (fresh / "learned_ranking.meta.json").exists()
    (fresh / "learned_glossary.yaml").write_text("version: 1\nentries: []\n", encoding="utf-8")  # a person's edit
    result = runner.invoke(app, ["audit", "learn", "--audit", str(audit_csv), "--verdicts", str(VERDICTS),
                                 "--out", str(fresh)])
    assert result.exit_code == 2 and "learned_glossary.yaml exists and was changed since" in result.output
    assert (fresh / "learned_glossary.yaml").read_text(encoding="utf-8") == "version: 1\nentries: []\n"


COHAB_FR = "J'ai signé une déclaration de cohabitation légale. A qui appartiennent les biens achetés pendant la cohabitation légale ?"
COHAB_NL = ("Ik heb een verklaring van feitelijke samenwoning ondertekend. Aan wie behoren de goederen die "
            "tijdens de wettelijke samenwoning zijn gekocht?")
COHAB_FIXED = COHAB_NL.replace("feitelijke", "wettelijke")


def test_a_correction_of_one_word_of_a_glossary_term_learns_the_whole_term():
    """'feitelijke' -> 'wettelijke' inside 'wettelijke samenwoning' used to give the rule 'légale':
    'wettelijke' / not 'feitelijke' (dice), which the longer 'cohabitation légale' hides and every
    'wettelijk(e) ...' in the question satisfies: it flagged no other pair."""
    verdicts = pd.DataFrame([{"id": 1, "verdict": "legal", "corrected_target": COHAB_FIXED, "annotator": "a"}])
    questions = {1: (COHAB_FR, COHAB_NL), 2: ("Qu'est-ce que la cohabitation légale ?", "Wat is wettelijke samenwoning?")}
    [rule], _ = L.derive_rules(questions, verdicts, None, Glossary.load(), L.Aligner(questions.values()))
    assert (rule.fr, rule.accepted, rule.rejected, rule.method) == (
        "cohabitation légale", "wettelijke samenwoning", "feitelijke samenwoning", "glossary")


def _findings(glossary, fr, nl):
    return [f.flag for f in _PairMatcher(glossary.entries, "fr", "nl").check(tokenize(fr, "fr"), tokenize(nl, "nl"))[0]]


def test_a_learned_rejection_flags_a_term_rendered_once_right_and_once_wrong():
    """The French term twice, its Dutch once right and once the rendering an expert rejected: an
    error (it used to count as matched); a 'wettelijk samenwonend' that renders the question's
    'cohabitants légaux' does not render its 'cohabitation légale' too."""
    base = Glossary.load()
    rule = L.TermRule("cohabitation légale", "wettelijke samenwoning", "vrije samenwoning", 7, "a", "glossary", 1.0)
    layered = Glossary.layered([base, L.to_glossary(L.learned_entries([rule], base), "t")])
    wrong_once = COHAB_NL.replace("feitelijke", "vrije")
    assert _findings(base, COHAB_FR, wrong_once) == []  # the shipped glossary alone: matched
    assert _findings(layered, COHAB_FR, wrong_once) == ["term_rejected"]
    shared = ("J'ai signé une déclaration de cohabitation légale. Nous sommes cohabitants légaux, quelles conséquences ?",
              "Ik heb een verklaring van vrije samenwoning ondertekend. We zijn wettelijk samenwonend, welke gevolgen?")
    assert _findings(layered, *shared) == ["term_rejected"]
    assert _findings(layered, COHAB_FR, COHAB_FIXED) == []  # rendered right twice: nothing
