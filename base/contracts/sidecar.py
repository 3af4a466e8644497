"""`.meta.json` provenance sidecars, read strictly (an object with the tool's keys). They are written
by the one `bbsard_audit.base.io.write_sidecar` (its `files=` records each described file's rows and sha256)."""

from __future__ import annotations

from pathlib import Path

from bbsard_audit.base.errors import InputError

from .jsonfile import read_json

REQUIRED = ("output", "tool", "tool_version", "created")


def read_sidecar(path: str | Path) -> dict:
    """A sidecar as a dict; not an object, or without the keys every sidecar has -> InputError."""
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
