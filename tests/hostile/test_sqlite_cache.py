"""Two processes opening one new cache file at the same instant (base/sqlite_cache.py): the second
waits for the first's lock instead of failing with "database is locked" on the switch to WAL."""

import sqlite3
import threading

from bbsard_audit.base import sqlite_cache


def _hold_lock(path, held: threading.Event, seconds: float) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    db.execute("CREATE TABLE t (x)")
    held.set()
    threading.Event().wait(seconds)
    db.execute("COMMIT")
    db.close()


def test_a_cache_opened_while_another_process_holds_the_lock_waits_and_is_wal(tmp_path):
    path = tmp_path / "cache.sqlite"
    held = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, held, 0.5))
    holder.start()
    held.wait(5)
    db = sqlite_cache.connect(path, timeout=10)
    holder.join()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    db.close()


def test_many_processes_opening_new_cache_files_together_never_fail(tmp_path):
    """Four openers released by one barrier on each of 100 new files: the plain `sqlite3.connect` +
    `PRAGMA journal_mode=WAL` fails on about one file in 40 here (two openers both upgrading their lock:
    SQLite answers one at once, without the busy timeout), sqlite_cache.connect on none."""
    failures = []

    def open_one(path, barrier):
        barrier.wait()
        try:
            db = sqlite_cache.connect(path, timeout=10)
            db.execute("CREATE TABLE IF NOT EXISTS t (x)")
            db.commit()
            db.close()
        except sqlite3.OperationalError as exc:
            failures.append(f"{path.name}: {exc}")

    for i in range(100):
        barrier = threading.Barrier(4)
        threads = [threading.Thread(target=open_one, args=(tmp_path / f"c{i}.sqlite", barrier)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert sqlite3.connect(tmp_path / "c99.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"
