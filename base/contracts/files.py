"""The two lowest pieces of the contracts: a file's sidecar record and the strict text read every reader
starts from. Below `table`, `jsonfile` and `sidecar` so that none of them imports another in a circle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import digest_of, file_problem, remember_read
from bbsard_audit.base.transactions import settled
from bbsard_audit.base.untrusted import decode_utf8


@dataclass(frozen=True)
class FileRecord:
    """What a writer records about one file in its sidecar: name, data rows and sha256."""

    name: str
    rows: int | None
    sha256: str
    cells: str | None = None
    """SAFE_CELLS for a CSV written with spreadsheet-safe cells."""

    def to_dict(self) -> dict:
        return {"rows": self.rows, "sha256": self.sha256, **({"cells": self.cells} if self.cells else {})}

    @classmethod
    def of(cls, path: Path, rows: int | None, cells: str | None = None) -> "FileRecord":
        return cls(path.name, rows, digest_of(path), cells)



def read_binary(path: Path) -> bytes:
    """A regular file's bytes: never a FIFO or a device; its folder settled first, so a killed writer's
    half-replaced set is never read as one."""
    problem = file_problem(settled(path))
    if problem:
        raise InputError(problem, file=str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", file=str(path)) from None
    remember_read(path, data)
    return data


def read_bytes(path: Path) -> bytes:
    """A text file's bytes (`read_binary`): a NUL byte, which no text holds, is one line naming its row."""
    data = read_binary(path)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError("contains a NUL byte", file=str(path), row=data.count(b"\n", 0, nul) + 1)
    return data


def decode(data: bytes, path: Path) -> str:
    """`data` as UTF-8 text (BOM dropped); a Latin-1 or other non-UTF-8 byte is one line naming its row."""
    return decode_utf8(data, str(path), encoding="utf-8-sig")


def read_text(path: Path) -> str:
    """A regular UTF-8 file's text (BOM dropped), read through `read_bytes`."""
    return decode(read_bytes(path), path)
