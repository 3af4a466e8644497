"""The glossary per direction on bBSARD's real question pairs: how often it fires on correct
translations (FR->NL and NL->FR), which concepts fire most, and its recall on synthetic concept swaps.

    python benchmarks/bench_glossary_directions.py [--data ../shared/data/bbsard] [--glossary FILE]
        [--top 15] [--json OUT.json]

bBSARD's French questions are the originals and the Dutch their (GPT-4o) translations, so nearly
every pair is a correct rendering in both directions: a finding on a real pair is mostly a false
alarm (the few real errors, e.g. 'insalubre' rendered 'onbewoonbaar', fire in both directions).
Per direction (source, target) = (fr, nl) and (nl, fr):

- **fire rate**: pairs with at least one glossary finding, per split, and the top offenders
  (source term -> concept) on the train split;
- **recall on concept swaps**: for every real pair and every concept the glossary expects and finds
  in it, the target is corrupted by replacing each target-side match of that concept with the first
  target term of a *wrong concept*, then checked again; recall = share of corrupted pairs whose
  missing + rejected count rose. Two kinds of wrong concept: `rejection` (the concept an entry's
  Dutch wrong-concept rejections belong to, e.g. juge de paix -> tribunal de police, the confusions
  the glossary was curated for) and `domain` (a random other concept of the same domain, seed 0,
  whose target terms share no word with the swapped concept's). The cases differ per direction:
  the concepts the glossary expects and finds in that direction.

Uses the glossary API only (`Glossary.check_pairs`, `TermMatcher`); the curation used the train
split, so the test split's figures are held out. Runs in ~5 s on one core. Results:
benchmarks/bench_glossary_directions.md.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np

from bbsard_audit.base import languages
from bbsard_audit.audit.glossary import Glossary
from bbsard_audit.audit.termmatch import TermMatcher, longest_first, tokenize
from bbsard_audit.base.dataset import load_dataset

REPO = Path(__file__).resolve().parents[1]
DIRECTIONS = (("fr", "nl"), ("nl", "fr"))


def triggers(entry, lang: str) -> tuple[str, ...]:
    """The entry's source-side terms (`terms` alone in a glossary without `accept_only`, as on main)."""
    return entry.triggers(lang) if hasattr(entry, "triggers") else entry.terms.get(lang, ())


def accepted(entry, lang: str) -> tuple[str, ...]:
    return entry.accepted(lang) if hasattr(entry, "accepted") else entry.terms.get(lang, ())


def fire_rates(glossary: Glossary, pairs, splits, top: int) -> dict:
    out = {}
    for src, tgt in DIRECTIONS:
        texts = [(p[src], p[tgt]) for p in pairs]
        findings, _ = glossary.check_pairs(texts, (src, tgt))
        fired = np.array([bool(f) for f in findings])
        per_split = {s: {"pairs": int((splits == s).sum()), "fired": int(fired[splits == s].sum()),
                         "rate": round(float(fired[splits == s].mean()), 4)} for s in ("train", "test")}
        offenders = Counter(f.reason.split(" expects")[0].split(" is Netherlands")[0] + f" [{f.flag}]"
                            for i in np.flatnonzero(splits == "train") for f in findings[i])
        flags = Counter(f.flag for i in np.flatnonzero(splits == "train") for f in findings[i])
        out[f"{src}->{tgt}"] = {"splits": per_split, "train_flags": dict(flags), "top": offenders.most_common(top)}
    both = {}
    for s in ("train", "test"):
        idx = np.flatnonzero(splits == s)
        a = [bool(f) for f in glossary.check_pairs([(pairs[i]["fr"], pairs[i]["nl"]) for i in idx], ("fr", "nl"))[0]]
        b = [bool(f) for f in glossary.check_pairs([(pairs[i]["nl"], pairs[i]["fr"]) for i in idx], ("nl", "fr"))[0]]
        both[s] = {"both": int(np.sum(np.logical_and(a, b))), "either": int(np.sum(np.logical_or(a, b)))}
    out["overlap"] = both
    return out


def _mode(lang: str, compound: str) -> str:
    return compound if languages.get(lang).compounds else "exact"


