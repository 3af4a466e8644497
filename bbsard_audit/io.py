"""Atomic file output, JSON provenance sidecars and output ownership shared by every stage.

Ownership: a command writes under `guard_outputs(...)`, which refuses (one line, before anything is
written) an `--out` that is an input or the wrong kind of path, and any existing file the command did
not write itself. What it writes is recorded, with its sha256, in the folder's `MANIFEST`, so a rerun
may replace (or `release` delete) exactly its own earlier outputs and nothing else.

Crash consistency: the writes of one command in one folder are one transaction (journal + previous
versions in a `.bbsard-audit-txn-*` folder inside it), so a command killed at any instant leaves
the complete previous set or, once committed, the complete new set; the next command or reader
of the folder (`settle`) finishes the job. Manifest updates are merged under an flock on the folder.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import __version__
from .errors import InputError

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path; rename it onto `path` only on success. Under `guard_outputs` the rename is
    journaled in the command's transaction (the old version kept until the command commits); a full
    or read-only disk is one line (`InputError`), never a traceback, and leaves the old file."""
    path = Path(path)
    guard = _GUARD.get()
    txn = guard.transaction_for(path) if guard is not None else None
    with disk_errors(path):
        if txn is not None:
            txn.make_dirs(path.parent)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        _fault_point()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=txn.dir if txn else path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            yield tmp_path
            if tmp_path.is_file():  # mkstemp makes 0600; outputs are for sharing, so honour the umask
                os.chmod(tmp_path, 0o666 & ~_UMASK)
            if guard is None:
                _fault_point()
                os.replace(tmp_path, path)
            else:
                guard.place(tmp_path, path)
        finally:
            if tmp_path.exists():
                tmp_path.unlink()


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


def file_problem(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be read as a regular file (missing, symlink loop, FIFO, device, folder), else
    None. Checked before opening: reading a FIFO would block forever, a device never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        return "is a broken symlink" if os.path.islink(path) else "not found"
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a folder" if stat.S_ISDIR(mode) else "not a regular file")
    return f"is {kind}, not a regular file"


def write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def finite(obj: Any) -> Any:
    """`obj` with every NaN / infinity replaced by None (JSON null), however deeply nested."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", None) == 0:  # numpy scalar
        return finite(obj.item())
    return obj


def dumps(obj: Any) -> str:
    """Strict JSON text: NaN and infinity become null (bare NaN is not JSON), never written as NaN."""
    return json.dumps(finite(obj), indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return write_text(path, dumps(obj))


def write_csv(path: str | os.PathLike, frame) -> Path:
    """Write a pandas DataFrame as UTF-8 CSV, atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)


def sidecar_path(output: str | os.PathLike) -> Path:
    """`audit.csv` -> `audit.meta.json`: the provenance record next to an output."""
    output = Path(output)
    return output.with_name(output.name.split(".")[0] + ".meta.json")


def write_sidecar(output: str | os.PathLike, **fields: Any) -> Path:
    """Record how an output was made (tool version, time, platform, plus the caller's fields); every
    local path among the fields is recorded as `file_ref` (name + sha256), so the sidecar can be shared."""
    record = {
        "output": Path(output).name,
        "tool": "bbsard-audit",
        "tool_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        **portable(fields),
    }
    return write_json(sidecar_path(output), record)


def is_local_path(value: Any) -> bool:
    """A `Path`, or a string that is an absolute path or names an existing file or folder through a
    folder (a bare name such as `audit.csv` is already portable: it names a neighbour)."""
    if isinstance(value, os.PathLike):
        return True
    if not isinstance(value, str) or not value or "\n" in value:
        return False
    return os.path.isabs(value) or (os.sep in value and os.path.lexists(value))


def file_ref(path: str | os.PathLike) -> dict:
    """A file or folder named by content, never by where it lies: `{name, sha256}` (sha256 null when
    it cannot be read; a folder's digest covers every file in it, see `digest_of`)."""
    path = Path(path)
    try:
        digest = digest_of(path) if _is_regular_or_dir(path) else None
    except OSError:
        digest = None
    return {"name": path.name, "sha256": digest}


def file_label(path: str | os.PathLike) -> str:
    """`file_ref` as one line of text: `name (sha256 <hex>)`, for text fields that name an input."""
    ref = file_ref(path)
    return f"{ref['name']} (sha256 {ref['sha256']})"


_PREFIXED_PATH = re.compile(r"([A-Za-z][\w.+-]*:)(/(?!/)[^\[\]@#\s]*)(.*)", re.S)
"""An id such as `st:/models/minilm` or `transformers:/m/opus[nl->fr]@rev` (not a `scheme://` URL)."""


