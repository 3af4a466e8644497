"""Which parts of a translation its source accounts for, without a model: both sides cut into units
(sentences and lines), aligned monotonically as Gale and Church align sentences (1993), on length and
on the punctuation a translation keeps ('?', '!', ':', brackets, markup, dashes).

Why: text that looks like a remark (first person, a label before ':', the last line) is an LLM
leftover only when nothing in the source accounts for it. In documents made of real questions
(an FAQ page, a forum thread) every translated question says 'ik' / 'je' and ends a line: the
alignment tells a translated question (a unit matched 1-1 or 1-2 with a source unit of its length
and punctuation) from an added preface or note (a unit the alignment leaves out, or matches badly).

Costs (negative log-odds, in the spirit of Gale and Church's priors): a match costs
((log(target/source length)) / SIGMA)² / 2, plus PUNCT per differing count of each kept mark, plus
MERGE for a 1-2 or 2-1 match; leaving a unit out costs SKIP. A unit is accounted for when it is
matched with the same marks and a length within GOOD_Z spreads (MERGE_Z for a 1-2 or 2-1 match), in an alignment that matches at
least MIN_SOURCE of the source's characters (well or not).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

SIGMA = 0.2
"""Spread of log(target/source characters) of a translated sentence (bBSARD's real fr/nl question
sentences: 0.17)."""
PUNCT = 3.0
MERGE = 2.0
SKIP = 4.5
GOOD_Z = 3.0
MERGE_Z = 1.5
"""A 1-2 or 2-1 match accounts for its units within fewer spreads: a preface or a chat line merged
with the sentence it stands by must not pass for a sentence split in two."""
MIN_SOURCE = 0.75
"""An alignment that leaves more than a quarter of the source's characters unmatched accounts for
nothing (a refusal in place of the translation matches one source sentence by chance)."""
WINDOW = 0.4
"""Only cells within this share of the target's units (plus two) of the diagonal are visited."""
MARKS = tuple(re.compile(p) for p in (r"\?", "!", ":", r"(?:^|\s)[(\[]", r"\*", "[—–]"))
"""What a translation keeps: questions, exclamations, colons, an opening bracket, markup, dashes."""
HARD = [0, 1, 2, 4, 5]
"""The marks a one-to-one match must agree on; a bracket only costs (a translation drops '(RCD)')."""

_END = re.compile(r"[.!?…]+[\"'»”)\]]*(?=\s|$)|\n")
_NOT_ALNUM = re.compile(r"[\W_]+")
_BRACKET = MARKS[3]


def _marks(piece: str) -> list[int]:
    """The counts of MARKS in `piece` (str.count where a mark is one character: 5x faster)."""
    return [piece.count("?"), piece.count("!"), piece.count(":"), len(_BRACKET.findall(piece)), piece.count("*"),
            piece.count("—") + piece.count("–")]


def units(text: str, cuts: Sequence[int] = ()) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line holding a letter or digit; also cut at `cuts`."""
    points = sorted({0, len(text), *(m.end() for m in _END.finditer(text)), *cuts})
    out = []
    for a, b in zip(points, points[1:]):
        piece = text[a:b]
        if any(c.isalnum() for c in piece):
            out.append((a + len(piece) - len(piece.lstrip()), b - len(piece) + len(piece.rstrip())))
    return out


def _shape(text: str, spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: its letters and digits, and a row of counts: each kept mark, the line breaks inside
    (0 for one unit; `_pairs` counts them for two joined), whether it starts a line and whether a
    line ends after it (a translation keeps its lines: a preface line matched with a source
    sentence, or joined to half a source line, is none; a line's end is compared in a 1-2 or 2-1
    match only, the last unit's being unknown)."""
    pieces = [text[a:b] for a, b in spans]
    lengths = np.array([max(1, len(_NOT_ALNUM.sub("", p))) for p in pieces], dtype=float)
    breaks = [float("\n" in text[b:a]) for (_, b), (a, _) in zip(spans, spans[1:])]
    marks = np.array([_marks(p) + [0, before, after]
                      for p, before, after in zip(pieces, [1.0] + breaks, breaks + [0.0])], dtype=float)
    return lengths, marks.reshape(len(pieces), len(MARKS) + 3)


