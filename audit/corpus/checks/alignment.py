"""Document check `doc_misaligned`: the translation is not a translation of its source (a shifted row,
another document), found by cross-lingual similarity with the context's embedder.

Each side is split into sentences (the packs' `abbreviations` say which '.' ends none); at most
`MAX_SENTENCES` per side are embedded (a one-sentence side is embedded whole). Each sentence of
either side gets its best match: its highest cosine with a sentence of the other side within
`WINDOW` relative positions of where it should be (a lost or foreign sentence has no good match
anywhere). `doc_align_cos` is the mean of the best matches, `doc_align_worst` the lowest, with its
sentence pair as the evidence; for two one-sentence sides both are the cosine of the two texts, so
documents of any length share one scale. The reduce phase learns both columns' median and MAD over
the corpus; a document is misaligned when the robust z of doc_align_cos is below -`z`, or that of
doc_align_worst below -`z_sentence`. Needs an embedder: without one (`--embedder none`) the check
does not run and the sidecar says so.
"""

from __future__ import annotations

import json
import re
from functools import cache

import numpy as np
import pyarrow as pa

from bbsard_audit.base import languages

from .base import DocCheck, Docs, Result, RobustDistribution, decode_findings, robust_z

MAX_SENTENCES = 24
WINDOW = 0.35
"""A sentence at relative position p is matched with sentences at p ± WINDOW of the other side."""
MAX_CHARS = 1000
"""Characters of a sentence (or one-sentence document) the embedder reads."""
_END = re.compile(r"[.!?;:]+[\"»”)]*(?=\s+[\"«“(]?[A-ZÀ-ÖØ-Þ0-9§])|\n\s*\n")


@cache
def _abbreviation(lang: str) -> re.Pattern:
    words = sorted(languages.get(lang).section("abbreviations"), key=len, reverse=True)
    return re.compile(r"(?i)(?<!\w)(?:" + "|".join(map(re.escape, words)) + r"|[A-Z]|\d+)\.$")


