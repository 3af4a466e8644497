"""The judge's answers on disk, so a rerun makes no request: one SQLite row per (server, model,
prompt version, language pair, source text, translation), holding the raw answer that parsed.

The server is its normalized endpoint (`cache_endpoint`: scheme, host, port, path; no user info, no
query): two servers may serve different models under one name, so neither hands its answers to the
other. SQLite in WAL mode makes each write atomic and lets concurrent runs (and the judge's threads,
each on its own connection) read and write the same file; a crash leaves the previous or the new row.
Only answers that parsed are stored: a failure is asked again next time, and so is an entry that
cannot be read (not UTF-8), which `get` reports as `BadEntry`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
from bbsard_audit.base import sqlite_cache


def cache_key(endpoint: str, model: str, prompt_version: str, pair: tuple[str, str], source: str,
              target: str) -> str:
    fields = [endpoint, model, prompt_version, *pair, source, target]
    return hashlib.sha256("\0".join(fields).encode("utf-8", "surrogatepass")).hexdigest()


def cache_endpoint(url: str) -> str:
    """The URL that names a server in keys: lower-case scheme and host, no default port, no trailing
    slash, no user info and no query (either could hold a credential)."""
    parsed = httpx.URL(url)
    port = "" if parsed.port in (None, {"http": 80, "https": 443}.get(parsed.scheme)) else f":{parsed.port}"
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path.rstrip('/')}"


class BadEntry(Exception):
    """A stored answer that cannot be read back."""


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
        with closing(sqlite_cache.connect(self.path)) as db, db:
            yield db

    def get(self, key: str) -> str | None:
        if self.path is None:
            return None
        try:
            with self._connect() as db:
                row = db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:  # e.g. "Could not decode to UTF-8 column 'answer'"
            if "decode" not in str(exc):
                raise
            raise BadEntry(str(exc)) from None
        return row[0] if row else None

    def put(self, key: str, model: str, answer: str) -> None:
        if self.path is None:
            return
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, model, answer))
