"""The scoring recipe (docs/metrics.md) against a plain-Python reference and against ranx,
ir_measures and pytrec_eval on the real bBSARD runs; the documented differences are asserted."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from bbsard_audit.eval.metrics import DEFAULT_METRICS, Metric, hit_matrix, parse_metrics
from bbsard_audit.eval.runs import Qrels, Run

SYSTEMS = ("bm25_fr", "bm25_nl", "e5_fr", "e5_nl", "jina_fr", "jina_nl")


# ---------------------------------------------------------------- plain-Python reference (docs/metrics.md)

def ref_metric(kind: str, k: int, ranked: list[str] | None, rel: set[str]) -> float:
    if ranked is None:  # query missing from the run
        return 0.0
    top = ranked[:k]
    if kind == "recall":
        return sum(d in rel for d in top) / len(rel)
    if kind == "map":
        found, total = 0, 0.0
        for i, d in enumerate(top, start=1):
            if d in rel:
                found += 1
                total += found / i
        return total / len(rel)
    if kind == "mrr":
        for i, d in enumerate(top, start=1):
            if d in rel:
                return 1 / i
        return 0.0
    dcg = sum(1 / math.log2(i + 1) for i, d in enumerate(top, start=1) if d in rel)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(k, len(rel)) + 1))
    return dcg / ideal


def ref_mean(kind, k, ranking, relevant) -> float:
    return sum(ref_metric(kind, k, ranking.get(q), rel) for q, rel in relevant.items()) / len(relevant)


def test_metrics_match_plain_python_reference():
    rnd = random.Random(7)
    docs = [f"d{i}" for i in range(80)]
    relevant = {str(q): set(rnd.sample(docs, rnd.randint(1, 15))) for q in range(60)}
    ranking = {}
    for q in relevant:
        if rnd.random() < 0.1:
            continue  # missing query: scores 0
        ranking[q] = rnd.sample(docs, rnd.randint(0 if q != "0" else 1, 40))  # short runs, some empty
    ranking["0"] = ranking.get("0") or ["d1"]
    run = Run.from_lists("r", ranking)
    qrels = Qrels.from_dict({q: sorted(r) for q, r in relevant.items()})
    metrics = parse_metrics(["recall@5", "recall@50", "map@10", "map@100", "mrr@3", "mrr@100", "ndcg@1",
                             "ndcg@10", "ndcg@60"])
    hits = hit_matrix(run, qrels, depth=100)
    assert hits.n_missing == sum(q not in ranking for q in relevant) > 0
    for m in metrics:
        assert m(hits) == pytest.approx(ref_mean(m.kind, m.k, ranking, relevant), abs=1e-12), m.name
        per_q = m.per_query(hits)
        for i, q in enumerate(hits.qids):
            assert per_q[i] == pytest.approx(ref_metric(m.kind, m.k, ranking.get(q), relevant[q]), abs=1e-12)


def test_metric_names_and_signature():
    assert [m.name for m in parse_metrics(["recall@100,map@100", "MRR@100", "ndcg@10", "map@100"])] == [
        "recall@100", "map@100", "mrr@100", "ndcg@10"]
    assert Metric.parse("map@100").signature.startswith("map@100|bbsard-eval:v1|")
    assert [m.name for m in parse_metrics(DEFAULT_METRICS)] == list(DEFAULT_METRICS)
    with pytest.raises(Exception, match="unknown metric"):
        Metric.parse("p@10")


def test_map_divides_by_all_relevant_not_min_k():
    qrels = Qrels.from_dict({"1": [f"r{i}" for i in range(15)]})
    run = Run.from_lists("r", {"1": [f"r{i}" for i in range(10)]})
    hits = hit_matrix(run, qrels, depth=10)
    assert Metric("map", 10)(hits) == pytest.approx(10 / 15)      # not 1.0
    assert Metric("ndcg", 10)(hits) == pytest.approx(1.0)          # ideal over min(k, |rel|)


# ---------------------------------------------------------------- peers on the real runs

def _as_scored(run: Run) -> dict[str, dict[str, float]]:
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.ranking.items()}


@pytest.mark.shared
@pytest.mark.parametrize("fmt", ["trec", "json"])
def test_real_runs_agree_with_ranx_ir_measures_pytrec_eval(shared_runs, fmt):
    ranx = pytest.importorskip("ranx")
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = Qrels.read(shared_runs / "qrels_test203.trec")
    qdict = {q: {d: 1 for d in rel} for q, rel in qrels.relevant.items()}
    metrics = parse_metrics(list(DEFAULT_METRICS) + ["recall@10", "map@10", "mrr@10", "ndcg@100"])
    trec_names = {"recall": "recall_{k}", "map": "map_cut_{k}", "ndcg": "ndcg_cut_{k}"}
    evaluator = pytrec_eval.RelevanceEvaluator(qdict, {"recall", "map_cut", "ndcg_cut", "recip_rank"})
    irm_names = {"recall": "R@{k}", "map": "AP@{k}", "mrr": "RR@{k}", "ndcg": "nDCG@{k}"}
    for system in SYSTEMS:
        run = Run.read(shared_runs / f"{system}.{fmt}", name=system)
        ours = {m.name: m(hit_matrix(run, qrels, depth=500)) for m in metrics}
        scored = _as_scored(run)
        rx = ranx.evaluate(ranx.Qrels(qdict), ranx.Run(scored), [m.name for m in metrics])
        irm = ir_measures.calc_aggregate([ir_measures.parse_measure(irm_names[m.kind].format(k=m.k))
                                          for m in metrics], qdict, scored)
        irm = {str(key): value for key, value in irm.items()}
        per_query = evaluator.evaluate(scored)
        assert len(per_query) == len(qrels) == 203
        for m in metrics:
            assert ours[m.name] == pytest.approx(rx[m.name], abs=1e-9), (system, m.name, "ranx")
            assert ours[m.name] == pytest.approx(irm[irm_names[m.kind].format(k=m.k)], abs=1e-9), (system, m.name)
            if m.kind in trec_names:
                name = trec_names[m.kind].format(k=m.k)
                trec = np.mean([v[name] for v in per_query.values()])
                assert ours[m.name] == pytest.approx(trec, abs=1e-9), (system, m.name, "trec_eval")
            elif m.k >= run.depth():  # trec_eval's recip_rank has no cut-off: equal only when k >= depth
                trec = np.mean([v["recip_rank"] for v in per_query.values()])
                assert ours[m.name] == pytest.approx(trec, abs=1e-9), (system, m.name, "trec_eval")


@pytest.mark.shared
def test_real_runs_headline_numbers(shared_runs):
    """The shared README says the e5/jina rerankers' pool contains the gold: R@100 = 1.0."""
    qrels = Qrels.read(shared_runs / "qrels_test203.trec")
    recall = Metric("recall", 100)
    for system in SYSTEMS:
        value = recall(hit_matrix(Run.read(shared_runs / f"{system}.trec"), qrels))
        assert (value == 1.0) == (not system.startswith("bm25")), system
    bm25_fr = Run.read(shared_runs / "bm25_fr.trec")
    assert recall(hit_matrix(bm25_fr, qrels)) == pytest.approx(0.5471557588552662, abs=1e-12)


