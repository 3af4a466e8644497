"""IBM Model 1 word-translation tables learned without labels from the audited pairs themselves.

The audit has no aligner to download: this learns, by EM on the batch's own parallel text, how likely
each target word is as a translation of each source word, t(f | e), as OpusFilter's WordAlignFilter
(eflomal) and Bicleaner's probabilistic dictionaries do with their own aligners. One table per
direction (p(target | source) and p(source | target)), each with a NULL word (a target word that
translates nothing) and a fast_align-style diagonal prior (Dyer et al. 2013: a word's partner sits
near the same relative position), a few EM iterations from uniform. Optional `seeds` (word pairs of
a bilingual dictionary) join the bitext as one-word sentence pairs, which lend rare words a partner
the batch alone cannot teach.

EM in numpy on the sparse co-occurrences: one array entry per (source position, target position) of
every sentence pair, so an iteration costs a few vectorised passes over sum(len_e * len_f) entries
(0.3 M for the 1,108 bBSARD pairs, 2.9 M for the 7,406 MQM pairs: well under a second a direction
for bBSARD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

ITERATIONS = 5
"""EM iterations from the uniform table (IBM-1's likelihood is convex: more changes little)."""
DIAGONAL = 4.0
"""fast_align's lambda: prior weight exp(-lambda * |i/m - j/n|) on the source position i of target
position j (0 = plain IBM Model 1)."""
NULL_PRIOR = 0.08
"""fast_align's p0: prior share of a target word translating nothing."""
NULL = "\0"


@dataclass(frozen=True)
class Table:
    """t(f | e) for the co-occurring (e, f) of the bitext: `keys` = e_id * len(target vocab) + f_id,
    sorted, with `probs` alongside; e_id 0 is NULL."""

    source_vocab: dict[str, int]
    target_vocab: dict[str, int]
    keys: np.ndarray
    probs: np.ndarray

    def matrix(self, source: Sequence[str], target: Sequence[str]) -> np.ndarray:
        """t(target[j] | source[i]) as an (len(source), len(target)) array; 0 where never seen together."""
        e = np.array([self.source_vocab.get(w, -1) for w in source], dtype=np.int64)
        f = np.array([self.target_vocab.get(w, -1) for w in target], dtype=np.int64)
        out = np.zeros((len(e), len(f)))
        if not len(e) or not len(f) or not len(self.keys):
            return out
        key = e[:, None] * len(self.target_vocab) + f[None, :]
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        found = (self.keys[at] == key) & (e[:, None] >= 0) & (f[None, :] >= 0)
        out[found] = self.probs[at[found]]
        return out


def _vocab(sentences: Sequence[Sequence[str]], first: Sequence[str] = ()) -> dict[str, int]:
    vocab: dict[str, int] = {w: i for i, w in enumerate(first)}
    for sentence in sentences:
        for w in sentence:
            vocab.setdefault(w, len(vocab))
    return vocab


def train(source: Sequence[Sequence[str]], target: Sequence[Sequence[str]], seeds: Sequence[tuple[str, str, float]] = (),
          iterations: int = ITERATIONS, diagonal: float = DIAGONAL) -> Table:
    """t(f | e) by EM over the sentence pairs (source[k], target[k]) and the seed word pairs (e, f, weight:
    the seed counts as `weight` sentence pairs)."""
    weight = [1.0] * len(source) + [x for _, _, x in seeds]
    source = [list(s) for s in source] + [[a] for a, _, _ in seeds]
    target = [list(t) for t in target] + [[b] for _, b, _ in seeds]
    sv, tv = _vocab(source, [NULL]), _vocab(target)
    e_ids, f_ids, groups, prior, scale = [], [], [], [], []
    group = 0
    for s, t, x in zip(source, target, weight):
        if not s or not t:
            continue
        m, n = len(s), len(t)
        es = np.array([0] + [sv[w] for w in s], dtype=np.int64)
        fs = np.array([tv[w] for w in t], dtype=np.int64)
        h = np.exp(-diagonal * np.abs((np.arange(m)[:, None] + 0.5) / m - (np.arange(n)[None, :] + 0.5) / n))
        h = (1 - NULL_PRIOR) * h / h.sum(axis=0, keepdims=True)
        w = np.vstack([np.full((1, n), NULL_PRIOR), h])  # (m + 1, n): prior of source position i for target j
        e_ids.append(np.repeat(es, n))
        f_ids.append(np.tile(fs, m + 1))
        groups.append(np.tile(np.arange(group, group + n), m + 1))
        prior.append(w.ravel())
        scale.append(np.full(w.size, x))
        group += n
    if not e_ids:
        return Table(sv, tv, np.zeros(0, dtype=np.int64), np.zeros(0))
    e, f, g, w, x = (np.concatenate(a) for a in (e_ids, f_ids, groups, prior, scale))
    keys, edge = np.unique(e * len(tv) + f, return_inverse=True)
    key_e = keys // len(tv)
    probs = np.ones(len(keys))
    for _ in range(iterations):
        p = w * probs[edge]
        posterior = x * p / np.bincount(g, p, minlength=group)[g]
        counts = np.bincount(edge, posterior, minlength=len(keys))
        totals = np.bincount(key_e, counts, minlength=len(sv))
        probs = counts / np.where(totals[key_e] > 0, totals[key_e], 1.0)
    return Table(sv, tv, keys, probs)
