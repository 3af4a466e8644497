"""What every audit signal reports: flags from a documented vocabulary, each with a reason and,
when it is about specific words, the evidence spans in the source and/or target text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Sequence

from bbsard_audit.base.contracts.audit import SPAN_CATEGORIES as CATEGORIES  # the MQM-style span vocabulary

Role = Literal["source", "target"]
"""A side of a pair (base/contracts/audit.py `ROLES`)."""

FLAG_CATEGORIES: dict[str, str] = {}
"""Each declared flag's category, filled as signal classes declare themselves (audit/signals.py
`declare`); a flag no signal declares (an undeclared plugged-in signal's) is `other`."""


def category_of(flag: str) -> str:
    return FLAG_CATEGORIES.get(flag, "other")


@dataclass(frozen=True)
class Span:
    """Evidence: `text == <side's question>[start:end]` (Python str offsets, end exclusive). `side` is a
    role; a file writes the pair's language code (`spans_json`)."""

    side: Role
    start: int
    end: int
    text: str
    category: str

    @classmethod
    def of(cls, side: Role, question: str, start: int, end: int, category: str) -> "Span":
        return cls(side, start, end, question[start:end], category)


@dataclass(frozen=True)
class Finding:
    """One thing a check found wrong (or suspicious) in a Dutch translation.

    `flag` is a name from the vocabulary documented in docs/flags.md (e.g. `term_missing`);
    `reason` says, for a person, what was expected and what was found; `spans` point at the words.
    """

    flag: str
    reason: str
    spans: tuple[Span, ...] = ()


def spans_json(findings: Iterable[Finding], sides: Mapping[str, str] | None = None) -> str:
    """The `spans` column of audit.csv (docs/formats.md): a compact JSON array, one object per span,
    each naming the flag that produced it; duplicates (same span from the same flag) once. `sides` maps
    a span's role to the pair's language code written (`Layout.side_codes`; the corpus audit writes roles)."""
    out: dict[tuple, dict] = {}
    for f in findings:
        for s in f.spans:
            key = (s.side, s.start, s.end, s.category, f.flag)
            out.setdefault(key, {"side": sides[s.side] if sides else s.side, "start": s.start, "end": s.end, "text": s.text,
                                 "category": s.category, "flag": f.flag})
    return json.dumps(list(out.values()), ensure_ascii=False, separators=(",", ":"))


def spans_at(side: Role, question: str, offsets: Sequence[tuple[int, int]], flag: str) -> tuple[Span, ...]:
    """Spans with the flag's default category, at character offsets of `question`."""
    category = category_of(flag)
    return tuple(Span.of(side, question, a, b, category) for a, b in dict.fromkeys(offsets))
