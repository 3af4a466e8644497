"""`.meta.json` provenance sidecars: written through `bbsard_audit.io.write_sidecar` with the row
count and sha256 of every file they describe, read strictly (an object with the tool's keys)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from bbsard_audit.errors import InputError
from bbsard_audit.io import write_sidecar as _write_sidecar

from .table import FileRecord

REQUIRED = ("output", "tool", "tool_version", "created")


def write_sidecar(output: str | os.PathLike, *, files: Sequence[FileRecord] = (), **fields: Any) -> Path:
    """The sidecar of `output`, recording `files` (name -> rows, sha256) besides the caller's fields."""
    if files:
        fields["files"] = {r.name: r.to_dict() for r in files}
    return _write_sidecar(output, **fields)


def read_sidecar(path: str | Path) -> dict:
    """A sidecar as a dict; not an object, or without the keys every sidecar has -> InputError."""
    from .jsonfile import read_json

    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("a sidecar must be a JSON object", file=str(path))
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise InputError(f"not a bbsard-audit sidecar: missing {', '.join(missing)}", file=str(path))
    files = data.get("files")
    if files is not None and not (isinstance(files, dict) and all(isinstance(v, dict) for v in files.values())):
        raise InputError("`files` must map file names to {rows, sha256}", file=str(path))
    return data
