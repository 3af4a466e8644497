"""Crash consistency and concurrency for output folders: one transaction per command and folder.

A command's changes to one folder form a transaction, kept in `<folder>/.bbsard-audit-txn-*/`:
`journal.jsonl` (a header naming command, pid and claimed outputs, then one line written *before*
each change: the name and the sha256 of its new content, on its first change also where its
previous version is kept; or a folder created), the previous versions (hard links, or the renamed
folder), and the temp files.
The command holds an flock on that folder while it lives. `committed.json` (written atomically,
the commit point) lists the manifest records of the new set. A dead transaction (its flock is
free) is settled by the next command or reader: committed -> its records are merged into the
manifest (roll forward); not committed -> every name goes back to its previous version (roll
back), unless someone changed it since. Then the transaction folder is deleted.

Also the base file helpers both this module and `bbsard_audit.base.io` use (digests, disk errors).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import InputError

UMASK = os.umask(0)
os.umask(UMASK)

MANIFEST = ".bbsard-audit-outputs.json"
"""Per output folder: relative name -> {command, sha256} of every file bbsard-audit wrote there."""


DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO)
"""What a full, read-only or unwritable disk raises: reported as one line, never a traceback."""


def disk_problem(exc: BaseException) -> str | None:
    """`no space left on device` for a disk-level OSError, else None (a bug: let it surface)."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_ERRORS:
        return None
    text = exc.strerror or os.strerror(exc.errno)
    return text[:1].lower() + text[1:]


@contextlib.contextmanager
def disk_errors(target: str | os.PathLike) -> Iterator[None]:
    """Turn a full / read-only disk while writing `target` into `cannot write <target>: <reason>`."""
    try:
        yield
    except OSError as exc:
        reason = disk_problem(exc)
        if reason is None:
            raise
        raise InputError(f"cannot write {target}: {reason}") from None


