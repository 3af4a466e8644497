"""Reference-free signal: source vs target question embeddings, scored relatively.

Raw e5 cosines of any two legal questions crowd into ~0.75-0.93, so a low raw cosine means little.
Like LASER / Bicleaner margin scoring, each pair's cosine is compared with how close each side is to
its k nearest *non-partners* (a generic question is close to everything; a faithful translation is
closer to its partner than to its neighbours), and the margin is then turned into a robust dataset
z-score (median / MAD) so a threshold reads as "this many deviations below the usual pair".
A pair of matching stage directions ('(Applause)' / '(Beifall)', audit/stage.py) says nothing an
embedding can compare: it gets z = 0 and is nobody's neighbour.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.embeddings import Embedder
from bbsard_audit.base.languages import LanguagePair
from .findings import Finding
from .signals import Batch, Rule, ScorerSignal, SignalResult
from .stage import matching_directions

FLAGS = {
    "xling_outlier": "French and Dutch embeddings agree much less than for the usual pair: the margin "
                     "score (partner cosine vs the k nearest non-partner questions) is more than the "
                     "configured number of robust deviations below the dataset median.",
}


@dataclass(frozen=True)
class CrossLingualConfig:
    k: int = 4
    margin: Literal["ratio", "distance"] = "ratio"
    z_threshold: float = -2.5


def margin_scores(src: np.ndarray, tgt: np.ndarray, k: int = 4, margin: str = "ratio",
                  groups: Sequence[object] | None = None, reference: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(cosine, margin) per row for L2-normalised row-aligned matrices.

    Neighbours come from the `reference` rows (default: all). Rows with the same `groups` value
    (e.g. a question and its corrupted copies in the self-test) are never each other's neighbours:
    a copy's source is the original's source and would otherwise be its nearest non-partner.
    """
    if margin not in ("ratio", "distance"):
        raise ValueError(f"unknown margin {margin!r}; use ratio or distance")
    n = len(src)
    ref = np.ones(n, dtype=bool) if reference is None else np.asarray(reference, dtype=bool)
    group = np.asarray(groups if groups is not None else np.arange(n))
    cosine = np.einsum("ij,ij->i", src, tgt)
    same = group[:, None] == group[ref][None, :]
    kk = min(k, int(ref.sum()) - 1)
    if kk < 1:
        return cosine, (np.ones_like(cosine) if margin == "ratio" else np.zeros_like(cosine))
    # source side: its k most similar target non-partners; target side: its k most similar sources.
    src_side = np.where(same, -np.inf, src @ tgt[ref].T)
    tgt_side = np.where(same, -np.inf, tgt @ src[ref].T)
    src_nn = -np.partition(-src_side, kk - 1, axis=1)[:, :kk]
    tgt_nn = -np.partition(-tgt_side, kk - 1, axis=1)[:, :kk]
    with warnings.catch_warnings():  # a row with < k candidates averages the ones it has
        warnings.simplefilter("ignore", RuntimeWarning)
        src_mean = np.nanmean(np.where(np.isfinite(src_nn), src_nn, np.nan), axis=1)
        tgt_mean = np.nanmean(np.where(np.isfinite(tgt_nn), tgt_nn, np.nan), axis=1)
    neighbourhood = np.nan_to_num((src_mean + tgt_mean) / 2, nan=0.0)
    if margin == "ratio":
        return cosine, cosine / np.maximum(neighbourhood, 1e-6)
    return cosine, cosine - neighbourhood


def robust_z(values: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """(x - median) / (1.4826 * MAD) over the reference rows: the errors we look for do not inflate the scale."""
    base = values if reference is None else values[np.asarray(reference, dtype=bool)]
    median = np.median(base)
    mad = 1.4826 * np.median(np.abs(base - median))
    scale = mad if mad > 1e-9 else (float(np.std(base)) or 1.0)
    return (values - median) / scale


class CrossLingualScorer:
    """Source vs target similarity with one Embedder (both sides as `query`, as e5 recommends)."""

    def __init__(self, embedder: Embedder, config: CrossLingualConfig = CrossLingualConfig()) -> None:
        self.embedder, self.config = embedder, config

    def signature(self) -> str:
        c = self.config
        return f"{self.embedder.model_id}|kind:query|margin:{c.margin}|k:{c.k}|z:median-mad"

    def score(self, pairs: Sequence[tuple[str, str]], languages: LanguagePair, groups: Sequence[object] | None = None,
              reference: np.ndarray | None = None) -> tuple[list[list[Finding]], pd.DataFrame]:
        """(source, target) text `pairs` in `languages` (the reasons name them); `reference` marks the
        rows that define neighbours and the z-score scale (default: all)."""
        src = self.embedder.encode([p[0] for p in pairs], "query")
        tgt = self.embedder.encode([p[1] for p in pairs], "query")
        directions = np.array([matching_directions(s, t, languages) for s, t in pairs], dtype=bool)
        base = np.ones(len(pairs), dtype=bool) if reference is None else np.asarray(reference, dtype=bool)
        if directions.any() and (base & ~directions).any():
            reference = base & ~directions
        cosine, margin = margin_scores(src, tgt, self.config.k, self.config.margin, groups, reference)
        z = robust_z(margin, reference) if len(margin) else margin
        z = np.where(directions, 0.0, z)
        columns = pd.DataFrame({"xling_cosine": cosine, "xling_margin": margin, "xling_z": z})
        source, target = languages.names
        findings = [[Finding("xling_outlier", f"{source} and {target} embeddings agree unusually little "
                             f"(cosine {c:.3f}, margin {m:.3f}, z {zz:.1f} < {self.config.z_threshold:g})")]
                    if zz < self.config.z_threshold else []
                    for c, m, zz in zip(cosine, margin, z)]
        return findings, columns


class CrossLingualSignal(ScorerSignal[CrossLingualScorer]):
    """The cross-lingual scorer as an audit signal; not signal-cached (its embeddings are, and its
    z-scores depend on the batch's groups / reference rows)."""

    name = "crosslingual"
    flags = FLAGS
    categories = {"xling_outlier": "mistranslation"}
    rules = (Rule("xling_z", "xling_outlier", threshold=-2.0, scale=0.4, weight=0.45, order=30),)
    reads = ("source", "target")

    def score(self, batch: Batch) -> SignalResult:
        return SignalResult(*self.scorer.score(batch.pairs, batch.pair, batch.groups, batch.reference))