def _pairs(lengths: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit joined with the next (the last one alone: never used): its marks summed, the line
    break between them counted inside, the first's line start, the second's line end."""
    following = np.vstack([marks[1:], np.zeros((1, marks.shape[1]))])
    joined = marks + following
    joined[:, -3] = marks[:, -1]
    joined[:, -2] = marks[:, -2]
    joined[:, -1] = following[:, -1]
    return lengths + np.append(lengths[1:], 0), joined


def _costs(ls: np.ndarray, ms: np.ndarray, lt: np.ndarray, mt: np.ndarray, merged: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cost of matching every source group with every target group, and whether they account for
    each other: the same marks and a length within GOOD_Z (MERGE_Z) spreads."""
    z = np.log(lt[None, :] / ls[:, None]) / SIGMA
    used = slice(None) if merged else slice(0, -1)
    marks = np.abs(ms[:, None, used] - mt[None, :, used]).sum(axis=2)
    cost = np.minimum(z * z / 2, 50.0) + PUNCT * marks + MERGE * merged
    hard = np.abs(ms[:, None, HARD] - mt[None, :, HARD]).sum(axis=2) if not merged else marks
    return cost, (hard == 0) & (np.abs(z) <= (MERGE_Z if merged else GOOD_Z))


def accounted(source: str, target: str, cuts: Sequence[int] = ()) -> list[tuple[int, int, bool, tuple[int, int] | None]]:
    """Each target unit (cut also at `cuts`): (start, end, whether the source accounts for it, the
    source unit it is matched with one to one, if it is)."""
    su, tu = units(source), units(target, cuts)
    if not tu:
        return []
    if not su:
        return [(a, b, False, None) for a, b in tu]
    (ls, ms), (lt, mt) = _shape(source, su), _shape(target, tu)
    (ls2, ms2), (lt2, mt2) = _pairs(ls, ms), _pairs(lt, mt)
    steps = {(1, 1): _costs(ls, ms, lt, mt, False), (1, 2): _costs(ls, ms, lt2, mt2, True),
             (2, 1): _costs(ls2, ms2, lt, mt, True)}
    steps = {k: (c.tolist(), ok.tolist()) for k, (c, ok) in steps.items()}
    n, m = len(su), len(tu)
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back: list[list[tuple[int, int, bool] | None]] = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = 0.0
    band = WINDOW * m + 2
    for i in range(n + 1):
        centre = i / n * m
        for j in range(max(0, int(centre - band)), min(m, int(centre + band)) + 1):
            here = cost[i][j]
            if here == inf:
                continue
            if i < n and here + SKIP < cost[i + 1][j]:
                cost[i + 1][j], back[i + 1][j] = here + SKIP, (i, j, False)
            if j < m and here + SKIP < cost[i][j + 1]:
                cost[i][j + 1], back[i][j + 1] = here + SKIP, (i, j, False)
            for (di, dj), (c, ok) in steps.items():
                a, b = i + di, j + dj
                if a <= n and b <= m and here + c[i][j] < cost[a][b]:
                    cost[a][b], back[a][b] = here + c[i][j], (i, j, ok[i][j])
    good = [False] * m
    pair: list[tuple[int, int] | None] = [None] * m
    matched = 0.0
    i, j = n, m
    while (i, j) != (0, 0):
        pi, pj, ok = back[i][j]
        if ok:
            good[pj:j] = [True] * (j - pj)
        if i > pi and j > pj:
            matched += float(ls[pi:i].sum())
        if i - pi == 1 and j - pj == 1:
            pair[pj] = su[pi]
        i, j = pi, pj
    if matched < MIN_SOURCE * float(ls.sum()):
        good = [False] * m
    return [(a, b, ok, p) for (a, b), ok, p in zip(tu, good, pair)]


def unaccounted(source: str, target: str, spans: Sequence[tuple[int, int]],
                strong: Callable[[str], bool] = lambda text: False) -> tuple[list[float], list[bool]]:
    """Per target span: the share of its characters in units no source unit accounts for (the
    target is cut at every span's ends, so that a span is units of its own), and whether every unit
    of it is matched one to one (well or not). A unit that names a leftover outright (`strong`: a
    chat phrase, a refusal) is accounted for only one to one, by a source unit that is `strong`
    too (a quotation of it)."""
    aligned = [(a, b, ok and (not any(a < y and x < b for x, y in spans) or not strong(target[a:b])
                              or (pair is not None and strong(source[pair[0]:pair[1]]))),
                pair is not None) for a, b, ok, pair in accounted(source, target, [x for span in spans for x in span])]
    shares, paired = [], []
    for start, end in spans:
        total = bad = 0
        one = True
        for a, b, ok, single in aligned:
            overlap = max(0, min(b, end) - max(a, start))
            total += overlap
            bad += overlap * (not ok)
            one = one and (single or not overlap)
        shares.append(bad / total if total else 1.0)
        paired.append(one and total > 0)
    return shares, paired