def sentences(text: str, lang: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: a '.', '!', '?' (also ';' / ':' of legal enumerations) before a
    capital, digit or '§', or a blank line; not after one of the pack's abbreviations ('art.')."""
    out, start = [], 0
    abbreviation = _abbreviation(lang)
    for m in _END.finditer(text):
        if m.group().startswith(".") and abbreviation.search(text[max(0, m.start() - 12):m.start() + 1]):
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return [(a + len(text[a:b]) - len(text[a:b].lstrip()), b) for a, b in out]


def _pieces(text: str, lang: str) -> list[tuple[int, int]]:
    spans = sentences(text, lang)[:MAX_SENTENCES]
    return spans if len(spans) > 1 else ([(0, len(text))] if text.strip() else [])


def _best(sim: np.ndarray, transpose: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best cosine with the other side's sentences within WINDOW, and where."""
    m = sim.T if transpose else sim
    rows, cols = m.shape
    pos_r = (np.arange(rows) + 0.5) / rows
    pos_c = (np.arange(cols) + 0.5) / cols
    allowed = np.abs(pos_r[:, None] - pos_c[None, :]) <= WINDOW
    allowed[np.arange(rows), np.argmin(np.abs(pos_r[:, None] - pos_c[None, :]), axis=1)] = True
    masked = np.where(allowed, m, -np.inf)
    return masked.max(axis=1), masked.argmax(axis=1)


class AlignmentAccumulator:
    def __init__(self) -> None:
        self.cos, self.worst = RobustDistribution(-1.0, 1.0, 2000), RobustDistribution(-1.0, 1.0, 2000)

    def add(self, mapped: pa.Table) -> None:
        self.cos.add_values(mapped.column("doc_align_cos").to_numpy(zero_copy_only=False))
        self.worst.add_values(mapped.column("doc_align_worst").to_numpy(zero_copy_only=False))

    def finish(self) -> dict:
        return {"cos": self.cos.finish(), "worst": self.worst.finish()}


class AlignmentCheck(DocCheck):
    name = "doc_misaligned"
    order = 80
    embeds = True
    flags = {"doc_misaligned": "The two sides do not translate each other: the cross-lingual cosines of their "
                               "sentences' best matches (mean, or worst) far below the corpus's own (robust z)."}
    categories = {"doc_misaligned": "mistranslation"}
    weights = {"doc_misaligned": 0.7}
    needs = ("abbreviations",)
    columns = {"doc_align_cos": pa.float64(), "doc_align_worst": pa.float64(), "_align_spans": pa.string()}
    scored = {"doc_align_z": pa.float64(), "doc_align_worst_z": pa.float64()}
    params = {"z": 3.5, "z_sentence": 3.0, "min_spread": 0.02, "min_corpus": 30.0}

    def map(self, docs: Docs, ctx) -> Result:
        n, src, tgt = len(docs), docs.pair.source, docs.pair.target
        pieces = [(_pieces(s, src), _pieces(t, tgt)) for s, t in zip(docs.source, docs.target)]
        texts = [text[a:b][:MAX_CHARS] for (ps, pt), s, t in zip(pieces, docs.source, docs.target)
                 for text, spans in ((s, ps), (t, pt)) for a, b in spans]
        vectors = np.asarray(ctx.embedder(texts), dtype=float) if texts else np.zeros((0, 1))
        cos, worst = np.full(n, np.nan), np.full(n, np.nan)
        spans = ["[]"] * n
        k = 0
        for i, (ps, pt) in enumerate(pieces):
            vs, vt = vectors[k:k + len(ps)], vectors[k + len(ps):k + len(ps) + len(pt)]
            k += len(ps) + len(pt)
            if not len(ps) or not len(pt):
                continue
            sim = vs @ vt.T
            best_s, at_s = _best(sim, False)
            best_t, at_t = _best(sim, True)
            cos[i] = float(np.concatenate([best_s, best_t]).mean())
            if best_s.min() <= best_t.min():
                a, b = int(best_s.argmin()), int(at_s[best_s.argmin()])
            else:
                a, b = int(at_t[best_t.argmin()]), int(best_t.argmin())
            worst[i] = float(min(best_s.min(), best_t.min()))
            (s0, s1), (t0, t1) = ps[a], pt[b]
            spans[i] = json.dumps([[self.name, "", [[src, s0, s1, docs.source[i][s0:s1], "mistranslation"],
                                                    [tgt, t0, t1, docs.target[i][t0:t1], "mistranslation"]]]],
                                  ensure_ascii=False)
        return Result({"doc_align_cos": cos, "doc_align_worst": worst, "_align_spans": np.array(spans, dtype=object)},
                      [[] for _ in range(n)])

    def accumulator(self, ctx) -> AlignmentAccumulator:
        return AlignmentAccumulator()

    def score(self, mapped: pa.Table, stats, ctx) -> Result:
        summary = stats.checks[self.name]
        cos = mapped.column("doc_align_cos").to_numpy(zero_copy_only=False).astype(float)
        worst = mapped.column("doc_align_worst").to_numpy(zero_copy_only=False).astype(float)
        spread = self.param(ctx, "min_spread")
        z, zw = robust_z(cos, summary["cos"], spread), robust_z(worst, summary["worst"], spread)
        findings = [[] for _ in range(mapped.num_rows)]
        if summary["cos"]["n"] >= self.param(ctx, "min_corpus"):
            raised = (z < -self.param(ctx, "z")) | (zw < -self.param(ctx, "z_sentence"))
            spans = mapped.column("_align_spans").to_pylist()
            for i in np.flatnonzero(raised):
                parts = [f"mean sentence match {cos[i]:.2f} (corpus median {summary['cos']['median']:.2f}, "
                         f"z = {z[i]:.1f})"]
                if np.isfinite(worst[i]):
                    parts.append(f"worst sentence match {worst[i]:.2f} (median {summary['worst']['median']:.2f}, "
                                 f"z = {zw[i]:.1f})")
                found = decode_findings(spans[i])
                findings[i] = [self.finding("the sides do not translate each other: " + "; ".join(parts),
                                            found[0].spans if found else ())]
        return Result({"doc_align_z": z, "doc_align_worst_z": zw}, findings)
