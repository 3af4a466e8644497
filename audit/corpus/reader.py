"""The corpus of a translated benchmark, source and target joined by document id, streamed to disk as
batch files of the map phase's input columns (docs/scale.md, "Reading and joining").

Sources: whatever the source registry opens (base/sources/registry.py `open_corpus`, each source's
`corpus` hook): a manifest (docs/formats.md) whose sides are BEIR folders or HF datasets, `sample`,
or a bBSARD CSV folder.

The two sides need not be in the same order, and neither is ever held in memory: a bounded-memory
hash join. Pass 1 streams each side once, checks every line and appends it to one of P partition
files by a hash of its id (P grows with the input, so a partition stays near `PARTITION_BYTES`).
Pass 2 loads one partition pair at a time: duplicates and ids on one side only are found there, and
the joined rows are written sorted by the source's line order. Pass 3 merges the sorted runs window
by window into batch files of `batch_size` rows, in the source file's order. Peak memory: one
partition pair plus one batch, whatever the corpus size; disk: about twice the corpus, temporarily.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.sources.corpus import CorpusPair, CorpusSide
from bbsard_audit.base.sources import registry

from .options import MAX_DOC_CHARS

INPUT_SCHEMA = pa.schema([("id", pa.string()), ("source_title", pa.string()), ("source_text", pa.string()),
                          ("target_title", pa.string()), ("target_text", pa.string())])
PARTITION_BYTES = 16 << 20
MAX_PARTITIONS = 1024
FLUSH_BYTES = 4 << 20
_RUN_BATCH = 64
"""Rows per record batch of a sorted run: the merge holds one batch of each run at a time."""

def open_corpus(src: str, max_doc_chars: int = MAX_DOC_CHARS) -> CorpusPair:
    """The corpus of a `--dataset` value, opened by the source that reads it (the source registry);
    a missing or unreadable file is one line, before any work."""
    return registry.open_corpus(src, max_doc_chars)


# ------------------------------------------------------------------ the join


def join_batches(corpus: CorpusPair, folder: Path, batch_size: int,
                 progress: Callable[[str, int], None] = lambda step, n: None) -> list[tuple[Path, int]]:
    """Write the joined corpus as `folder/part-NNNNN.parquet` files of `batch_size` rows (INPUT_SCHEMA,
    source order); return [(path, rows)]. Bad input raises InputError before any part is written."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = folder / "join"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        n_parts = min(MAX_PARTITIONS, max(1, -(-sum(s.nbytes for s in corpus.sides) // PARTITION_BYTES)))
        counts = [_partition(side, scratch / str(k), n_parts, lambda n: progress("read", n))
                  for k, side in enumerate(corpus.sides)]
        runs, problems = [], []
        for p in range(n_parts):
            run, problem = _join_partition(corpus, scratch, p)
            runs.append(run)
            if problem is not None:
                problems.append(problem)
            progress("join", 0)
        if problems:
            raise min(problems, key=lambda x: x[0])[1]
        if counts[0] == 0:
            raise InputError("the corpus holds no document", file=corpus.sides[0].label)
        return _merge(runs, counts[0], folder, batch_size, lambda n: progress("batch", n))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _bucket(doc_id: str, n_parts: int) -> int:
    return zlib.crc32(doc_id.encode("utf-8", "surrogatepass")) % n_parts


