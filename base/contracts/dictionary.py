"""Bilingual dictionaries in the dictd format (FreeDict, as Debian's `dict-freedict-*` packages install
them: `freedict-eng-deu.index` + `freedict-eng-deu.dict.dz`), read strictly: the lexical check's
only resource file. The audit never writes one (their licences are the packages' own; nothing of
them is copied into the repository or an output).

The index holds one line per entry, `headword TAB offset TAB length` (dictd's base64 digits); the
data file (gzip/dictzip) holds each entry's text: a header line (headword, /pronunciation/, <pos>),
then its translations, one line of comma-separated phrases each (grammar in <...>, domains in
[...], an optional "1." numbering), and indented notes, examples and cross-references, which are
not translations. A truncated, unreadable or differently formatted file is one InputError naming it.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from bbsard_audit.base.errors import InputError

from .files import read_binary, read_bytes

B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\([^)]*\)")
_NUMBERED = re.compile(r"^\s*\d+\.\s*")
_LINE = re.compile(r"([^\t]*)\t([A-Za-z0-9+/]+)\t([A-Za-z0-9+/]+)")


def _number(digits: str) -> int:
    value = 0
    for c in digits:
        value = value * 64 + B64[c]
    return value


@dataclass(frozen=True)
class Dictionary:
    """headword (lower-cased) -> its translation phrases, from one dictd dictionary."""

    entries: Mapping[str, tuple[str, ...]]
    name: str
    """The file's name without extension ('freedict-eng-deu'): the shareable name, never a path."""
    sha256: str
    """Of the index file (the data file is addressed by it)."""


def translations(entry: str) -> list[str]:
    """The translation phrases of one entry's text (header, notes, examples, see-also left out)."""
    out = []
    for line in entry.split("\n")[1:]:
        if not line.strip() or line[:1].isspace():
            continue  # notes, examples, synonyms and "see:" are indented
        for phrase in _MARKUP.sub(" ", _NUMBERED.sub("", line)).replace(";", ",").split(","):
            phrase = " ".join(phrase.split())
            if phrase:
                out.append(phrase)
    return out


def read_dictionary(index: str | Path) -> Dictionary:
    """A dictd dictionary from its `.index` file; the data is `<same name>.dict.dz` (or `.dict`)."""
    index = Path(index)
    stem = index.name.removesuffix(".index")
    data_path = next((p for p in (index.with_name(stem + ".dict.dz"), index.with_name(stem + ".dict")) if p.exists()),
                     index.with_name(stem + ".dict.dz"))
    raw_index, blob = read_bytes(index), read_binary(data_path)  # a FIFO or a folder is one line, never waited on
    try:
        data = gzip.decompress(blob) if data_path.suffix == ".dz" else blob
    except (OSError, EOFError, zlib.error):
        raise InputError("not a complete gzip/dictzip dictd data file (truncated or another format)",
                         file=str(data_path)) from None
    entries: dict[str, list[str]] = {}
    try:
        lines = raw_index.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise InputError("not a dictd index (not UTF-8 text)", file=str(index)) from None
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError("not a dictd index (empty)", file=str(index))
    for row, line in enumerate(lines, 1):
        match = _LINE.fullmatch(line)
        if match is None:
            raise InputError("not a dictd index line (headword TAB offset TAB length)", file=str(index), row=row)
        fields = match.groups()
        start, length = _number(fields[1]), _number(fields[2])
        if start + length > len(data):
            raise InputError(f"entry {fields[0]!r} lies past the end of {data_path.name} (truncated)",
                             file=str(index), row=row)
        head = fields[0].strip().lower()
        if not head or head.startswith("00-database") or head.startswith("00database"):
            continue
        try:
            text = data[start:start + length].decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"entry {fields[0]!r} is not UTF-8 text", file=str(data_path)) from None
        entries.setdefault(head, []).extend(translations(text))
    return Dictionary({k: tuple(dict.fromkeys(v)) for k, v in entries.items()}, stem,
                      hashlib.sha256(raw_index).hexdigest())
