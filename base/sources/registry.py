"""The registry of sources: each module of `bbsard_audit.base.sources` declares what it reads.

A `Source` recognises a `--dataset` string and loads it into a `Dataset`, and opens its corpus for
the corpus audit (`open_corpus`); a `SideReader` reads one language side of a manifest (`format` + a
folder or an HF id): its questions and qrels, and for the corpus audit its documents, streamed
(`SideReader.open_corpus`). Adding a source is adding one module that calls `source(...)` or
`side(...)`; the package imports every module, so no list names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import InputError
from .model import SAMPLE, Dataset


@dataclass(frozen=True)
class Source:
    name: str
    doc: str
    matches: Callable[[str], bool]
    load: Callable[[str, bool], Dataset]
    order: int
    corpus: Callable | None = None
    """corpus(src, max_doc_chars) -> corpus.CorpusPair: both sides' documents, opened, for the corpus audit."""


@dataclass(frozen=True)
class SideReader:
    format: str
    name: str
    doc: str
    matches: Callable[[str], bool]
    read: Callable
    """read(path, with_corpus, checker, prefix, revision=, qrels=) -> beir.Side; `prefix` (source or
    target) names the side's files in provenance."""
    order: int
    corpus: Callable | None = None
    """corpus(path, lang, max_doc_chars, revision) -> (corpus.CorpusSide, provenance name, sha256 or pin):
    the side's documents streamed for the corpus audit."""

    def open_corpus(self, path: str, lang: str, max_doc_chars: int, revision: str | None = None) -> tuple:
        """This side's streaming corpus reader (what `audit corpus` reads), opened: files found, not read."""
        if self.corpus is None:
            raise InputError(f"the {self.name} reader gives no corpus for the corpus audit", file=path)
        return self.corpus(path, lang, max_doc_chars, revision)


SOURCES: list[Source] = []
SIDES: list[SideReader] = []


def source(name: str, doc: str, *, matches: Callable[[str], bool], order: int = 50,
           corpus: Callable | None = None):
    """Declare a `--dataset` source: the decorated `load(src, with_corpus)` reads what `matches` accepts;
    `corpus` opens its documents for the corpus audit (Source.corpus). Lower `order` is asked first (a
    catch-all such as a CSV folder comes last)."""
    def declare(load):
        SOURCES.append(Source(name, doc, matches, load, order, corpus))
        SOURCES.sort(key=lambda s: s.order)
        return load
    return declare


def side(format: str, name: str, doc: str, *, matches: Callable[[str], bool], order: int = 50,
         corpus: Callable | None = None):
    """Declare a reader of one manifest side of `format` at a path `matches` accepts; `corpus` streams
    its documents for the corpus audit (SideReader.corpus)."""
    def declare(read):
        SIDES.append(SideReader(format, name, doc, matches, read, order, corpus))
        SIDES.sort(key=lambda s: s.order)
        return read
    return declare


def load_dataset(src: str = SAMPLE, *, strict: bool = True, with_corpus: bool = True) -> Dataset:
    """Load any registered source (`sample`, a CSV folder, `hf:NAME[@REV]`, a manifest).

    With `strict`, the first error raises `InputError`; otherwise all issues are returned on the
    Dataset (what `validate` prints).
    """
    found = next(s for s in SOURCES if s.matches(src))  # the CSV folder source takes anything left
    ds = found.load(src, with_corpus)
    if strict and ds.errors:
        first = ds.errors[0]
        more = len(ds.errors) - 1
        raise InputError(first.message + (f" (and {more} more error(s); run `bbsard-audit validate`)"
                                          if more else ""), file=first.file, row=first.row, id=first.id)
    return ds


def open_corpus(src: str, max_doc_chars: int):
    """The corpus of a `--dataset` value (a corpus.CorpusPair), from the source that reads it; a missing
    or unreadable file is one line, before any work."""
    found = next(s for s in SOURCES if s.matches(src))
    if found.corpus is None:
        raise InputError(f"the {found.name} source gives no corpus for the corpus audit", file=src)
    return found.corpus(src, max_doc_chars)


def side_reader(format: str, path: str) -> SideReader | None:
    return next((r for r in SIDES if r.format == format and r.matches(path)), None)


def formats() -> list[str]:
    return sorted({r.format for r in SIDES})