def test_documented_differences_with_peers():
    """docs/metrics.md, 'Where the peers differ': keep these true or update the doc."""
    ranx = pytest.importorskip("ranx")
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    # 1. a query missing from the run: 0 for us, ranx (make_comparable) and ir_measures; pytrec_eval drops it
    qrels = {"1": {"a": 1}, "2": {"c": 1}}
    run = {"1": {"a": 1.0}}
    ours = Metric("mrr", 10)(hit_matrix(Run.from_lists("r", {"1": ["a"]}), Qrels.from_dict(qrels)))
    assert ours == 0.5
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr@10", make_comparable=True) == 0.5
    assert ir_measures.calc_aggregate([ir_measures.RR @ 10], qrels, run)[ir_measures.RR @ 10] == 0.5
    assert set(pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)) == {"1"}
    # 2. equal scores: docid ascending for us, ranx and ir_measures; trec_eval takes docid descending
    qrels, run = {"1": {"a": 1}}, {"1": {"a": 1.0, "b": 1.0, "c": 1.0}}
    ours = Metric("mrr", 10)(hit_matrix(Run.from_scored("r", {"1": [(d, 1.0, 0) for d in "cba"]}),
                                        Qrels.from_dict(qrels)))
    assert ours == 1.0 == ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr@10")
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["1"]["recip_rank"] == pytest.approx(1 / 3)
    # 3. trec_eval's recip_rank ignores the cut-off
    qrels = {"1": {"z": 1}}
    run = {"1": {**{f"d{i:02d}": 100.0 - i for i in range(20)}, "z": 50.0}}
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["1"]["recip_rank"] == pytest.approx(1 / 21)
    ranked = Run.from_scored("r", {"1": [(d, s, 0) for d, s in run["1"].items()]})
    assert Metric("mrr", 10)(hit_matrix(ranked, Qrels.from_dict(qrels))) == 0.0
    # 4. graded qrels: binary gains for us (grade > 0), graded gains in ranx/ir_measures nDCG
    qrels, run = {"1": {"a": 2, "b": 1}}, {"1": {"b": 2.0, "a": 1.0}}
    ours = Metric("ndcg", 10)(hit_matrix(Run.from_lists("r", {"1": ["b", "a"]}), Qrels.from_dict(qrels)))
    assert ours == pytest.approx(1.0)
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "ndcg@10") < 0.99
