"""The scoring recipe (docs/metrics.md) against a plain-Python reference and against ranx, ir_measures
and pytrec_eval, each reading the raw TREC files itself (the real bBSARD runs and a synthetic run with
ties, duplicated documents and missing queries); the documented differences are asserted."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from bbsard_audit.eval.metrics import Metric, hit_matrix, parse_metrics
from bbsard_audit.eval.options import DEFAULT_METRICS
from bbsard_audit.eval.runs import Qrels, Run
from conftest import need

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


# ---------------------------------------------------------------- peers, each reading the raw files itself
# ranx, ir_measures and pytrec_eval get the TREC files, never runs parsed by this project, so their own
# parsing, tie-breaking and de-duplication are cross-checked too (docs/metrics.md, "Where the peers differ").

PEER_METRICS = parse_metrics(list(DEFAULT_METRICS) + ["recall@1", "recall@10", "map@10", "mrr@10", "ndcg@3",
                                                      "ndcg@100"])
IRM_NAMES = {"recall": "R@{k}", "map": "AP@{k}", "mrr": "RR@{k}", "ndcg": "nDCG@{k}"}
TREC_NAMES = {"recall": "recall_{k}", "map": "map_cut_{k}", "ndcg": "ndcg_cut_{k}", "mrr": "recip_rank"}
PerQuery = dict[str, dict[str, float]]  # metric name -> {qid: value}


def ours(run: Path, qrels: Path) -> PerQuery:
    """This project's pipeline on the same files: Run.read / Qrels.read / hit_matrix."""
    hits = hit_matrix(Run.read(run), Qrels.read(qrels), depth=500)
    return {m.name: dict(zip(hits.qids, map(float, m.per_query(hits)))) for m in PEER_METRICS}


def by_ranx(run: Path, qrels: Path) -> PerQuery:
    ranx = need("ranx")
    parsed = ranx.Run.from_file(str(run), kind="trec")
    ranx.evaluate(ranx.Qrels.from_file(str(qrels), kind="trec"), parsed, [m.name for m in PEER_METRICS],
                  make_comparable=True)
    return {m.name: {q: float(v) for q, v in parsed.scores[m.name].items()} for m in PEER_METRICS}


def by_ir_measures(run: Path, qrels: Path) -> PerQuery:
    irm = need("ir_measures")
    names = {irm.parse_measure(IRM_NAMES[m.kind].format(k=m.k)): m.name for m in PEER_METRICS}
    out: PerQuery = {m.name: {} for m in PEER_METRICS}
    for value in irm.iter_calc(list(names), irm.read_trec_qrels(str(qrels)), irm.read_trec_run(str(run))):
        out[names[value.measure]][value.query_id] = float(value.value)
    return out


def by_pytrec_eval(run: Path, qrels: Path) -> PerQuery:
    pytrec_eval = need("pytrec_eval")
    with open(qrels) as q, open(run) as r:
        judged, ranked = pytrec_eval.parse_qrel(q), pytrec_eval.parse_run(r)
    ks = ",".join(str(k) for k in sorted({m.k for m in PEER_METRICS}))
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {f"recall.{ks}", f"map_cut.{ks}", f"ndcg_cut.{ks}", "recip_rank"})
    per_query = evaluator.evaluate(ranked)
    return {m.name: {q: v[TREC_NAMES[m.kind].format(k=m.k)] for q, v in per_query.items()} for m in PEER_METRICS}


def documented(rows: list[tuple[str, str, int, float]], qrels: Path, *, ties: str, duplicates: str) -> PerQuery:
    """Our metrics on a run ordered as docs/metrics.md says a reader orders it.

    rows: (qid, docid, rank, score) in file order. ties: `rank-docid` (ours: rank asc, then docid asc),
    `docid-asc` or `docid-desc`; duplicates: `best` (a document keeps its best position) or `last` (the
    last line's score replaces the earlier ones).
    """
    per_q: dict[str, list[tuple[str, int, float]]] = {}
    for qid, doc, rank, score in rows:
        per_q.setdefault(qid, []).append((doc, rank, score))
    ranking = {}
    for qid, entries in per_q.items():
        if duplicates == "last":
            entries = list({doc: (doc, rank, score) for doc, rank, score in entries}.values())
        if ties == "docid-desc":
            ordered = sorted(sorted(entries, key=lambda e: e[0], reverse=True), key=lambda e: -e[2])
        else:
            ordered = sorted(entries, key=lambda e: (-e[2], e[1] if ties == "rank-docid" else 0, e[0]))
        ranking[qid] = [doc for doc, _, _ in ordered]  # Run.from_lists keeps a document's first position
    hits = hit_matrix(Run.from_lists("model", ranking), Qrels.read(qrels), depth=500)
    return {m.name: dict(zip(hits.qids, map(float, m.per_query(hits)))) for m in PEER_METRICS}


