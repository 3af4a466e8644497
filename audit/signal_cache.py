"""On-disk cache of whole-batch signal results, so a rerun on unchanged data is fast (warm audit).

Some checks are batch-dependent (the length check's z-scores use the batch's own statistics), so the
unit cached is one signal on one exact batch: the key hashes the signal's code and data files, the
library versions it relies on, its settings, the batch's language pair and every input text. Any
change means a miss.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable, Sequence

import pandas as pd

from bbsard_audit.base import sqlite_cache
from .findings import Finding, Span

def fingerprint(files: Iterable[Path] = (), packages: Iterable[str] = (), settings: object = None) -> str:
    """A hash of what a signal's output depends on besides its input texts."""
    h = hashlib.sha256()
    for path in files:
        h.update(Path(path).read_bytes())
    for name in packages:
        h.update(f"{name}=={metadata.version(name)}".encode())
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()


class SignalCache:
    """`get_or_compute(name, fingerprint, pair, inputs, compute)`; `path=None` disables caching."""

    def __init__(self, path: Path | None) -> None:
        self.path = Path(path) if path else None
        self.hits: list[str] = []
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, payload BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite_cache.connect(self.path)
        return db

    def get_or_compute(self, name: str, fp: str, pair: tuple[str, str], inputs: Sequence[Sequence[str]],
                       compute: Callable[[], tuple[list[list[Finding]], pd.DataFrame, dict]]
                       ) -> tuple[list[list[Finding]], pd.DataFrame, dict]:
        if self.path is None:
            return compute()
        key = self.key(name, fp, pair, inputs)
        with self._connect() as db:
            hit = db.execute("SELECT payload FROM results WHERE key = ?", (key,)).fetchone()
        if hit:
            data = json.loads(zlib.decompress(hit[0]))
            self.hits.append(name)
            columns = pd.DataFrame(data["columns"]["data"], columns=data["columns"]["columns"])
            columns = columns.astype(data["dtypes"])
            findings = [[Finding(f, r, tuple(Span(*s) for s in spans)) for f, r, spans in row]
                        for row in data["findings"]]
            return findings, columns, data["meta"]
        findings, columns, meta = compute()
        payload = {"columns": columns.to_dict(orient="split", index=False),
                   "dtypes": {c: str(t) for c, t in columns.dtypes.items()},
                   "findings": [[[f.flag, f.reason, [[s.side, s.start, s.end, s.text, s.category] for s in f.spans]]
                                 for f in row] for row in findings], "meta": meta}
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO results VALUES (?, ?)",
                       (key, zlib.compress(json.dumps(payload, default=_plain).encode())))
        return findings, columns, meta

    @staticmethod
    def key(name: str, fp: str, pair: tuple[str, str], inputs: Sequence[Sequence[str]]) -> str:
        """One result's identity: the signal, its fingerprint and the (source, target) pair it read
        the texts in (every pair alike), then the texts row by row."""
        source, target = pair
        h = hashlib.sha256(f"{name}\0{fp}\0{source}->{target}".encode())
        for row in inputs:
            h.update("\x1f".join(row).encode() + b"\x1e")
        return h.hexdigest()


def _plain(value):
    """numpy scalars -> Python numbers for JSON."""
    return value.item() if hasattr(value, "item") else str(value)