def portable(value: Any) -> Any:
    """`value` (however nested) with every local path (`is_local_path`) replaced by its `file_ref`,
    and a local model path inside an id (`st:/models/minilm`) cut to its folder name (`st:minilm`)."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if is_local_path(value):
        return file_ref(value)
    match = _PREFIXED_PATH.fullmatch(value) if isinstance(value, str) else None
    return f"{match[1]}{Path(match[2]).name}{match[3]}" if match else value


# ---------------------------------------------------------------- output ownership

MANIFEST = ".bbsard-audit-outputs.json"
"""Per output folder: relative name -> {command, sha256} of every file bbsard-audit wrote there."""
DEMO = "demo"
"""Files the demo wrote are sample illustrations: any command may replace them."""
REGENERATED = ("report",)
"""Commands whose outputs only re-render the folder: the demo may replace them (demo -> report -> demo)."""
_GUARD: contextvars.ContextVar["OutputGuard | None"] = contextvars.ContextVar("bbsard_output_guard", default=None)


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


def _same(a: Path, b: Path) -> bool:
    if os.path.abspath(a) == os.path.abspath(b) or os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class OutputGuard:
    """What one command may write, replace and delete in one output folder.

    `preserve`: names whose version changed by someone else is not refused but kept under a new name
    the command owns (`<stem>.kept-<sha256[:12]><suffix>`, listed in `kept`) before being replaced
    (pull's annotations_raw.csv: the only copy of annotations must never be lost nor block a pull).
    """

    def __init__(self, root: Path, command: str, inputs: Iterable[str | os.PathLike | None] = (),
                 preserve: Iterable[str] = ()) -> None:
        self.root, self.command = Path(root), command
        self.real_root = Path(os.path.realpath(self.root))
        self.inputs = tuple(Path(p) for p in inputs if p is not None)
        self.preserve = frozenset(preserve)
        self.written: dict[str, str] = {}
        self.removed: set[str] = set()
        self.kept: list[tuple[str, str]] = []
        self.txn: _Transaction | None = None
        self.claims: list[str] = []
        self.transactional = False  # set by begin(): guard_outputs, not a bare OutputGuard
        settle(self.root)
        self.manifest = _read_manifest(self.root)

    def _key(self, path: Path) -> str | None:
        """`path` relative to the folder (posix), or None when it lies outside."""
        real = Path(os.path.realpath(Path(path).parent)) / Path(path).name
        try:
            return real.relative_to(self.real_root).as_posix()
        except ValueError:
            return None

    def owns(self, key: str) -> bool:
        """`key` was written by this command (or by the demo) and has not changed since."""
        entry = self.manifest.get(key)
        path = self.root / key
        return (entry is not None and self._may_replace(entry.get("command"))
                and _is_regular_or_dir(path) and digest_of(path) == entry.get("sha256"))

    def _may_replace(self, writer: str | None) -> bool:
        return writer in (self.command, DEMO) or (self.command == DEMO and writer in REGENERATED)

    def check(self, path: str | os.PathLike) -> None:
        """Refuse (one line) to write `path` when it is an input or an existing file this command does not own."""
        path = Path(path)
        for source in self.inputs:
            if _same(path, source):
                raise InputError(f"--out would overwrite the input {source}; choose another --out",
                                 file=str(path))
        key = self._key(path)
        if key is None or _scratch(key) or key in self.written or not os.path.lexists(path):
            return
        if self.owns(key) or key in self.preserve:
            return
        entry = self.manifest.get(key)
        if entry is None:
            why = "was not written by bbsard-audit"
        elif not self._may_replace(entry.get("command")):
            why = f"was written by `bbsard-audit {entry.get('command')}`"
        else:
            why = f"was changed since `bbsard-audit {self.command}` wrote it"
        raise InputError(f"{key} exists and {why}: `bbsard-audit {self.command}` never replaces it; "
                         "move it away or choose another --out", file=str(self.root))

    def record(self, path: Path, digest: str | None = None) -> None:
        key = self._key(path)
        if key is not None and not _scratch(key):
            self.written[key] = digest or digest_of(path)

    def previous(self) -> list[str]:
        """Top-level names this command wrote here before (and still owns)."""
        return sorted(k for k, e in self.manifest.items()
                      if e.get("command") == self.command and "/" not in k and self.owns(k))

    # ------------------------------------------------------------ changes, through the transaction

    def begin(self, claims: Iterable[str]) -> None:
        """Every change of this command goes through one transaction, started at its first write
        (a command that writes nothing leaves no trace); `claims` are refused to concurrent writers."""
        self.claims = list(claims)
        self.transactional = True

    def _transaction(self) -> "_Transaction | None":
        if self.txn is None and self.transactional:
            with disk_errors(self.root):
                created = not self.root.exists()
                self.root.mkdir(parents=True, exist_ok=True)
                self.txn = _Transaction(self.root, self.command, self.claims, created_root=created)
        return self.txn

    def transaction_for(self, path: Path) -> "_Transaction | None":
        """Check `path` and say which transaction journals its write (None: a plain atomic write)."""
        self.check(path)
        key = self._key(path)
        return None if key is None or _scratch(key) else self._transaction()

    def scratch(self) -> Path:
        """A private folder inside the output folder for building outputs (`release`); it goes with
        the transaction, so a killed build leaves nothing beside or inside the folder."""
        if self._transaction() is None:
            raise RuntimeError("scratch() needs guard_outputs")
        path = self.txn.dir / "build"
        path.mkdir(exist_ok=True)
        return path

    def place(self, src: Path, path: Path) -> None:
        """Rename the finished temp file `src` onto `path` (atomic_path's last step), journaled."""
        key = self._key(path)
        digest = digest_of(src)
        if key is None or _scratch(key) or self.txn is None:
            _fault_point()
            os.replace(src, path)
        else:
            self._keep_foreign(key, path)
            self.txn.change(key, path, digest)
            _fault_point()
            os.replace(src, path)
        self.record(path, digest)

    def _keep_foreign(self, key: str, path: Path) -> None:
        """A `preserve` name someone else changed: copy their version to a name of our own first."""
        if key not in self.preserve or key in self.written or not path.is_file() or self.owns(key):
            return
        digest = digest_of(path)
        kept = path.with_name(f"{path.name.split('.')[0]}.kept-{digest[:12]}{''.join(path.suffixes)}")
        if not (kept.is_file() and digest_of(kept) == digest):
            with atomic_path(kept) as tmp:
                shutil.copyfile(path, tmp)
        self.kept.append((key, kept.name))

    def remove(self, key: str) -> None:
        """Delete one of this command's own earlier outputs (never anything else)."""
        if not self.owns(key):
            raise InputError(f"{key} was not written by `bbsard-audit {self.command}`; not deleting it",
                             file=str(self.root))
        path = self.root / key
        txn = self._transaction()
        with disk_errors(path):
            if txn is not None:
                txn.change(key, path, None, move=True)
            if os.path.lexists(path):
                _fault_point()
                _delete(path)
        self.manifest.pop(key, None)
        self.written.pop(key, None)
        self.removed.add(key)

    def move_into(self, src: Path, key: str) -> Path:
        """Rename a finished file or folder `src` onto `root/key` (an owned earlier one is replaced)."""
        target = self.root / key
        self.check(target)
        digest = digest_of(src)
        txn = self._transaction()
        with disk_errors(target):
            if txn is not None:
                txn.change(key, target, digest, move=target.is_dir() and not target.is_symlink())
            if target.is_dir() and not target.is_symlink():  # no transaction, or our own from this run
                _fault_point()
                _delete(target)
            _fault_point()
            os.replace(src, target)
        self.written[key] = digest
        self.removed.discard(key)
        return target

    def commit(self) -> None:
        """The commit point: what this command wrote becomes the folder's set, and is recorded."""
        records: dict[str, dict | None] = {k: None for k in self.removed}
        records.update({k: {"command": self.command, "sha256": d} for k, d in self.written.items()})
        if self.txn is not None:
            with disk_errors(self.root):
                self.txn.commit(records)
        elif records and self.root.is_dir():
            with folder_lock(self.root):
                _merge_manifest(self.root, records, self.root)

    def rollback(self) -> None:
        """Undo every change of this command: the folder holds its previous set again."""
        if self.txn is not None:
            self.txn.rollback()



def changed_since_written(path: str | os.PathLike) -> bool:
    """Under a guard: `path` exists but is not as this command last wrote it (edited, or foreign)."""
    guard = _GUARD.get()
    key = guard._key(Path(path)) if guard is not None and os.path.lexists(path) else None
    return key is not None and key not in guard.written and not guard.owns(key)


def _is_regular_or_dir(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


@contextlib.contextmanager
def guard_outputs(out: str | os.PathLike, *, command: str, inputs: Iterable[str | os.PathLike | None] = (),
                  names: Iterable[str] = (), folder: bool = True,
                  preserve: Iterable[str] = ()) -> Iterator[OutputGuard]:
    """Run a command's writes under output ownership, as one transaction (see the module docstring).

    `out` is a folder (`folder=True`) or one output file (its sidecar is a target too); `names` are
    the files the command will write there, checked before anything is written and claimed against a
    concurrent command; `inputs` are never written. Every atomic write inside the block is checked
    again and journaled; on success they become the folder's set at once and are recorded in the
    manifest; on any failure (an exception, Ctrl-C) they are undone; after a kill, the next command
    or reader of the folder finishes the job (`settle`).
    """
    out = Path(out)
    if folder:
        if os.path.lexists(out) and not out.is_dir():
            raise InputError("--out must be a folder, but this is an existing file", file=str(out))
        root, targets = out, [out / n for n in names]
    else:
        if out.is_dir():
            raise InputError("--out must be a file, but this is a folder", file=str(out))
        root, targets = out.parent, [out, sidecar_path(out), *(out.parent / n for n in names)]
    guard = OutputGuard(root, command, inputs, preserve=preserve)
    claims = [k for k in map(guard._key, targets) if k is not None]
    refuse_concurrent(root, claims)  # first: a live writer's half-written files are not "changed"
    for target in targets:
        guard.check(target)
    guard.begin(claims)
    token = _GUARD.set(guard)
    try:
        yield guard
    except BaseException as exc:
        _GUARD.reset(token)
        if _success(exc):
            guard.commit()
        else:
            guard.rollback()
        raise
    else:
        _GUARD.reset(token)
        guard.commit()


def _success(exc: BaseException) -> bool:
    """A clean exit raised as an exception (`typer.Exit()`, `sys.exit(0)`) still commits."""
    if isinstance(exc, SystemExit):
        return exc.code in (0, None)
    return type(exc).__name__ == "Exit" and getattr(exc, "exit_code", 1) == 0


# ---------------------------------------------------------------- transactions (crash consistency)
#
# A command's changes to one folder form a transaction, kept in `<folder>/.bbsard-audit-txn-*/`:
# `journal.jsonl` (a header naming command, pid and claimed outputs, then one line written *before*
# each change: the name and the sha256 of its new content, on its first change also where its
# previous version is kept; or a folder created), the previous versions (hard links, or the renamed
# folder), and the temp files.
# The command holds an flock on that folder while it lives. `committed.json` (written atomically,
# the commit point) lists the manifest records of the new set. A dead transaction (its flock is
# free) is settled by the next command or reader: committed -> its records are merged into the
# manifest (roll forward); not committed -> every name goes back to its previous version (roll
# back), unless someone changed it since. Then the transaction folder is deleted.

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


def _fault_point() -> None:
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


def _scratch(key: str) -> bool:
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


def _read_manifest(root: Path) -> dict[str, dict]:
    path = root / MANIFEST
    if not path.is_file():
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")).get("files", {}))
    except (ValueError, AttributeError, UnicodeDecodeError):
        raise InputError(f"{MANIFEST} is not valid JSON: move it away only if the folder holds "
                         "nothing you need", file=str(root)) from None


def _write_json_atomic(path: Path, obj: Any, tmp_dir: Path) -> None:
    _fault_point()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=tmp_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
        os.chmod(tmp, 0o666 & ~_UMASK)
        _fault_point()
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _merge_manifest(root: Path, records: dict[str, dict | None], tmp_dir: Path) -> None:
    """Apply `records` (None: removed) to the manifest as it is now (call under `folder_lock`)."""
    if not records:
        return
    files = _read_manifest(root)
    for key, entry in records.items():
        if entry is None:
            files.pop(key, None)
        else:
            files[key] = entry
    _write_json_atomic(root / MANIFEST, {"tool": "bbsard-audit", "files": dict(sorted(files.items()))}, tmp_dir)


def _delete(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def _digest_or_none(path: Path) -> str | None:
    try:
        return digest_of(path) if _is_regular_or_dir(path) else None
    except OSError:
        return None


class _Transaction:
    """One command's journaled changes to one folder (see the comment above)."""

    def __init__(self, root: Path, command: str, claims: Iterable[str], *, created_root: bool) -> None:
        self.root, self.command, self.created_root = root, command, created_root
        self.claims = set(claims)
        self.touched: set[str] = set()
        with folder_lock(root):
            settle(root, locked=True)
            self._refuse_conflicts(self.claims)
            _fault_point()
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
        _fault_point()
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
        _fault_point()
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
                _merge_manifest(self.root, records, self.dir)
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
    _fault_point()
    os.rename(txn_dir, done)
    _fault_point()
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
        current = _digest_or_none(path)
        ours = current is not None and current in new.get(key, ())
        if current is not None and not ours:
            continue  # the previous version still (its change never happened), or someone else's since
        kept = txn_dir / backup if backup else None
        if ours and (path.is_dir() or kept is None or kept.is_dir()):
            _fault_point()
            _delete(path)
        if kept is not None and os.path.lexists(kept):
            _fault_point()
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
                _merge_manifest(root, json.loads(committed.read_text(encoding="utf-8"))["files"], txn.path)
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