def assert_same(theirs: PerQuery, expected: PerQuery, who: str, qids=None, skip=lambda m: False) -> None:
    for m in PEER_METRICS:
        if skip(m):
            continue
        keys = set(expected[m.name]) if qids is None else set(qids)
        assert set(theirs[m.name]) >= keys, (who, m.name)
        for q in keys:
            assert theirs[m.name][q] == pytest.approx(expected[m.name][q], abs=1e-9), (who, m.name, q)


def trec_rows(path: Path) -> list[tuple[str, str, int, float]]:
    return [(c[0], c[2], int(c[3]), float(c[4])) for c in map(str.split, path.read_text().splitlines())]


@pytest.mark.shared
@pytest.mark.parametrize("system", SYSTEMS)
def test_real_trec_runs_read_by_each_peer_agree(shared_runs, system):
    """The shared runs have no ties and no duplicates: all three peers equal us on every query."""
    run, qrels = shared_runs / f"{system}.trec", shared_runs / "qrels_test203.trec"
    expected = ours(run, qrels)
    assert len(expected["recall@100"]) == 203
    depth = Run.read(run).depth()
    for who, peer in (("ranx", by_ranx), ("ir_measures", by_ir_measures), ("pytrec_eval", by_pytrec_eval)):
        theirs = peer(run, qrels)
        # trec_eval's recip_rank has no cut-off: equal to mrr@k only when k >= the run's depth (100)
        assert_same(theirs, expected, who, skip=lambda m: who == "pytrec_eval" and m.kind == "mrr" and m.k < depth)
        assert all(len(v) == 203 for v in theirs.values()), who


@pytest.mark.shared
def test_real_json_runs_score_as_their_trec_twins(shared_runs):
    """The JSON runs repeat candidates (kept at their best rank); peers cannot read them, so they are
    checked against the TREC files of the same systems."""
    qrels = shared_runs / "qrels_test203.trec"
    assert SYSTEMS
    for system in SYSTEMS:
        assert ours(shared_runs / f"{system}.json", qrels) == ours(shared_runs / f"{system}.trec", qrels), system


TIE_DOCS = [f"t{i:02d}" for i in random.Random(3).sample(range(60), 60)]


@pytest.fixture
def synthetic(tmp_path):
    """A TREC run with every hard case, one per query; (run, run without duplicates, qrels, rows)."""
    lines = (
        [("1", f"d{i}", i + 1, 10.0 - i) for i in range(8)]                        # clean
        + [("2", "b", 1, 1.0), ("2", "c", 2, 1.0), ("2", "a", 3, 1.0)]              # 3 tied, file = rank order
        + [("3", "x", 2, 1.0), ("3", "y", 1, 1.0)]                                 # tied, ranks not in file order
        + [("4", d, i + 1, 1.0) for i, d in enumerate(TIE_DOCS)]                   # 60 tied documents
        + [("6", "e", 1, 4.0), ("6", "a", 2, 5.0), ("6", "f", 3, 3.0), ("6", "g", 4, 2.0)])  # score beats rank
    duplicated = [("5", "a", 1, 5.0), ("5", "e", 2, 4.0), ("5", "f", 3, 3.0), ("5", "a", 4, 1.0)]  # 'a' twice
    unjudged = [("9", "a", 1, 1.0)]                                                # query 9: not in the qrels
    write = lambda path, rows: path.write_text("".join(f"{q} Q0 {d} {r} {s} syn\n" for q, d, r, s in rows))
    run, run_nodup, qrels = tmp_path / "syn.trec", tmp_path / "syn_nodup.trec", tmp_path / "qrels.trec"
    write(run, lines + duplicated + unjudged)
    write(run_nodup, lines + unjudged)
    judged = {"1": ["d1", "d4", "nowhere"], "2": ["c"], "3": ["y"], "4": [TIE_DOCS[17]], "5": ["a"], "6": ["a", "g"],
              "7": ["z"]}                                                          # query 7: missing from the run
    qrels.write_text("".join(f"{q} 0 {d} 1\n" for q, docs in judged.items() for d in docs))
    return run, run_nodup, qrels, trec_rows(run)


def test_our_reader_follows_the_documented_recipe(synthetic):
    run, _, qrels, rows = synthetic
    got = ours(run, qrels)
    assert got == documented(rows, qrels, ties="rank-docid", duplicates="best")
    rr = got["mrr@100"]
    assert (rr["2"], rr["3"], rr["4"], rr["5"], rr["6"], rr["7"]) == (0.5, 1.0, 1 / 18, 1.0, 1.0, 0.0)
    assert "9" not in rr  # a run query absent from the qrels is ignored


