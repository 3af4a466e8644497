"""Atomic file output and JSON provenance sidecars shared by every stage."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import platform
import tempfile
from pathlib import Path
from typing import Any, Iterator

from . import __version__

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path in the target's folder; rename it onto `path` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.is_file():  # mkstemp makes 0600; outputs are for sharing, so honour the umask
            os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


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
    """Record how an output was made (tool version, time, platform, plus the caller's fields)."""
    record = {
        "output": Path(output).name,
        "tool": "bbsard-audit",
        "tool_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        **fields,
    }
    return write_json(sidecar_path(output), record)
