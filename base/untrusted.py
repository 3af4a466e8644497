"""Where outside text enters: one Unicode normal form, what the checks match on, and one bounded YAML reader.

`nfc`: every text that enters (dataset, Label Studio exports, glossaries) is stored in Unicode NFC,
so a question typed with decomposed accents (NFD, as some tools export) matches, flags and scores
exactly like the composed one; offsets always index the stored NFC text.

`visible`: the text without invisible format characters, which the checks match on (tokens keep
their offsets into the stored text, so evidence still quotes it as it is).

`load_yaml`: config, glossary, learned-rule and word-list files are data, never programs: a file
over `MAX_YAML_BYTES`, nested deeper than `MAX_YAML_DEPTH`, or holding an alias (`*name`, the
"billion laughs" expansion) is refused as one line before anything is built from it; so is a key
written twice in one mapping (YAML libraries keep the last value without a word).

`load_json`: JSON from outside, failing only with ValueError (never a RecursionError traceback).
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from .errors import InputError
from .io import file_problem

MAX_YAML_BYTES = 16 * 2**20
"""The shipped glossary is 80 kB; a learned one grows by a few hundred bytes per rule."""
MAX_YAML_DEPTH = 32
"""Our files nest 4 levels; a deeper one is hostile (or would overflow Python's recursion)."""


def nfc(text: str) -> str:
    """`text` in Unicode NFC (the form every stored text has)."""
    return unicodedata.normalize("NFC", text) if not text.isascii() else text


INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
             "\u2066-\u206f\ufe00-\ufe0f\ufeff")
"""A regex class body: the format characters that show as nothing (soft hyphen, zero-width space /
(non-)joiner, word joiner, bidi marks and embeddings, variation selectors, BOM...)."""
_INVISIBLE = re.compile(f"[{INVISIBLE}]")


def visible(text: str) -> str:
    """`text` without its invisible format characters: what the checks match on (a soft hyphen inside
    "verhuurder" must not split it into "ver" + "huurder"). The stored and shown text keeps them."""
    return text if text.isascii() else _INVISIBLE.sub("", text)


def nfc_data(value: Any) -> Any:
    """Every string (mapping keys too) of plain loaded data in NFC."""
    if isinstance(value, str):
        return nfc(value)
    if isinstance(value, dict):
        return {nfc_data(k): nfc_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nfc_data(v) for v in value]
    return value


def text_lines(text: str) -> list[str]:
    r"""The lines of a text file as its line ends delimit them (`\n`, `\r\n`). Not `str.splitlines()`,
    which also splits at U+2028, U+0085, form feeds and other characters a JSON string may hold as
    they are: a valid JSON line would be cut in two and every later line misnumbered."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def decode_utf8(data: bytes, label: str, what: str = "", encoding: str = "utf-8") -> str:
    """`data` decoded; a Latin-1 (or other non-UTF-8) byte is one line naming the file and its row."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}not valid UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r}; saved as "
                         "Latin-1 or Windows-1252? save it as UTF-8)", file=label,
                         row=data.count(b"\n", 0, exc.start) + 1) from None


def load_json(text: str, **hooks: Any) -> Any:
    """`json.loads(text, **hooks)` for text from outside: every way it can fail is a ValueError, also
    an array nested thousands deep (Python's parser raises RecursionError) and an integer of more
    than 4,300 digits, so a reader's one-line error covers them."""
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise ValueError("nested too deeply") from None


_UNWRITABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    r"""Why `text` cannot be a question or document text, or None: a NUL character (JSON's escaped
    `\u0000`: no CSV reader, ours included, takes it back) or a lone surrogate (JSON's `\ud800`: not
    a character, no UTF-8 writer can write it)."""
    found = _UNWRITABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return f"holds a NUL character (\\u0000) at character {found.start()}"
    return f"holds a lone surrogate (\\u{ord(found.group()):04x}) at character {found.start()}, not a character"


def load_yaml(path: str | Path, what: str = "YAML file", *, data: bytes | None = None,
              unreadable: str | None = None) -> Any:
    """The plain data (mappings, lists, scalars) of a YAML file; InputError (one line) when it is
    missing, unreadable, too big, too deep, holds an alias or does not parse. `data`: its bytes when
    the caller already read them (e.g. to hash them); `unreadable`: the message for a file that does
    not parse (default "not a readable YAML <what>")."""
    import yaml

    label, unreadable = str(path), unreadable or f"not a readable YAML {what}"
    if data is None:
        problem = file_problem(path)  # a FIFO would block the read forever
        if problem:
            raise InputError(f"{what} {problem}", file=label)
    size = len(data) if data is not None else Path(path).stat().st_size  # before reading a huge file
    if size > MAX_YAML_BYTES:
        raise InputError(f"{what} is {size:,} bytes, more than the {MAX_YAML_BYTES:,} allowed", file=label)
    try:
        data = data if data is not None else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{unreadable} ({exc})", file=label) from None
    text = decode_utf8(data, label, f"{unreadable}: ")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        open_nodes: list[dict | None] = []  # per open collection: a mapping's {key: line} and whether a key is next
        for event in yaml.parse(text, Loader=loader):  # the C parser: fast, builds nothing
            line = event.start_mark.line + 1 if event.start_mark else None
            if isinstance(event, yaml.AliasEvent):
                raise InputError(f"{what} uses a YAML alias (*{event.anchor}); aliases are not allowed in "
                                 "bbsard-audit files: write the value out", file=label, row=line)
            if isinstance(event, yaml.NodeEvent) and open_nodes and open_nodes[-1] is not None:
                parent = open_nodes[-1]  # a child of a mapping: keys and values alternate
                if parent["key_next"] and isinstance(event, yaml.ScalarEvent):
                    if event.value in parent["keys"]:  # PyYAML would keep the last value, silently
                        raise InputError(f"{what}: key {event.value!r} appears twice (first on line "
                                         f"{parent['keys'][event.value]}); write it once", file=label, row=line)
                    parent["keys"][event.value] = line
                parent["key_next"] = not parent["key_next"]
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                open_nodes.append({"keys": {}, "key_next": True} if isinstance(event, yaml.MappingStartEvent) else None)
                if len(open_nodes) > MAX_YAML_DEPTH:
                    raise InputError(f"{what} nests deeper than {MAX_YAML_DEPTH} levels", file=label, row=line)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                open_nodes.pop()
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise InputError(f"{unreadable} ({str(exc).splitlines()[0]})", file=label) from None
