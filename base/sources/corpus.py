"""What a source gives the corpus audit: a `CorpusPair` of two `CorpusSide`s whose records stream one
checked document at a time (never the whole corpus in memory), and the checks every format's records
share. A format's own reader lives in its source module and is declared with its `side(...)`
(beir_folder, hf_beir) or its `source(...)` (bsard_csv, sample, manifest)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InputError
from ..io import file_problem
from ..languages import LanguagePair
from ..untrusted import load_json, text_problem
from .beir import document_text
from .checker import revision_of

_ID_PREFIX = re.compile(rb'"_id"\s*:\s*"?([^",}]{1,80})')

Record = tuple[int, str, str, str]
"""(line, id, title, document) of one document, as a side's reader yields it: the document is its title
and its text (`document_text`, as the question audit's loader reads them), so the checks see a preface
or mojibake in a title, and a title-only document is not empty; spans index the document."""


@dataclass(frozen=True)
class CorpusSide:
    label: str
    """How messages name the file (its path, or hf:NAME/corpus/corpus)."""
    lang: str
    records: Callable[[], Iterator[Record]]
    nbytes: int


@dataclass(frozen=True)
class CorpusPair:
    """A source corpus and its translation, opened (files found and hashed), not yet read."""

    source: str
    """The dataset as outputs name it: a manifest's file name, `sample`, a folder's name or hf:NAME."""
    pair: LanguagePair
    sides: tuple[CorpusSide, CorpusSide]
    files: dict[str, str] = field(default_factory=dict)
    """provenance name -> sha256 (or an HF revision)"""

    @property
    def revision(self) -> str:
        return revision_of(self.files)


def check_file(path: Path) -> None:
    problem = file_problem(path)
    if problem is not None:
        raise InputError(f"corpus file {problem}", file=str(path))


def too_long(n: int | str, max_doc_chars: int) -> str:
    return f"document of {n} characters is longer than --max-doc-chars {max_doc_chars:,}; refused"


def jsonl_side(path: Path, lang: str, max_doc_chars: int) -> CorpusSide:
    check_file(path)
    return CorpusSide(str(path), lang, lambda: jsonl_records(path, max_doc_chars), path.stat().st_size)


def jsonl_records(path: Path, max_doc_chars: int) -> Iterator[Record]:
    """BEIR `corpus.jsonl` lines ({_id, title?, text}); a line longer than the limit allows is refused
    after reading at most that many bytes (its id read from its first bytes), never parsed."""
    label, cap = str(path), max_doc_chars * 6 + 65536  # a character is at most 6 bytes of JSON (\\uXXXX)
    with open(path, "rb") as f:
        line = 0
        while raw := f.readline(cap):
            line += 1
            if len(raw) == cap and not raw.endswith(b"\n"):
                found = _ID_PREFIX.search(raw[:4096])
                raise InputError(too_long(f"over {cap:,} bytes,", max_doc_chars), file=label, row=line,
                                 id=found.group(1).decode("utf-8", "replace") if found else None)
            if not raw.strip():
                continue
            try:
                obj = load_json(raw)
            except ValueError as exc:
                raise InputError(f"not a JSON line ({getattr(exc, 'msg', None) or getattr(exc, 'reason', None) or exc})", file=label,
                                 row=line) from None
            if not isinstance(obj, dict):
                raise InputError(f"a line must be a JSON object, not {type(obj).__name__}", file=label, row=line)
            yield record(obj, label, line, max_doc_chars)


def record(obj, label: str, line: int, max_doc_chars: int) -> Record:
    """(line, id, title, text) of one document object, checked."""
    doc_id = obj.get("_id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise InputError("missing _id (a non-empty string or integer)", file=label, row=line)
    text, title = obj.get("text"), obj.get("title") or ""
    if not isinstance(text, str):
        raise InputError("missing text (a string)" if text is None else
                         f"text must be a string, not {type(text).__name__}", file=label, row=line, id=doc_id)
    if not isinstance(title, str):
        raise InputError(f"title must be a string, not {type(title).__name__}", file=label, row=line, id=doc_id)
    if len(text) + len(title) > max_doc_chars:
        raise InputError(too_long(f"{len(text) + len(title):,}", max_doc_chars), file=label, row=line, id=doc_id)
    for what, value in (("_id", doc_id), ("title", title), ("text", text)):
        problem = text_problem(value)
        if problem:
            raise InputError(f"{what} {problem}", file=label, row=line,
                             id=None if what == "_id" else doc_id)
    return line, doc_id, title, document_text(title, text)
