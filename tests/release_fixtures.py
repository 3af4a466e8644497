"""A small bBSARD-layout dataset (8 questions, 5 articles) and a finished review of it (verdicts, raw
annotations, agreement, estimate, audit), the release's inputs; shared by the app, annotations and
hostile-input tests."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from bbsard_audit.base.contracts.agreement import Agreement, Score
from bbsard_audit.base.contracts.estimate import Estimate
from bbsard_audit.base.dataset import QUESTION_COLUMNS
from conftest import audit_frame

FR = {1: "Quel est le préavis du locataire ?", 2: "Comment divorcer ?", 3: "Qui paie le précompte immobilier ?",
      4: "Puis-je refuser une saisie ?", 5: "Quand expire un bail de courte durée ?", 6: "Qui hérite sans testament ?",
      7: "Combien coûte un avocat pro deo ?", 8: "Quel délai pour contester un licenciement ?"}


NL = {1: "Wat is de opzeggingstermijn van de huurder?", 2: "Hoe scheiden?", 3: "Wie betaalt de onroerende voorheffing?",
      4: "Kan ik een beslag weigeren?", 5: "Wanneer loopt een kortlopende huur af?", 6: "Wie erft zonder testament?",
      7: "Hoeveel kost een pro-Deoadvocaat?", 8: "Welke termijn om een ontslag aan te vechten?"}


SPLIT = {1: "test", 2: "test", 3: "test", 4: "test", 5: "test", 6: "train", 7: "train", 8: "train"}


GOLD = {1: "101,102", 2: "103", 3: "104", 4: "105,101", 5: "102", 6: "103", 7: "104", 8: "105"}


VERDICTS = [  # id, verdict, corrected_nl, gold_labels_apply
    (1, "correct", "", "yes"),
    (2, "minor", "", "yes"),
    (3, "minor", "Wie betaalt de onroerende voorheffing op een huurwoning?", "yes"),
    (4, "legal", "Kan ik me verzetten tegen een beslag?", "no"),
    (5, "legal", "", "no"),
    (6, "legal", "", "unsure"),
]


def make_dataset(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        for lang, texts in (("fr", FR), ("nl", NL)):
            with open(root / f"questions_{lang}_{split}.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(QUESTION_COLUMNS))
                w.writeheader()
                for qid in (q for q in texts if SPLIT[q] == split):
                    w.writerow({"id": qid, "category": "Logement", "subcategory": "Bail", "question": texts[qid],
                                "extra_description": "Bail, préavis" if qid == 1 else "", "article_ids": GOLD[qid]})
    for lang, word in (("fr", "Article"), ("nl", "Artikel")):
        pd.DataFrame({"id": range(101, 106), "article": [f"{word} {i}." for i in range(101, 106)],
                      "code": "Code civil"}).to_csv(root / f"articles_{lang}.csv", index=False)
    return root


def write_review(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"id": i, "verdict": v, "corrected_nl": c, "gold_labels_apply": g, "n_annotations": 2,
                   "annotators": "anna;bart", "agreement_status": "agreed"} for i, v, c, g in VERDICTS]
                 ).to_csv(root / "verdicts.csv", index=False)
    pd.DataFrame([{"id": i, "task_id": i, "annotation_id": 10 * i + j, "annotator": a, "verdict": v,
                   "corrected_nl": "", "gold_labels_apply": "", "created_at": f"2026-11-0{j + 1}T09:00:00Z", "updated_at": f"2026-11-{j + 1 + i:02d}T09:00:00Z"}
                  for i, v, _, _ in VERDICTS for j, a in enumerate(("anna", "bart"))]
                 ).to_csv(root / "annotations_raw.csv", index=False)
    Agreement(8, [Score("cohen_kappa[verdict]", 0.71, 0.45, 0.9, 8, "kappa", ("anna", "bart"))]).write(
        root / "agreement.json")
    Estimate(0.125, 0.04, 0.3, 1.0, 8, [], 0.95, 100, 0).write(root / "estimate.json")
    audit_frame(range(1, 9), [False, False, True, True, True, False, False, True]).assign(  # the texts reviewed
        question_fr=[FR[i] for i in range(1, 9)], question_nl=[NL[i] for i in range(1, 9)]).to_csv(root / "audit.csv",
                                                                                                   index=False)
    return root / "verdicts.csv"

