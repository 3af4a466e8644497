"""Which parts of a translation its source accounts for, without a model: both sides cut into units
(sentences and lines), aligned monotonically as Gale and Church align sentences (1993), on length and
on the punctuation a translation keeps ('?', '!', ':', brackets).

Why: text that looks like a remark (first person, a label before ':', the last line) is an LLM
leftover only when nothing in the source accounts for it. In documents made of real questions
(an FAQ page, a forum thread) every translated question says 'ik' / 'je' and ends a line: the
alignment tells a translated question (a unit matched 1-1 or 1-2 with a source unit of its length
and punctuation) from an added preface or note (a unit the alignment leaves out, or matches badly).

Costs (negative log-odds, in the spirit of Gale and Church's priors): a match costs
((log(target/source length)) / SIGMA)² / 2, plus PUNCT per differing count of each kept mark, plus
MERGE for a 1-2 or 2-1 match; leaving a unit out costs SKIP. A unit is accounted for when it is
matched with the same marks and a length within GOOD_Z spreads (MERGE_Z for a 1-2 or 2-1 match), in an alignment that matches at
least MIN_SOURCE of the source's characters.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

SIGMA = 0.2
"""Spread of log(target/source characters) of a translated sentence (bBSARD's real fr/nl question
sentences: 0.17)."""
PUNCT = 3.0
MERGE = 2.0
SKIP = 4.5
GOOD_Z = 2.5
MERGE_Z = 1.5
"""A 1-2 or 2-1 match accounts for its units within fewer spreads: a preface or a chat line merged
with the sentence it stands by must not pass for a sentence split in two."""
MIN_SOURCE = 0.75
"""An alignment that matches less than this share of the source's characters accounts for nothing
(a refusal in place of the translation matches one source sentence by chance)."""
WINDOW = 0.4
"""Only units within this share of their relative positions are compared (a band around the diagonal)."""
MARKS = ("?", "!", ":", " (", "[")

_END = re.compile(r"[.!?…]+[\"'»”)\]]*(?=\s|$)|\n")


def units(text: str, cuts: Sequence[int] = ()) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line holding a letter or digit; also cut at `cuts`."""
    points = sorted({0, len(text), *(m.end() for m in _END.finditer(text)), *cuts})
    out = []
    for a, b in zip(points, points[1:]):
        piece = text[a:b]
        if any(c.isalnum() for c in piece):
            out.append((a + len(piece) - len(piece.lstrip()), b - len(piece) + len(piece.rstrip())))
    return out


def _shape(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, tuple[int, ...]]]:
    """(letters and digits, count of each kept mark) per unit."""
    out = []
    for a, b in spans:
        piece = text[a:b]
        out.append((max(1, sum(c.isalnum() for c in piece)), tuple(piece.count(m) for m in MARKS)))
    return out


def _cost(s: list, t: list) -> tuple[float, bool]:
    """(cost of matching source units `s` with target units `t`, whether they account for each other:
    the same marks and a length within GOOD_Z spreads)."""
    ls, lt = sum(x[0] for x in s), sum(x[0] for x in t)
    z = math.log(lt / ls) / SIGMA
    marks = sum(abs(sum(x[1][k] for x in s) - sum(x[1][k] for x in t)) for k in range(len(MARKS)))
    merged = len(s) + len(t) > 2
    return min(z * z / 2, 50.0) + PUNCT * marks + MERGE * merged, not marks and abs(z) <= (MERGE_Z if merged else GOOD_Z)


def accounted(source: str, target: str, cuts: Sequence[int] = ()) -> list[tuple[int, int, bool]]:
    """Each target unit (cut also at `cuts`) with whether a source unit accounts for it."""
    su, tu = units(source), units(target, cuts)
    if not tu:
        return []
    if not su:
        return [(a, b, False) for a, b in tu]
    ss, ts = _shape(source, su), _shape(target, tu)
    n, m = len(ss), len(ts)
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back: list[list[tuple[int, int, bool] | None]] = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            here = cost[i][j]
            if here == inf:
                continue
            for di, dj in ((1, 1), (1, 0), (0, 1), (1, 2), (2, 1)):
                a, b = i + di, j + dj
                if a > n or b > m:
                    continue
                if di and dj and abs((i + di / 2) / n - (j + dj / 2) / m) > WINDOW:
                    continue
                step, ok = (SKIP, False) if not (di and dj) else _cost(ss[i:a], ts[j:b])
                if here + step < cost[a][b]:
                    cost[a][b] = here + step
                    back[a][b] = (i, j, ok)
    good = [False] * m
    matched = 0
    i, j = n, m
    while (i, j) != (0, 0):
        pi, pj, ok = back[i][j]
        if ok:
            good[pj:j] = [True] * (j - pj)
            matched += sum(x[0] for x in ss[pi:i])
        i, j = pi, pj
    if matched < MIN_SOURCE * sum(x[0] for x in ss):
        good = [False] * m
    return [(a, b, ok) for (a, b), ok in zip(tu, good)]


def unaccounted(source: str, target: str, spans: Sequence[tuple[int, int]]) -> list[float]:
    """Per target span, the share of its characters in units no source unit accounts for (the
    target is cut at every span's ends, so that a span is units of its own)."""
    aligned = accounted(source, target, [x for span in spans for x in span])
    out = []
    for start, end in spans:
        total = bad = 0
        for a, b, ok in aligned:
            overlap = max(0, min(b, end) - max(a, start))
            total += overlap
            bad += overlap * (not ok)
        out.append(bad / total if total else 1.0)
    return out
