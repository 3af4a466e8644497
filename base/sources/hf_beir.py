"""An HF dataset in MTEB/BEIR layout, one language: configs `corpus` (split corpus), `queries` (split
queries) and `default` (the qrels, one split per qrels file: query-id, corpus-id, score), as
clips/mteb-nl-bbsard or clips/beir-nl-scifact; `qrels:` in the manifest names another repo holding
them (BeIR/scifact keeps its qrels in BeIR/scifact-qrels). A local copy in that layout works too."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..io import is_local_path
from .beir import Side, numbered
from .checker import Checker
from .corpus import CorpusSide, Record, record
from .hf_bsard import hf_load
from .hub import check_hub_reachable, pin
from .registry import side


def corpus(name: str, lang: str, max_doc_chars: int, revision: str | None = None) -> tuple[CorpusSide, str, str]:
    """An HF dataset's `corpus` config (memory-mapped Arrow, read in slices), and its pin."""
    if not Path(name).exists():
        check_hub_reachable(name + (f"@{revision}" if revision else ""))
    label = f"hf:{Path(name).name if is_local_path(name) else name}/corpus/corpus"
    try:
        rows = hf_load(name, "corpus", revision)["corpus"]
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"cannot load config 'corpus', split 'corpus': {type(exc).__name__}: {first}",
                         file=label) from None
    missing = [c for c in ("_id", "text") if c not in rows.column_names]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (found: {', '.join(rows.column_names)})", file=label)

    def records() -> Iterator[Record]:
        line = 0
        for chunk in rows.iter(batch_size=4096):
            titles = chunk.get("title") or [""] * len(chunk["_id"])
            for doc_id, title, text in zip(chunk["_id"], titles, chunk["text"]):
                line += 1
                yield record({"_id": doc_id, "title": title, "text": text}, label, line, max_doc_chars)

    side = CorpusSide(label, lang, records, rows.data.nbytes)
    return side, side.label, pin(name, revision)


@side("beir", "beir-hf", "an HF id (or a local copy) with configs corpus, queries and default (qrels)",
      matches=lambda path: True, order=90, corpus=corpus)
def read(path: str, with_corpus: bool, checker: Checker, prefix: str, revision: str | None = None,
         qrels: str | None = None, **_) -> Side:
    qrels_repo = qrels or path
    local = Path(path)
    if local.is_dir() and not (local / "README.md").exists() and not any(local.glob("*/dataset_dict.json")):
        checker.error("neither a BEIR folder (no queries.jsonl) nor an HF dataset (no README.md configs, no "
                      "save_to_disk folders)", file=path)
        return Side(label=path, queries_label=path, queries=None, qrels={})
    for name in dict.fromkeys((path, qrels_repo)):
        if not Path(name).exists():
            check_hub_reachable(name + (f"@{revision}" if revision else ""))

    def table(name: str, config: str, split: str | None):
        """The rows of one config's split (or the whole DatasetDict when `split` is None); None when absent."""
        label = f"hf:{name}/{config}" + (f"/{split}" if split else "")
        try:
            dd = hf_load(name, config, revision)
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            checker.error(f"cannot load config {config!r}: {type(exc).__name__}: {first}", file=f"hf:{name}")
            return label, None
        if split is None:
            return label, dd
        if split not in dd:
            checker.error(f"split {split!r} missing (found: {', '.join(dd) or 'none'})", file=label)
            return label, None
        return label, dd[split]

    q_label, q_rows = table(path, "queries", "queries")
    if q_rows is None:  # unreachable or not this layout: the other configs would say it again
        return Side(label=f"hf:{path}", queries_label=q_label, queries=None, qrels={})
    if not checker.columns(q_label, q_rows.column_names, ("_id", "text")):
        q_rows = None
    _, qrels_dd = table(qrels_repo, "default", None)
    found = {}
    for split in qrels_dd or {}:
        label, rows = f"hf:{qrels_repo}/default/{split}", qrels_dd[split]
        if checker.columns(label, rows.column_names, ("query-id", "corpus-id", "score")):
            found[split] = (label, [(i + 1, r["query-id"], r["corpus-id"], r["score"]) for i, r in enumerate(rows)])
    corpus_label, corpus = f"hf:{path}/corpus/corpus", None
    if with_corpus:
        corpus_label, rows = table(path, "corpus", "corpus")
        if rows is not None and checker.columns(corpus_label, rows.column_names, ("_id", "text")):
            corpus = numbered(rows)
    pins = {f"{prefix}/hf:{Path(name).name if Path(name).exists() else name}": pin(name, revision)
            for name in dict.fromkeys((path, qrels_repo))}  # a local copy by its folder name, never its path
    return Side(label=f"hf:{path}", queries_label=q_label, queries=None if q_rows is None else numbered(q_rows),
                qrels=found, corpus_label=corpus_label, corpus=corpus, files=pins)
