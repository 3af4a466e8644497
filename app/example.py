"""The embedded sample as a translated benchmark in BEIR layout, for `bbsard-audit example beir DIR`.

The README's manifest walk-through needs a translated BEIR benchmark on disk; a newcomer has none, so
this writes one from the sample (40 French questions and their Dutch translations, 215 articles in
both languages): two BEIR folders (`fr/` the source, `nl/` the translation: queries.jsonl,
corpus.jsonl, qrels/<split>.tsv), the manifest joining them, the sample's Dutch -> French
back-translations, and one BM25 run per language over the test questions (built-in bm25s retriever, top 100) to
evaluate.
"""

from __future__ import annotations

import json
from pathlib import Path

from bbsard_audit.base.dataset import Dataset, load_dataset, sample_dir
from bbsard_audit.base.io import write_sidecar, write_text
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.base.sources.sample import BACKTRANSLATIONS

NAME = "sample-beir"
PAIR = BBSARD
"""The embedded sample's pair (it is bBSARD-shaped): the example's folders, runs and manifest sides."""
DEPTH = 100
SPLITS = ("train", "test")
FILES = (f"{NAME}.yaml", f"{NAME}.meta.json", BACKTRANSLATIONS,
         *(f"runs/bm25_{lang}.trec" for lang in PAIR),
         *(f"{lang}/{f}" for lang in PAIR for f in ("queries.jsonl", "corpus.jsonl", *(f"qrels/{s}.tsv" for s in SPLITS))))


def _jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _side(ds: Dataset, lang: str, folder: Path) -> None:
    source = lang == ds.pair.source
    write_text(folder / "queries.jsonl", _jsonl(
        {"_id": str(p.id), "text": p.source if source else p.target} for p in ds.pairs))
    write_text(folder / "corpus.jsonl", _jsonl(
        {"_id": str(a), "title": "", "text": t}
        for a, t in zip(ds.corpus.ids, ds.corpus.texts(lang))))
    for split in SPLITS:
        write_text(folder / "qrels" / f"{split}.tsv", "query-id\tcorpus-id\tscore\n" + "".join(
            f"{p.id}\t{a}\t1\n" for p in ds.select(split) for a in dict.fromkeys(p.article_ids)))


def _run(ds: Dataset, lang: str, path: Path) -> dict:
    from bbsard_audit.eval.retrievers import BM25Retriever

    retriever = BM25Retriever(lang).index(ds.corpus.ids, ds.corpus.texts(lang))
    source = lang == ds.pair.source
    queries = {str(p.id): p.source if source else p.target for p in ds.select("test")}
    write_text(path, retriever.search(queries, DEPTH).to_trec())
    return retriever.params


def write_beir_example(out: Path) -> Path:
    """Write the example into `out`; returns the manifest's path."""
    ds = load_dataset("sample")
    for lang in ds.pair:
        _side(ds, lang, out / lang)
    manifest = write_text(out / f"{NAME}.yaml", (
        f"# the embedded sample as a translated BEIR benchmark (bbsard-audit example beir)\nname: {NAME}\n"
        f"source: {{path: {ds.pair.source}, lang: {ds.pair.source}, format: beir}}\n"
        f"target: {{path: {ds.pair.target}, lang: {ds.pair.target}, format: beir}}\n"))
    bt = (sample_dir() / BACKTRANSLATIONS).read_text(encoding="utf-8")
    write_text(out / BACKTRANSLATIONS, bt)
    runs = {f"bm25_{lang}": _run(ds, lang, out / "runs" / f"bm25_{lang}.trec") for lang in ds.pair}
    write_sidecar(manifest, dataset=ds.provenance(), runs=runs, depth=DEPTH)
    return manifest
