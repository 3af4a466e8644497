"""Atomic file output, JSON provenance sidecars and output ownership shared by every stage.

Ownership: a command writes under `guard_outputs(...)`, which refuses (one line, before anything is
written) an `--out` that is an input or the wrong kind of path, and any existing file the command did
not write itself. What it writes is recorded, with its sha256, in the folder's `MANIFEST`, so a rerun
may replace (or `release` delete) exactly its own earlier outputs and nothing else.
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

from . import __version__
from .errors import InputError

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path in the target's folder; rename it onto `path` only on success."""
    path = Path(path)
    guard = _GUARD.get()
    if guard is not None:
        guard.check(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.is_file():  # mkstemp makes 0600; outputs are for sharing, so honour the umask
            os.chmod(tmp_path, 0o666 & ~_UMASK)
        digest = digest_of(tmp_path) if guard is not None else ""
        os.replace(tmp_path, path)
        if guard is not None:
            guard.record(path, digest)
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
    """What one command may write, replace and delete in one output folder."""

    def __init__(self, root: Path, command: str, inputs: Iterable[str | os.PathLike | None] = ()) -> None:
        self.root, self.command = Path(root), command
        self.real_root = Path(os.path.realpath(self.root))
        self.inputs = tuple(Path(p) for p in inputs if p is not None)
        self.written: dict[str, str] = {}
        self.manifest: dict[str, dict] = {}
        path = self.root / MANIFEST
        if path.is_file():
            try:
                self.manifest = dict(json.loads(path.read_text(encoding="utf-8")).get("files", {}))
            except (ValueError, AttributeError, UnicodeDecodeError):
                raise InputError(f"{MANIFEST} is not valid JSON: move it away only if the folder holds "
                                 "nothing you need", file=str(self.root)) from None

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
        if key is None or key in self.written or not os.path.lexists(path):
            return
        if self.owns(key):
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
        if key is not None:
            self.written[key] = digest or digest_of(path)

    def previous(self) -> list[str]:
        """Top-level names this command wrote here before (and still owns)."""
        return sorted(k for k, e in self.manifest.items()
                      if e.get("command") == self.command and "/" not in k and self.owns(k))

    def remove(self, key: str) -> None:
        """Delete one of this command's own earlier outputs (never anything else)."""
        if not self.owns(key):
            raise InputError(f"{key} was not written by `bbsard-audit {self.command}`; not deleting it",
                             file=str(self.root))
        path = self.root / key
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        self.manifest.pop(key, None)

    def move_into(self, src: Path, key: str) -> Path:
        """Rename a finished file or folder `src` onto `root/key` (an owned earlier one is replaced)."""
        target = self.root / key
        self.check(target)
        digest = digest_of(src)
        if target.is_dir() and not target.is_symlink():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(src, target)
            shutil.rmtree(old)
        else:
            os.replace(src, target)
        self.written[key] = digest
        return target

    def save(self) -> None:
        """Record what this command wrote (also after a failure: those files are its own)."""
        if not self.written or not self.root.is_dir():
            return
        files = dict(self.manifest)
        files.update({k: {"command": self.command, "sha256": d} for k, d in self.written.items()})
        path = self.root / MANIFEST
        fd, tmp = tempfile.mkstemp(prefix=f".{MANIFEST}.", suffix=".tmp", dir=self.root)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"tool": "bbsard-audit", "files": dict(sorted(files.items()))}, f, indent=1)
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)


def _is_regular_or_dir(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def refuse_out_under_a_file(out: str | os.PathLike) -> None:
    """`--out some_file.csv/sub`: one line now, not a NotADirectoryError once the command has worked."""
    for parent in Path(out).parents:
        if os.path.lexists(parent) and not parent.is_dir():
            raise InputError(f"--out lies under {parent}, which is a file, not a folder", file=str(out))


@contextlib.contextmanager
def guard_outputs(out: str | os.PathLike, *, command: str, inputs: Iterable[str | os.PathLike | None] = (),
                  names: Iterable[str] = (), folder: bool = True) -> Iterator[OutputGuard]:
    """Run a command's writes under output ownership (see the module docstring).

    `out` is a folder (`folder=True`) or one output file (its sidecar is a target too); `names` are
    the files the command will write there, checked before anything is written; `inputs` are never
    written. Every atomic write inside the block is checked again and recorded in the manifest.
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
    guard = OutputGuard(root, command, inputs)
    for target in targets:
        guard.check(target)
    token = _GUARD.set(guard)
    try:
        yield guard
    finally:
        _GUARD.reset(token)
        guard.save()
