"""A local BEIR folder, one language: `queries.jsonl` ({_id, text, metadata?}), `qrels/<split>.tsv`
(header line, then query-id, corpus-id, integer score) and optionally `corpus.jsonl` ({_id, title,
text}), read as the `beir` package's GenericDataLoader reads them. A queries audit needs no corpus."""

from __future__ import annotations

import os
from pathlib import Path

from ..io import digest_of
from .beir import CORPUS_KEYS, QUERY_KEYS, Side
from .checker import Checker, read_jsonl, read_qrels
from .corpus import CorpusSide, jsonl_side
from .registry import side


def _is_beir_folder(path: str) -> bool:
    """A folder with any BEIR file on top (queries.jsonl, corpus.jsonl, qrels/*.tsv), so one missing the
    others is a BEIR folder whose reader names what is missing; any other path is left to the HF reader
    (`hf_beir`)."""
    root = Path(path)
    return any(os.path.lexists(root / name) for name in ("queries.jsonl", "corpus.jsonl")) or (
        (root / "qrels").is_dir() and any((root / "qrels").glob("*.tsv")))


def corpus(path: str, lang: str, max_doc_chars: int, revision: str | None = None) -> tuple[CorpusSide, str, str]:
    """`corpus.jsonl`, streamed line by line, and its sha256."""
    file = Path(path) / "corpus.jsonl"
    return jsonl_side(file, lang, max_doc_chars), "corpus.jsonl", digest_of(file)


@side("beir", "beir-folder", "a local folder: queries.jsonl, qrels/<split>.tsv, corpus.jsonl (optional)",
      matches=_is_beir_folder, order=10, corpus=corpus)
def read(path: str, with_corpus: bool, checker: Checker, prefix: str, **_) -> Side:
    root = Path(path)
    files: dict[str, str] = {}

    def note(p: Path) -> None:
        files[f"{prefix}/{p.relative_to(root).as_posix()}"] = digest_of(p) if p.is_file() else ""

    queries_path = root / "queries.jsonl"
    note(queries_path)
    queries = read_jsonl(queries_path, checker, QUERY_KEYS)
    qrels = {}
    for p in sorted((root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []:
        note(p)
        rows = read_qrels(p, checker)
        if rows is not None:
            qrels[p.stem] = (str(p), rows)
    if not qrels:
        checker.error("no qrels/<split>.tsv file found", file=str(root))
    corpus_path, corpus = root / "corpus.jsonl", None
    if os.path.lexists(corpus_path):
        note(corpus_path)  # hashed even when not read: one revision whichever stage loads the side
        if with_corpus:
            corpus = read_jsonl(corpus_path, checker, CORPUS_KEYS)
    return Side(label=str(root), queries_label=str(queries_path), queries=queries, qrels=qrels,
                corpus_label=str(corpus_path), corpus=corpus, files=files)
