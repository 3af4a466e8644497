"""One way to open the shared SQLite caches (embeddings, signals, judge answers, COMET scores) from
several processes at once: WAL journal, a busy timeout, and the switch to WAL retried. When two
processes open a new cache file in the same instant, both ask to upgrade their lock for the switch and
SQLite answers one of them "database is locked" at once, without waiting out the busy timeout (seen:
two judge runs starting together, tests/audit/test_judge.py; about one new file in 40 with four
openers, tests/hostile/test_sqlite_cache.py)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

TIMEOUT = 60.0
"""Seconds a process waits for another's lock, on every statement and on the switch to WAL."""


def connect(path: str | Path, timeout: float = TIMEOUT) -> sqlite3.Connection:
    """A connection to `path` in WAL mode (persistent in the file: switched once, by whichever process is first)."""
    db = sqlite3.connect(path, timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.05)