def digest_of(path: Path) -> str:
    """sha256 of a regular file, or of a folder's sorted (relative name, file digest) list."""
    h = hashlib.sha256()
    if path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                h.update(f"{p.relative_to(path).as_posix()}\0{digest_of(p)}\n".encode())
        return h.hexdigest()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_regular_or_dir(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


TXN_PREFIX = ".bbsard-audit-txn-"
JOURNAL, COMMITTED = "journal.jsonl", "committed.json"
FAULT_ENV = "BBSARD_AUDIT_FAULT"
"""Fault injection for tests: `kill:N` (SIGKILL), `stop:N` (SIGSTOP) or `enospc:N` / `erofs:N`
(that OSError) at the N-th file operation of io.py in this process."""
LOCK_WAIT = 30.0
"""Seconds a command waits for another one's short manifest/journal update before giving up."""
_OPS = 0
_HELD: dict[str, list] = {}
_HELD_LOCK = threading.RLock()


def fault_point() -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    global _OPS
    _OPS += 1
    mode, _, n = spec.partition(":")
    if mode == "stop" and _OPS >= int(n) and not _HELD:  # never stopped holding a folder lock
        os.environ.pop(FAULT_ENV)
        os.kill(os.getpid(), signal.SIGSTOP)
    if _OPS != int(n):
        return
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode in ("enospc", "erofs"):
        code = errno.ENOSPC if mode == "enospc" else errno.EROFS
        raise OSError(code, os.strerror(code))


def is_scratch(key: str) -> bool:
    return key.startswith(TXN_PREFIX)


@contextlib.contextmanager
def folder_lock(root: Path) -> Iterator[None]:
    """Exclusive flock on the folder itself (re-entrant in this process): manifest updates, journal
    claims and settling are read-modify-write under it, so concurrent commands merge, never overwrite."""
    key = os.path.realpath(root)
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is None:
            held = _HELD[key] = [_flock_waiting(key), 0]
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
            if not held[1]:
                del _HELD[key]
                os.close(held[0])


def _flock_waiting(folder: str) -> int:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise InputError("another bbsard-audit command has held this folder's lock for "
                                 f"{LOCK_WAIT:.0f}s; try again when it has finished", file=folder) from None
            time.sleep(0.02)


def read_manifest(root: Path) -> dict[str, dict]:
    path = root / MANIFEST
    if not path.is_file():
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")).get("files", {}))
    except (ValueError, AttributeError, UnicodeDecodeError):
        raise InputError(f"{MANIFEST} is not valid JSON: move it away only if the folder holds "
                         "nothing you need", file=str(root)) from None


def _write_json_atomic(path: Path, obj: Any, tmp_dir: Path) -> None:
    fault_point()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=tmp_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
        os.chmod(tmp, 0o666 & ~UMASK)
        fault_point()
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def merge_manifest(root: Path, records: dict[str, dict | None], tmp_dir: Path) -> None:
    """Apply `records` (None: removed) to the manifest as it is now (call under `folder_lock`)."""
    if not records:
        return
    files = read_manifest(root)
    for key, entry in records.items():
        if entry is None:
            files.pop(key, None)
        else:
            files[key] = entry
    _write_json_atomic(root / MANIFEST, {"tool": "bbsard-audit", "files": dict(sorted(files.items()))}, tmp_dir)


def delete_path(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def digest_or_none(path: Path) -> str | None:
    """sha256 of a regular file or folder; None when it is neither or cannot be read."""
    try:
        return digest_of(path) if is_regular_or_dir(path) else None
    except OSError:
        return None


class Transaction:
    """One command's journaled changes to one folder (see the comment above)."""

    def __init__(self, root: Path, command: str, claims: Iterable[str], *, created_root: bool) -> None:
        self.root, self.command, self.created_root = root, command, created_root
        self.claims = set(claims)
        self.touched: set[str] = set()
        with folder_lock(root):
            settle(root, locked=True)
            self._refuse_conflicts(self.claims)
            fault_point()
            self.dir = Path(tempfile.mkdtemp(prefix=TXN_PREFIX, dir=root))
            self.fd = self.journal = None
            try:
                self.fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.journal = os.open(self.dir / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._log({"tool": "bbsard-audit", "command": command, "pid": os.getpid(),
                           "claims": sorted(self.claims)})
            except BaseException:
                self._close()
                shutil.rmtree(self.dir, ignore_errors=True)
                raise

    def _log(self, event: dict) -> None:
        fault_point()
        os.write(self.journal, (json.dumps(event) + "\n").encode())  # no fsync: guards process kills, not power loss

    def _refuse_conflicts(self, keys: set[str]) -> None:
        refuse_concurrent(self.root, keys)

    def make_dirs(self, folder: Path) -> None:
        missing = []
        while not folder.exists() and folder != self.root:
            missing.append(folder)
            folder = folder.parent
        for path in reversed(missing):
            self._log({"dir": path.relative_to(self.root).as_posix()})
            path.mkdir(exist_ok=True)

    def change(self, key: str, path: Path, digest: str | None, *, move: bool = False) -> None:
        """Journal that `key` is about to hold `digest` (None: deleted), before anything changes; on
        its first change here, also where its previous version is kept, and keep it (a hard link, or
        the renamed folder with `move`)."""
        if key in self.touched:
            self._log({"key": key, "sha256": digest})
            return
        with folder_lock(self.root):
            if key not in self.claims:
                self._refuse_conflicts({key})
            backup = f"previous-{len(self.touched)}" if os.path.lexists(path) else None
            self._log({"key": key, "backup": backup, "sha256": digest})
            self.touched.add(key)
        if backup is None:
            return
        fault_point()
        if move or path.is_dir():
            os.rename(path, self.dir / backup)
        else:
            try:
                os.link(path, self.dir / backup, follow_symlinks=False)
            except OSError:  # a file system without hard links
                shutil.copy2(path, self.dir / backup, follow_symlinks=False)

    def commit(self, records: dict[str, dict | None]) -> None:
        """`committed.json` is the commit point for a kill; a failure before the manifest is updated
        (a full disk) is undone here, so the error leaves the previous set. Cleanup failures are
        left to the next `settle` (the commit record rolls it forward)."""
        with folder_lock(self.root):
            try:
                _write_json_atomic(self.dir / COMMITTED, {"files": records}, self.dir)
                merge_manifest(self.root, records, self.dir)
            except BaseException:
                with contextlib.suppress(OSError):
                    (self.dir / COMMITTED).unlink()
                self.rollback()
                raise
            try:
                _discard(self.dir)
            except OSError:
                pass
            finally:
                self._close()

    def rollback(self) -> None:
        try:
            with folder_lock(self.root):
                _undo(self.root, self.dir, _read_journal(self.dir / JOURNAL))
                _discard(self.dir)
                self._close()
                if self.created_root and not any(self.root.iterdir()):
                    self.root.rmdir()
        except OSError:  # left for the next command to settle; the original error is what matters
            self._close()

    def _close(self) -> None:
        for fd in ("journal", "fd"):
            if getattr(self, fd, None) is not None:
                os.close(getattr(self, fd))
                setattr(self, fd, None)


DONE = ".done"


def _discard(txn_dir: Path) -> None:
    """Delete a settled transaction folder: renamed first, so a kill mid-delete cannot leave a
    journal without its commit record (a `.done` folder is only ever deleted)."""
    done = txn_dir.with_name(txn_dir.name + DONE)
    fault_point()
    os.rename(txn_dir, done)
    fault_point()
    shutil.rmtree(done, ignore_errors=True)


class _Found:
    """A transaction folder found in an output folder, read from its journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events = _read_journal(path / JOURNAL)
        header = self.events[0] if self.events else {}
        self.done = path.name.endswith(DONE)
        try:  # killed before its journal had a header: an empty folder of ours
            empty = not self.events and set(os.listdir(path)) <= {JOURNAL}
        except OSError:
            empty = False
        self.ours = header.get("tool") == "bbsard-audit" or self.done or empty
        self.command, self.pid = header.get("command", "?"), header.get("pid", "?")
        self.claims = header.get("claims", [])
        self.touched = [e["key"] for e in self.events[1:] if "backup" in e]
        self._fd: int | None = None

    def alive(self) -> bool:
        """Its command still runs (holds the folder's flock); else we now hold it, to settle it."""
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def refuse_concurrent(root: Path, keys: Iterable[str]) -> None:
    """Refuse (one line) when a live command of another process claims or writes one of `keys` here."""
    keys = set(keys)
    for other in _transactions(root):
        try:
            if other.pid == os.getpid() or other.done or not other.alive():
                continue
        finally:
            other.close()
        clash = sorted(keys & (set(other.claims) | set(other.touched)))
        if clash:
            raise InputError(f"{clash[0]} is being written right now by `bbsard-audit {other.command}` "
                             f"(pid {other.pid}); wait for it to finish or choose another --out", file=str(root))


def _transactions(root: Path) -> list[_Found]:
    try:
        names = sorted(e.name for e in os.scandir(root) if e.name.startswith(TXN_PREFIX)
                       and e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    return [_Found(root / n) for n in names]


def _read_journal(path: Path) -> list[dict]:
    """The journal's complete lines (a kill may cut the last one: it had not been acted on)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    events = []
    for line in data.split(b"\n")[:-1]:
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events


def _undo(root: Path, txn_dir: Path, events: list[dict]) -> None:
    """Put every name the journal touched back to its previous version (never over a later change)."""
    order: list[tuple[str, str | None]] = []
    new: dict[str, set] = {}
    for e in events[1:]:
        if "backup" in e:
            order.append((e["key"], e["backup"]))
        if "sha256" in e:
            new.setdefault(e["key"], set()).add(e["sha256"])
    for key, backup in reversed(order):
        path = root / key
        current = digest_or_none(path)
        ours = current is not None and current in new.get(key, ())
        if current is not None and not ours:
            continue  # the previous version still (its change never happened), or someone else's since
        kept = txn_dir / backup if backup else None
        if ours and (path.is_dir() or kept is None or kept.is_dir()):
            fault_point()
            delete_path(path)
        if kept is not None and os.path.lexists(kept):
            fault_point()
            os.replace(kept, path)
    for e in reversed(events[1:]):
        if "dir" in e:
            with contextlib.suppress(OSError):
                (root / e["dir"]).rmdir()


def settle(root: str | os.PathLike, *, locked: bool = False, reading: Iterable[str] | None = ()) -> None:
    """Finish what killed bbsard-audit commands left in `root`: a committed change is recorded (roll
    forward), an uncommitted one undone (roll back), their transaction folders deleted. Cheap when
    there is nothing to do (one directory scan). A reader passes the names it reads (`reading`,
    None: any): while a live command of another process is half-way through writing one of them,
    it waits (up to LOCK_WAIT seconds, then one line) rather than read a mix."""
    root = Path(root)
    deadline = time.monotonic() + LOCK_WAIT
    while _transactions(root):
        with contextlib.ExitStack() as stack:
            if not locked:
                stack.enter_context(folder_lock(root))
            busy = [(name, txn) for txn in _transactions(root) if (name := _settle_one(root, txn, reading))]
        if not busy or locked:
            return
        if time.monotonic() > deadline:
            name, txn = busy[0]
            raise InputError(f"{name} is being written right now by `bbsard-audit {txn.command}` (pid {txn.pid}); "
                             "try again when it has finished", file=str(root))
        time.sleep(0.05)  # outside the lock: the writer needs it to commit


def _settle_one(root: Path, txn: _Found, reading: Iterable[str] | None) -> str | None:
    """Settle one dead transaction; for a live writer's, half-way through `reading`, the name it writes."""
    try:
        if not txn.ours:
            return None
        if txn.alive():
            clash = sorted(set(txn.touched) & set(txn.touched if reading is None else reading))
            return clash[0] if clash and txn.pid != os.getpid() else None
        with disk_errors(f"{root} (to finish an interrupted `bbsard-audit {txn.command}`)"):
            if txn.done:
                shutil.rmtree(txn.path, ignore_errors=True)
                return None
            committed = txn.path / COMMITTED
            if committed.is_file():
                merge_manifest(root, json.loads(committed.read_text(encoding="utf-8"))["files"], txn.path)
            else:
                _undo(root, txn.path, txn.events)
            _discard(txn.path)
        return None
    finally:
        txn.close()


def settled(path: str | os.PathLike) -> Path:
    """`path`, after settling its folder (waiting for a live writer of it): every reader of a stage
    output reads a whole set."""
    path = Path(path)
    settle(path.parent, reading=[path.name])
    return path
