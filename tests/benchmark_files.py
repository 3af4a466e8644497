"""Small translated benchmarks the tests write: BEIR folders (queries, qrels, corpus) and the manifest
joining a source and a target side; shared by the audit, app and hostile-input tests."""

from __future__ import annotations

import json
from pathlib import Path

from bbsard_audit.base.dataset import Dataset

META = ("category", "subcategory", "extra_description")


def jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def qrels(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows), encoding="utf-8")


def as_beir(ds: Dataset, root: Path, langs=("fr", "nl")) -> Path:
    """`ds` as two BEIR folders (source fr, target nl; qrels from article_ids) + a manifest joining them."""
    for lang, side in zip(langs, ("fr", "nl")):
        folder = root / lang
        jsonl(folder / "queries.jsonl", [
            {"_id": str(p.id), "text": p.source if side == "fr" else p.target,
             "metadata": {c: getattr(p, c) for c in META} if side == "fr" else dict(p.target_meta)} for p in ds.pairs])
        for split in ds.splits:
            qrels(folder / "qrels" / f"{split}.tsv", [(p.id, a, 1) for p in ds.select(split) for a in p.article_ids])
        if ds.corpus is not None:
            jsonl(folder / "corpus.jsonl", [{"_id": str(a), "title": "", "text": t}
                                            for a, t in zip(ds.corpus.ids, ds.corpus.texts(side))])
    manifest = root / "bbsard-beir.yaml"
    manifest.write_text(f"name: bbsard-beir\nsource: {{path: {langs[0]}, lang: {langs[0]}, format: beir}}\n"
                        f"target: {{path: {langs[1]}, lang: {langs[1]}, format: beir}}\n", encoding="utf-8")
    return manifest


def en_nl(root: Path, target_rows=None, target_qrels=None) -> Path:
    jsonl(root / "en" / "queries.jsonl", [{"_id": "1", "text": "What is the notice period?"},
                                          {"_id": "2", "text": "How to divorce?"}, {"_id": "3", "text": "Unjudged"}])
    qrels(root / "en" / "qrels" / "test.tsv", [(1, 101, 1), (1, 102, 1), (2, 103, 1), (2, 104, 0)])
    jsonl(root / "nl" / "queries.jsonl", target_rows or [{"_id": "1", "text": "Wat is de opzegtermijn?"},
                                                         {"_id": "2", "text": "Hoe scheiden?"}])
    qrels(root / "nl" / "qrels" / "test.tsv", target_qrels or [(1, 101, 1), (1, 102, 1), (2, 103, 1), (2, 104, 0)])
    manifest = root / "m.yaml"
    manifest.write_text("name: toy-en-nl\nsource: {path: en, lang: en, format: beir}\n"
                        "target: {path: nl, lang: nl, format: beir}\n", encoding="utf-8")
    return manifest



EN_NL = [  # (query id, English, Dutch, back-translation, gold corpus ids)
    ("PLAIN-1", "Can my landlord raise the rent twice in 12 months?",
     "Mag mijn verhuurder de huur twee keer verhogen in 12 maanden?",
     "May my landlord raise the rent twice in 12 months?", ["MED-1"]),
    ("PLAIN-2", "What is the notice period for a tenant with 3 children?",
     "Wat is de opzegtermijn voor een huurder met 5 kinderen?",
     "What is the notice period for a tenant with 5 children?", ["MED-2", "MED-3"]),
    ("PLAIN-3", "Who pays for the repair of the roof?", "Wie betaalt de herstelling van het dak?",
     "Who pays for the repair of the roof?", ["MED-4"]),
    ("PLAIN-4", "Can I break my lease after one year?", "Kan ik mijn huurcontract na een jaar opzeggen?",
     "Can I terminate my lease after a year?", ["MED-5"]),
    ("PLAIN-5", "How much deposit may a landlord ask?", "Hoeveel waarborg mag een verhuurder vragen?",
     "How much deposit may a landlord ask?", ["MED-6"]),
    ("PLAIN-6", "Is my employer allowed to read my e-mails?", "Mag mijn werkgever mijn e-mails lezen?",
     "May my employer read my e-mails?", ["MED-1", "MED-6"]),
]


DOCS = {f"MED-{i}": (f"English article {i} on leases and rent.", f"Nederlands artikel {i} over huur.")
        for i in range(1, 7)}


def beir_pair(root: Path, rows, src: str, tgt: str, docs=DOCS, name: str = "toy") -> Path:
    """Two BEIR folders (queries, qrels/test.tsv, corpus) and the manifest that joins them."""
    for side, lang, col in ((src, src, 1), (tgt, tgt, 2)):
        jsonl(root / side / "queries.jsonl", [{"_id": r[0], "text": r[col]} for r in rows])
        qrels(root / side / "qrels" / "test.tsv", [(r[0], d, 1) for r in rows for d in r[4]])
        jsonl(root / side / "corpus.jsonl", [{"_id": d, "title": "", "text": texts[col - 1]} for d, texts in docs.items()])
    manifest = root / f"{name}.yaml"
    manifest.write_text(f"name: {name}\nsource: {{path: {src}, lang: {src}, format: beir}}\n"
                        f"target: {{path: {tgt}, lang: {tgt}, format: beir}}\n", encoding="utf-8")
    return manifest