def test_ir_measures_reads_the_raw_run_with_docid_ties_and_last_duplicate(synthetic):
    """Ties: docid descending (trec_eval's order) for R, AP and nDCG, but docid ascending for RR."""
    run, _, qrels, rows = synthetic
    theirs = by_ir_measures(run, qrels)
    rr_model = documented(rows, qrels, ties="docid-asc", duplicates="last")
    trec_model = documented(rows, qrels, ties="docid-desc", duplicates="last")
    assert_same(theirs, rr_model, "ir_measures", skip=lambda m: m.kind != "mrr")
    assert_same(theirs, trec_model, "ir_measures", skip=lambda m: m.kind == "mrr")
    rr, ap, mine = theirs["mrr@100"], theirs["map@100"], ours(run, qrels)
    assert rr["7"] == 0.0 and "9" not in rr                       # missing query: 0, counted (as ours)
    assert (rr["2"], rr["3"], rr["5"]) == (1 / 3, 0.5, 1 / 3) != tuple(mine["mrr@100"][q] for q in "235")
    assert ap["2"] == ap["3"] == 1.0 != mine["map@100"]["2"]
    assert rr["4"] == 1 / (sorted(TIE_DOCS).index(TIE_DOCS[17]) + 1)


def test_pytrec_eval_reads_the_raw_run_with_docid_descending_ties_and_refuses_duplicates(synthetic):
    run, run_nodup, qrels, rows = synthetic
    with pytest.raises(AssertionError):  # parse_run asserts each (query, document) appears once
        by_pytrec_eval(run, qrels)
    theirs = by_pytrec_eval(run_nodup, qrels)
    rows = [r for r in rows if r[0] != "5"]
    expected = documented(rows, qrels, ties="docid-desc", duplicates="best")
    judged_and_ranked = set(expected["mrr@100"]) - {"5", "7"}
    assert set(theirs["mrr@100"]) == judged_and_ranked            # the missing query is dropped, not 0
    # recip_rank has no cut-off: it is mrr@k only for k >= the run's depth (60)
    assert_same(theirs, expected, "pytrec_eval", qids=judged_and_ranked, skip=lambda m: m.kind == "mrr" and m.k < 60)
    assert (theirs["mrr@100"]["2"], theirs["mrr@100"]["3"]) == (1.0, 1.0)
    assert theirs["mrr@100"]["4"] == 1 / (sorted(TIE_DOCS, reverse=True).index(TIE_DOCS[17]) + 1)


def test_ranx_reads_the_raw_run_with_last_duplicate_and_unspecified_tie_order(synthetic):
    run, _, qrels, rows = synthetic
    ranx = need("ranx")
    with pytest.raises(AssertionError, match="make_comparable"):  # a missing query is refused by default
        ranx.evaluate(ranx.Qrels.from_file(str(qrels), kind="trec"), ranx.Run.from_file(str(run), kind="trec"),
                      "mrr@100")
    theirs = by_ranx(run, qrels)
    untied = ["1", "5", "6", "7"]
    assert_same(theirs, documented(rows, qrels, ties="rank-docid", duplicates="last"), "ranx", qids=untied)
    rr, mine = theirs["mrr@100"], ours(run, qrels)["mrr@100"]
    assert rr["7"] == 0.0 and "9" not in rr and rr["5"] == 1 / 3 != mine["5"]
    # 60 tied documents: neither file order, nor rank, nor docid order (its score sort is not stable)
    position = round(1 / rr["4"])
    assert position not in (18, sorted(TIE_DOCS).index(TIE_DOCS[17]) + 1,
                            sorted(TIE_DOCS, reverse=True).index(TIE_DOCS[17]) + 1)


def test_peers_differ_on_mrr_cut_off_and_graded_qrels(tmp_path):
    """docs/metrics.md differences 3 and 4, on files the peers read themselves."""
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.trec"
    run.write_text("".join(f"1 Q0 d{i:02d} {i + 1} {100 - i} r\n" for i in range(20)))
    qrels.write_text("1 0 d14 1\n")  # first hit at rank 15
    assert ours(run, qrels)["mrr@10"]["1"] == 0.0 == by_ir_measures(run, qrels)["mrr@10"]["1"] == by_ranx(run, qrels)["mrr@10"]["1"]
    assert by_pytrec_eval(run, qrels)["mrr@10"]["1"] == pytest.approx(1 / 15)  # recip_rank has no cut-off
    qrels.write_text("1 0 d01 1\n1 0 d00 2\n")  # graded: the better document is ranked first anyway ...
    run.write_text("1 Q0 d01 1 2.0 r\n1 Q0 d00 2 1.0 r\n")  # ... no: the grade-1 document comes first
    assert ours(run, qrels)["ndcg@3"]["1"] == pytest.approx(1.0)  # binary gains
    for peer in (by_ranx, by_ir_measures, by_pytrec_eval):
        assert peer(run, qrels)["ndcg@3"]["1"] < 0.99, peer.__name__


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