def _partition(side: CorpusSide, folder: Path, n_parts: int, progress: Callable[[int], None]) -> int:
    """Pass 1: every record of a side as a JSON line [seq, line, id, title, text] in its id's partition,
    buffered up to FLUSH_BYTES in all (not per partition: memory does not grow with P)."""
    folder.mkdir()
    outs = [open(folder / f"{p}.jsonl", "wb", buffering=0) for p in range(n_parts)]
    pending: list[list[bytes]] = [[] for _ in range(n_parts)]
    size = seq = 0

    def flush() -> None:
        for out, lines in zip(outs, pending):
            if lines:
                out.write(b"".join(lines))
                lines.clear()

    try:
        for line, doc_id, title, text in side.records():
            data = (json.dumps([seq, line, doc_id, title, text], ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
            pending[_bucket(doc_id, n_parts)].append(data)
            size += len(data)
            seq += 1
            if size > FLUSH_BYTES:
                flush()
                size = 0
            if not seq % 10_000:
                progress(10_000)
        flush()
    finally:
        for f in outs:
            f.close()
    progress(seq % 10_000)
    return seq


def _load_partition(path: Path, label: str) -> tuple[dict[str, list], tuple | None]:
    """id -> [seq, line, title, text] of one side's partition, and its first duplicate id if any."""
    docs: dict[str, list] = {}
    duplicate = None
    with open(path, "rb") as f:
        for raw in f:
            seq, line, doc_id, title, text = json.loads(raw)
            if doc_id in docs:
                if duplicate is None:
                    first = docs[doc_id][1]
                    duplicate = (line, InputError(f"duplicate id (first on line {first})", file=label, row=line, id=doc_id))
                continue
            docs[doc_id] = [seq, line, title, text]
    return docs, duplicate


def _join_partition(corpus: CorpusPair, scratch: Path, p: int) -> tuple[Path, tuple | None]:
    """Pass 2 for one partition: the joined rows sorted by source order, as an Arrow file; plus the
    first problem found ((rank, line), InputError) or None."""
    (s_label, t_label) = (side.label for side in corpus.sides)
    src, s_dup = _load_partition(scratch / "0" / f"{p}.jsonl", s_label)
    tgt, t_dup = _load_partition(scratch / "1" / f"{p}.jsonl", t_label)
    (scratch / "0" / f"{p}.jsonl").unlink()
    (scratch / "1" / f"{p}.jsonl").unlink()
    found = [((0, d[0]), d[1]) for d in (s_dup,) if d] + [((1, d[0]), d[1]) for d in (t_dup,) if d]
    only_src = [src[k][1:2] + [k] for k in src.keys() - tgt.keys()]
    only_tgt = [tgt[k][1:2] + [k] for k in tgt.keys() - src.keys()]
    if only_src:
        line, doc_id = min(only_src)
        found.append(((2, line), InputError(f"id only on the source side (not in {t_label})", file=s_label,
                                            row=line, id=doc_id)))
    if only_tgt:
        line, doc_id = min(only_tgt)
        found.append(((3, line), InputError(f"id only on the target side (not in {s_label})", file=t_label,
                                            row=line, id=doc_id)))
    path = scratch / f"run-{p}.arrow"
    order = sorted((v[0], k) for k, v in src.items() if k in tgt)
    schema = pa.schema([("seq", pa.int64()), *INPUT_SCHEMA])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for start in range(0, len(order), _RUN_BATCH):
            chunk = order[start:start + _RUN_BATCH]
            writer.write_batch(pa.record_batch([
                [s for s, _ in chunk], [k for _, k in chunk],
                [src[k][2] for _, k in chunk], [src[k][3] for _, k in chunk],
                [tgt[k][2] for _, k in chunk], [tgt[k][3] for _, k in chunk]], schema=schema))
    return path, (min(found, key=lambda x: x[0]) if found else None)


class _Run:
    """A cursor over one sorted run: the rows whose seq is below a bound, in slices."""

    def __init__(self, path: Path) -> None:
        self.reader = pa.ipc.open_file(pa.OSFile(str(path)))  # read, not mapped: touched pages would stay in RSS
        self.index, self.batch, self.offset = 0, None, 0

    def below(self, end: int) -> Iterator[pa.RecordBatch]:
        while True:
            if self.batch is None or self.offset >= self.batch.num_rows:
                if self.index >= self.reader.num_record_batches:
                    return
                self.batch, self.offset = self.reader.get_batch(self.index), 0
                self.index += 1
            seq = self.batch.column(0).to_numpy()[self.offset:]
            n = int(np.searchsorted(seq, end))
            if n:
                yield self.batch.slice(self.offset, n)
                self.offset += n
            if self.offset < self.batch.num_rows:
                return


def _merge(paths: list[Path], n_rows: int, folder: Path, batch_size: int,
           progress: Callable[[int], None]) -> list[tuple[Path, int]]:
    """Pass 3: the sorted runs merged window by window (the seqs are 0..n-1) into batch files."""
    runs = [_Run(p) for p in paths]
    parts = []
    for k, start in enumerate(range(0, n_rows, batch_size)):
        end = min(start + batch_size, n_rows)
        slices = [s for run in runs for s in run.below(end)]
        table = pa.Table.from_batches(slices, schema=slices[0].schema)
        table = table.take(pc.sort_indices(table["seq"])).drop_columns(["seq"])
        assert table.num_rows == end - start, "join: a window lost rows"
        path = folder / f"part-{k:05d}.parquet"
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        parts.append((path, table.num_rows))
        progress(table.num_rows)
    return parts


__all__ = ["INPUT_SCHEMA", "MAX_DOC_CHARS", "CorpusPair", "CorpusSide", "join_batches", "open_corpus"]
