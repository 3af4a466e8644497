"""The corpus engine's toy phases and small BEIR corpora, shared by the engine tests (tests/audit) and the
hostile-input tests (tests/hostile).

The phase functions (`toy_*`) are a small stand-in of audit/corpus/documents.py with its interface (one
output row per input row, corpus statistics, scoring), so the engine is tested on its own. They live in
tests/ (on sys.path through tests/conftest.py) so a subprocess or a worker imports them by this name.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bbsard_audit.audit.corpus.run import Phases

TESTS = Path(__file__).resolve().parent  # what a subprocess puts on sys.path to import the tests' helpers


def toy_context(pair, embedder):
    return SimpleNamespace(pair=pair, embedder_id=embedder)


def toy_map(batch: pa.Table, ctx) -> pa.Table:
    s, t = pc.utf8_length(batch["source_text"]), pc.utf8_length(batch["target_text"])
    return pa.table({"id": batch["id"], "source_chars": pc.cast(s, pa.int64()), "target_chars": pc.cast(t, pa.int64()),
                     "doc_empty": pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(batch["target_text"])), 0),
                     "pid": pa.array([os.getpid()] * batch.num_rows, pa.int64())})


def toy_reduce(mapped, ctx=None) -> dict:
    ratios = np.concatenate([(t["target_chars"].to_numpy() + 1) / (t["source_chars"].to_numpy() + 1) for t in mapped])
    return {"median": float(np.median(ratios)), "n": int(ratios.size)}


def toy_score(mapped: pa.Table, stats: dict, ctx) -> pa.Table:
    ratio = (mapped["target_chars"].to_numpy() + 1) / (mapped["source_chars"].to_numpy() + 1) / stats["median"]
    empty = mapped["doc_empty"].to_numpy(zero_copy_only=False)
    truncated = ratio < 0.5
    flagged = empty | truncated
    flags = [";".join(n for n, on in (("doc_empty", e), ("doc_truncated", tr)) if on) for e, tr in zip(empty, truncated)]
    n = mapped.num_rows
    return pa.table({"id": mapped["id"], "risk": np.clip(1 - ratio, 0, 1), "severity": ["high" if f else "none" for f in flagged],
                     "flagged": flagged, "flags": flags, "reasons": flags, "spans": ["[]"] * n,
                     "source_chars": mapped["source_chars"], "target_chars": mapped["target_chars"],
                     "source_excerpt": [""] * n, "target_excerpt": [""] * n, "doc_ratio": ratio})


TOY = Phases(toy_map, toy_reduce, toy_score, toy_context)


def beir_side(root: Path, docs: list[dict]) -> None:
    (root / "qrels").mkdir(parents=True)
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "?"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n")
    (root / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")


def make_corpus(root: Path, n: int = 300, seed: int = 0, *, shuffle: bool = True) -> Path:
    """A BEIR-style translated corpus: English source, Dutch target in another order, some damage."""
    rng = random.Random(seed)
    src = [{"_id": f"d{i}", "title": f"Title {i}", "text": f"Article {i}: the tenant pays {i} euros. " * rng.randint(1, 6)}
           for i in range(n)]
    tgt = [{"_id": d["_id"], "title": "" if i % 37 == 5 else f"Titel {i}",  # an empty document: no title either
            "text": ("" if i % 37 == 5 else f"Artikel {i}: de huurder betaalt. "
                     * (1 if i % 11 == 3 else len(d["text"]) // 35))}
           for i, d in enumerate(src)]
    if shuffle:
        rng.shuffle(tgt)
    beir_side(root / "en", src)
    beir_side(root / "nl", tgt)
    manifest = root / "corpus.yaml"
    manifest.write_text("name: toy-corpus\nsource: {path: en, lang: en, format: beir}\n"
                        "target: {path: nl, lang: nl, format: beir}\n")
    return manifest


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).drop_columns(["pid"] if "pid" in pq.read_schema(path).names else []).to_pylist()


def corpus_manifest(tmp_path, corpus):
    """A FR->NL BEIR benchmark (two folders + manifest) holding a synthetic corpus's documents."""
    t = corpus.table.to_pylist()
    beir_side(tmp_path / "fr", [{"_id": r["id"], "title": "", "text": r["source_text"]} for r in t])
    beir_side(tmp_path / "nl", [{"_id": r["id"], "title": "", "text": r["target_text"]} for r in t])
    m = tmp_path / "c.yaml"
    m.write_text("name: c\nsource: {path: fr, lang: fr, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n")
    return m