def wrong_concepts(glossary: Glossary, seed: int = 0) -> dict[str, dict[str, str]]:
    """entry id -> {'rejection': wrong entry id, 'domain': wrong entry id}, for entries with fr and nl."""
    entries = [e for e in glossary.entries if e.terms.get("fr") and e.terms.get("nl")]
    by_nl = {}
    for e in entries:
        for t in accepted(e, "nl"):
            by_nl.setdefault(t.lstrip("=").lower(), e.id)

    def words(e, lang):
        return {w for t in accepted(e, lang) for w in tokenize(t.lstrip("="), lang).lemmas}

    rng = random.Random(seed)
    out: dict[str, dict[str, str]] = {}
    for e in entries:
        mine = {lang: words(e, lang) for lang in ("fr", "nl")}
        ok = [o for o in entries if o.id != e.id and o.domain == e.domain
              and not any(words(o, lang) & mine[lang] for lang in ("fr", "nl"))]
        choice = {}
        rejected = [by_nl.get(r.term.lower()) for r in e.rejects.get("nl", ()) if r.kind == "wrong_concept"]
        rejected = [i for i in rejected if i and i != e.id]
        if rejected:
            choice["rejection"] = rejected[0]
        if ok:
            choice["domain"] = rng.choice(ok).id
        out[e.id] = choice
    return out


def swap_recall(glossary: Glossary, pairs, splits) -> dict:
    by_id = {e.id: e for e in glossary.entries}
    wrong = wrong_concepts(glossary)
    out = {}
    for src, tgt in DIRECTIONS:
        usable = [e for e in glossary.entries if triggers(e, src) and accepted(e, tgt)]
        trig = TermMatcher(((e.id, t) for e in usable for t in triggers(e, src)), src, _mode(src, "head"))
        acc = {e.id: TermMatcher(((e.id, t) for t in accepted(e, tgt)), tgt, _mode(tgt, "part")) for e in usable}
        cases, corrupted, base = [], [], []
        for i, p in enumerate(pairs):
            s_tok, t_tok = tokenize(p[src], src), tokenize(p[tgt], tgt)
            for eid in dict.fromkeys(m.key for m in longest_first(trig.find(s_tok))):
                spans = [t_tok.offsets(m.start, m.end) for m in longest_first(acc[eid].find(t_tok))]
                if not spans:
                    continue
                for kind, wid in wrong.get(eid, {}).items():
                    term = accepted(by_id[wid], tgt)[0].lstrip("=")
                    text = p[tgt]
                    for start, end in sorted(spans, reverse=True):
                        text = text[:start] + term + text[end:]
                    cases.append((splits[i], kind, eid, wid))
                    corrupted.append((p[src], text))
                    base.append((p[src], p[tgt]))
        _, before = glossary.check_pairs(base, (src, tgt))
        _, after = glossary.check_pairs(corrupted, (src, tgt))
        bad = lambda c: (c["gl_missing"] + c["gl_rejected"]).to_numpy()  # noqa: E731
        hit = bad(after) > bad(before)
        rejected = (after["gl_rejected"] > before["gl_rejected"]).to_numpy()
        res = {}
        for split in ("train", "test"):
            for kind in ("rejection", "domain"):
                sel = np.array([c[0] == split and c[1] == kind for c in cases], dtype=bool)
                res[f"{split}/{kind}"] = {"cases": int(sel.sum()), "recall": round(float(hit[sel].mean()), 4) if sel.any() else None,
                                          "as_term_rejected": int(rejected[sel].sum())}
        missed = Counter(f"{c[2]} -> {c[3]}" for c, h in zip(cases, hit) if not h and c[0] == "train")
        res["missed_train"] = missed.most_common(10)
        out[f"{src}->{tgt}"] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "bbsard"))
    ap.add_argument("--glossary", default=None, help="a glossary file (default: the shipped one)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args()
    ds = load_dataset(args.data, with_corpus=False)
    pairs = [{"fr": p.source, "nl": p.target} for p in ds.pairs]
    splits = np.array([p.split for p in ds.pairs])
    glossary = Glossary.load(args.glossary)
    result = {"glossary_version": glossary.version, "entries": len(glossary.entries),
              "fire": fire_rates(glossary, pairs, splits, args.top), "swaps": swap_recall(glossary, pairs, splits)}
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.json:
        Path(args.json).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
