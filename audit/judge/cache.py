"""The judge's answers on disk, so a rerun makes no request: one SQLite row per (model, prompt
version, language pair, source text, translation), holding the raw answer that parsed.

SQLite in WAL mode makes each write atomic and lets concurrent runs (and the judge's threads, each
on its own connection) read and write the same file; a crash leaves the previous or the new row.
Only answers that parsed are stored: a failure is asked again next time.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path


def cache_key(model: str, prompt_version: str, pair: tuple[str, str], source: str, target: str) -> str:
    return hashlib.sha256("\0".join([model, prompt_version, *pair, source, target]).encode()).hexdigest()


class JudgeCache:
    """`get(key) -> answer | None`, `put(key, model, answer)`; `path=None` keeps nothing."""

    def __init__(self, path: Path | None) -> None:
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                           "answer TEXT NOT NULL)")

    @contextmanager
    def _connect(self):
        """One connection per use (threads share no connection), committed and closed after it."""
        with closing(sqlite3.connect(self.path, timeout=60)) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            yield db

    def get(self, key: str) -> str | None:
        if self.path is None:
            return None
        with self._connect() as db:
            row = db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, answer: str) -> None:
        if self.path is None:
            return
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, model, answer))
