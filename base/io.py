"""Atomic file output, JSON provenance sidecars and output ownership shared by every stage.

Ownership: a command writes under `guard_outputs(...)`, which refuses (one line, before anything is
written) an `--out` that is an input or the wrong kind of path, and any existing file the command did
not write itself. What it writes is recorded, with its sha256, in the folder's `MANIFEST`, so a rerun
may replace (or `release` delete) exactly its own earlier outputs and nothing else.

Crash consistency: the writes of one command in one folder are one transaction
(`bbsard_audit.base.transactions`), so a command killed at any instant leaves the complete previous set
or, once committed, the complete new set; the next command or reader of the folder (`settle`)
finishes the job. Manifest updates are merged under an flock on the folder.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import errno
import hashlib
import json
import math
import os
import platform
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from bbsard_audit import __version__
from .csvcells import to_safe_csv
from .errors import InputError
from .transactions import MANIFEST  # noqa: F401 - the manifest's name stays part of io's API
from .transactions import (UMASK, Transaction, delete_path, digest_of, digest_or_none, disk_errors, fault_point,
                           folder_lock, is_regular_or_dir, is_scratch, merge_manifest, read_manifest, refuse_concurrent, settle)

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
        fault_point()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=txn.dir if txn else path.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            yield tmp_path
            if tmp_path.is_file():  # mkstemp makes 0600; outputs are for sharing, so honour the umask
                os.chmod(tmp_path, 0o666 & ~UMASK)
            if guard is None:
                fault_point()
                os.replace(tmp_path, path)
            else:
                guard.place(tmp_path, path)
            (_READS.get() or {}).pop(os.path.realpath(path), None)  # this command's own new version
        finally:
            if tmp_path.exists():
                tmp_path.unlink()


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


def write_csv(path: str | os.PathLike, frame, *, verbatim: bool = False) -> Path:
    """Write a pandas DataFrame as UTF-8 CSV, atomically, its cells spreadsheet-safe (`csvcells`: the
    sidecar's file record says `SAFE_CELLS`, and `contracts.table` reads the texts back). `verbatim`:
    a dataset file (a release's questions) that loaders read as the benchmark's text, kept as it is."""
    with atomic_path(path) as tmp:
        if verbatim:
            frame.to_csv(tmp, index=False)
        else:
            to_safe_csv(frame, tmp)
    return Path(path)


def sidecar_path(output: str | os.PathLike) -> Path:
    """`audit.csv` -> `audit.meta.json`: the provenance record next to an output."""
    output = Path(output)
    return output.with_name(output.name.split(".")[0] + ".meta.json")


def write_sidecar(output: str | os.PathLike, *, files: Iterable[Any] = (), **fields: Any) -> Path:
    """Record how an output was made (tool version, time, platform, plus the caller's fields); every
    local path among the fields is recorded as `file_ref` (name + sha256), so the sidecar can be shared.
    `files` are the `contracts.table.FileRecord`s of the files described (name -> rows, sha256), the
    record `_vouched` and `contracts.sidecar.read_sidecar` read back."""
    files = list(files)
    if files:
        fields["files"] = {r.name: r.to_dict() for r in files}
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


_READS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("bbsard_reads", default=None)


@contextlib.contextmanager
def reads_scope() -> Iterator[None]:
    """One command run: the sha256 of every input its contracts read (`remember_read`) is kept, so
    that `file_ref` never names by its new content an input that changed after it was read."""
    token = _READS.set({})
    try:
        yield
    finally:
        _READS.reset(token)


def remember_read(path: str | os.PathLike, data: bytes) -> None:
    """Inside a `reads_scope`: `path` was read as `data`; read before as other bytes, one line."""
    reads = _READS.get()
    if reads is None:
        return
    key, digest = os.path.realpath(path), hashlib.sha256(data).hexdigest()
    if reads.setdefault(key, digest) != digest:  # two readers of one command would see two versions
        raise _changed(path, reads[key], f"then as {digest[:12]}")


def digest_as_read(path: str | os.PathLike) -> str:
    """sha256 of `path` as this command read it (`remember_read`), else of its content now: what a
    provenance record names is what was parsed, even when the file changed since."""
    return (_READS.get() or {}).get(os.path.realpath(path)) or digest_of(Path(path))


def file_ref(path: str | os.PathLike) -> dict:
    """A file or folder named by content, never by where it lies: `{name, sha256}` (sha256 null when
    it cannot be read; a folder's digest covers every file in it, see `digest_of`). An input this
    command read and that changed since is one line (the outputs would name content never read)."""
    path = Path(path)
    digest = digest_or_none(path)
    read = (_READS.get() or {}).get(os.path.realpath(path))
    if read is not None and digest != read:
        raise _changed(path, read, f"now {digest[:12] if digest else 'gone'}")
    return {"name": path.name, "sha256": digest}


def _changed(path: str | os.PathLike, read: str, now: str) -> InputError:
    """The one line for an input that changed while the command ran (read as `read`, `now` what it is)."""
    return InputError(f"changed while this command ran (read as sha256 {read[:12]}, {now}); nothing written: "
                      "run it again", file=str(path))


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

DEMO = "demo"
"""Files the demo wrote are sample illustrations: any command may replace them."""
REGENERATED = ("report",)
"""Commands whose outputs only re-render the folder: the demo may replace them (demo -> report -> demo)."""
_GUARD: contextvars.ContextVar["OutputGuard | None"] = contextvars.ContextVar("bbsard_output_guard", default=None)


def _same(a: Path, b: Path) -> bool:
    if os.path.abspath(a) == os.path.abspath(b) or os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _vouched(path: Path, rewritten: frozenset[Path] = frozenset()) -> bool:
    """An unchanged output of a bbsard-audit that kept no manifest in its folder (an older version):
    its sidecar records the file's sha256, and it still has it; a sidecar is vouched for when every
    file it records is (or is gone, or was just `rewritten` by this command). Such a file holds
    nothing a rerun cannot make again."""
    meta = path if path.name.endswith(".meta.json") else sidecar_path(path)
    try:
        if meta.stat().st_size > 1 << 20:
            return False
        record = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    files = record.get("files") if isinstance(record, dict) and record.get("tool") == "bbsard-audit" else None
    if not isinstance(files, dict) or not files:
        return False
    if path != meta:
        return _recorded_unchanged(path, files)
    return all(meta.with_name(name) in rewritten or not os.path.lexists(meta.with_name(name))
               or _recorded_unchanged(meta.with_name(name), files) for name in files)


def _recorded_unchanged(path: Path, files: dict) -> bool:
    """`path` is a regular file whose sha256 is the one its sidecar's `files` records."""
    entry = files.get(path.name)
    return (isinstance(entry, dict) and is_regular_or_dir(path) and not path.is_dir()
            and entry.get("sha256") == digest_of(path))


class OutputGuard:
    """What one command may write, replace and delete in one output folder.

    `preserve`: names whose version changed by someone else is not refused but kept under a new name
    the command owns (`<stem>.kept-<sha256[:12]><suffix>`, listed in `kept`) before being replaced
    (pull's annotations_raw.csv: the only copy of annotations must never be lost nor block a pull).
    `adopt`: name -> sha256 of files the command read, validated and carries over into what it writes
    (a campaign folder, maybe written by an older push without a manifest, or edited and still valid):
    replaced while they still have that content.
    """

    def __init__(self, root: Path, command: str, inputs: Iterable[str | os.PathLike | None] = (),
                 preserve: Iterable[str] = (), adopt: dict[str, str] | None = None) -> None:
        self.root, self.command = Path(root), command
        self.real_root = Path(os.path.realpath(self.root))
        self.inputs = tuple(Path(p) for p in inputs if p is not None)
        self.preserve = frozenset(preserve)
        self.adopt = dict(adopt or {})
        self.written: dict[str, str] = {}
        self.removed: set[str] = set()
        self.kept: list[tuple[str, str]] = []
        self.txn: Transaction | None = None
        self.claims: list[str] = []
        self.transactional = False  # set by begin(): guard_outputs, not a bare OutputGuard
        settle(self.root)
        self.manifest, self._seen = read_manifest(self.root), self._manifest_stamp()

    def _manifest_stamp(self) -> tuple | None:
        try:
            st = os.stat(self.root / MANIFEST)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def _refresh(self) -> bool:
        """Re-read the manifest when another command committed since we read it (say whether it
        changed): what it wrote meanwhile is theirs, never an unrecorded file this command may replace."""
        stamp = self._manifest_stamp()
        if stamp == self._seen:
            return False
        self.manifest, self._seen = read_manifest(self.root), stamp
        return True

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
                and is_regular_or_dir(path) and digest_of(path) == entry.get("sha256"))

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
        if key is None:
            self._refuse_escape(path)
        if key is None or is_scratch(key) or key in self.written or not os.path.lexists(path):
            return
        self._refresh()
        if key in self.preserve or self.owns(key):
            return
        if key in self.adopt and is_regular_or_dir(path) and digest_of(path) == self.adopt[key]:
            return
        entry = self.manifest.get(key)
        if entry is None and _vouched(self.root / key, frozenset(self.root / k for k in self.written)):
            return
        if entry is None:
            why = "was not written by bbsard-audit"
        elif not self._may_replace(entry.get("command")):
            why = f"was written by `bbsard-audit {entry.get('command')}`"
        else:
            why = f"was changed since `bbsard-audit {self.command}` wrote it"
        raise InputError(f"{key} exists and {why}: `bbsard-audit {self.command}` never replaces it; "
                         "move it away or choose another --out", file=str(self.root))

    def _refuse_escape(self, path: Path) -> None:
        """A path inside the folder by name whose real place is outside it: some part of it is a
        symlink that leaves the folder, and writing through it would replace someone's files there."""
        try:
            parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(self.root)).parts
        except ValueError:
            return  # outside the folder by name too (a cache): not this folder's business
        link = self.root
        for part in parts:
            link = link / part
            if link.is_symlink() and self._key(link / "x") is None:
                raise InputError(f"{link.relative_to(self.root).as_posix()} is a symlink that leads out of the "
                                 f"output folder: `bbsard-audit {self.command}` never writes through it; "
                                 "remove the link or choose another --out", file=str(self.root))

    def record(self, path: Path, digest: str | None = None) -> None:
        key = self._key(path)
        if key is not None and not is_scratch(key):
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

    def _transaction(self) -> "Transaction | None":
        if self.txn is None and self.transactional:
            with disk_errors(self.root):
                created = not self.root.exists()
                self.root.mkdir(parents=True, exist_ok=True)
                self.txn = Transaction(self.root, self.command, self.claims, created_root=created)
        return self.txn

    def transaction_for(self, path: Path) -> "Transaction | None":
        """Check `path` and say which transaction journals its write (None: a plain atomic write)."""
        self.check(path)
        key = self._key(path)
        return None if key is None or is_scratch(key) else self._transaction()

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
        with folder_lock(self.root) if self.txn is not None else contextlib.nullcontext():
            if key is not None and not is_scratch(key) and self.txn is not None:
                if self._refresh():  # compare-and-swap: a command that committed `path` since our check wins
                    self.check(path)
                self._keep_foreign(key, path)
                self.txn.change(key, path, digest)
            fault_point()
            os.replace(src, path)
        self.record(path, digest)

    def _keep_foreign(self, key: str, path: Path) -> None:
        """A `preserve` name someone else changed: copy their version to a name of our own first."""
        if key not in self.preserve or key in self.written or not path.is_file():
            return
        digest = digest_of(path)
        entry = self.manifest.get(key)
        if entry is not None and self._may_replace(entry.get("command")) and entry.get("sha256") == digest:
            return  # our own, unchanged (`owns`, without hashing the file twice)
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
                fault_point()
                delete_path(path)
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
                fault_point()
                delete_path(target)
            fault_point()
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
                merge_manifest(self.root, records, self.root)

    def rollback(self) -> None:
        """Undo every change of this command: the folder holds its previous set again."""
        if self.txn is not None:
            self.txn.rollback()



def changed_since_written(path: str | os.PathLike) -> bool:
    """Under a guard: `path` exists but is not as this command last wrote it (edited, or foreign)."""
    guard = _GUARD.get()
    key = guard._key(Path(path)) if guard is not None and os.path.lexists(path) else None
    return key is not None and key not in guard.written and not guard.owns(key)


def refuse_out_under_a_file(out: str | os.PathLike) -> None:
    """`--out some_file.csv/sub`: one line now, not a NotADirectoryError once the command has worked."""
    for parent in Path(out).parents:
        if os.path.lexists(parent) and not parent.is_dir():
            raise InputError(f"--out lies under {parent}, which is a file, not a folder", file=str(out))


@contextlib.contextmanager
def guard_outputs(out: str | os.PathLike, *, command: str, inputs: Iterable[str | os.PathLike | None] = (),
                  names: Iterable[str] = (), folder: bool = True, preserve: Iterable[str] = (),
                  adopt: dict[str, str] | None = None) -> Iterator[OutputGuard]:
    """Run a command's writes under output ownership, as one transaction (see the module docstring).

    `out` is a folder (`folder=True`) or one output file (its sidecar is a target too); `names` are
    the files the command will write there, checked before anything is written and claimed against a
    concurrent command; `inputs` are never written. Every atomic write inside the block is checked
    again and journaled; on success they become the folder's set at once and are recorded in the
    manifest; on any failure (an exception, Ctrl-C) they are undone; after a kill, the next command
    or reader of the folder finishes the job (`settle`).
    """
    out = Path(out)
    refuse_out_under_a_file(out)
    if folder:
        if os.path.lexists(out) and not out.is_dir():
            raise InputError("--out must be a folder, but this is an existing file", file=str(out))
        root, targets = out, [out / n for n in names]
    else:
        if out.is_dir():
            raise InputError("--out must be a file, but this is a folder", file=str(out))
        root, targets = out.parent, [out, sidecar_path(out), *(out.parent / n for n in names)]
    guard = OutputGuard(root, command, inputs, preserve=preserve, adopt=adopt)
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
