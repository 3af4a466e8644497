"""Strict reading of a judge's answer: the schema of audit/judge/prompt.py, nothing guessed.

A broken answer (not JSON, wrong shape, unknown category or severity, a lone surrogate such as
`\ud800` that no file can hold) is `Malformed`, so the caller can ask once more. A span is looked up
verbatim, else in Unicode NFC on both sides (a model may quote decomposed accents), its offsets always
into the text as given. A span found neither way is evidence the model made up: that error is
dropped, with a note, and does not count in the MQM score.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from bbsard_audit.base.contracts.audit import SPAN_CATEGORIES

from .client import Malformed
from .prompt import SEVERITIES, SIDES

MQM_WEIGHTS = {"minor": 1.0, "major": 5.0, "critical": 10.0}
"""GEMBA-MQM's severity weights (Kocmi & Federmann, 2023); a pair's score is their sum."""

MAX_EXPLANATION = 400
"""Characters of an explanation kept in `reasons` (the rest is cut with an ellipsis)."""
FIELDS = {"span", "side", "category", "severity", "explanation"}
REQUIRED = FIELDS - {"side"}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class JudgedError:
    """One error the judge marked: `text == (source if side == "source" else target)[start:end]`."""

    side: str
    start: int
    end: int
    text: str
    category: str
    severity: str
    explanation: str


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_answer(content: str, source: str, target: str) -> tuple[list[JudgedError], list[str]]:
    """(errors, notes) of one answer; `Malformed` when it breaks the schema. A whole answer fenced in
    one ```json block (schema-in-prompt mode) is read as its content."""
    fenced = _FENCE.match(content)
    try:
        data = json.loads(fenced.group(1) if fenced else content, parse_constant=_reject_constant)
    except ValueError as exc:
        raise Malformed(f"the answer is not JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) != {"errors"} or not isinstance(data["errors"], list):
        raise Malformed('the answer is not {"errors": [...]}')
    if _SURROGATE.search(json.dumps(data, ensure_ascii=False)):
        raise Malformed("the answer holds a lone surrogate (e.g. \\ud800), which is not text")
    errors, notes = [], []
    texts = {"source": source, "target": target}
    for i, item in enumerate(data["errors"]):
        where = f"errors[{i}]"
        if not isinstance(item, dict) or not REQUIRED <= set(item) <= FIELDS:
            raise Malformed(f"{where} must have the keys {', '.join(sorted(REQUIRED))} (and optionally side)")
        if not all(isinstance(v, str) for v in item.values()):
            raise Malformed(f"{where}: every value must be a string")
        side = item.get("side", "target")
        for key, allowed in (("side", SIDES), ("category", SPAN_CATEGORIES), ("severity", SEVERITIES)):
            value = side if key == "side" else item[key]
            if value not in allowed:
                raise Malformed(f"{where}: {key} {value!r} is not one of {'|'.join(allowed)}")
        span, text = item["span"], texts[side]
        start, end = locate(span, text)
        if start < 0:
            shown = span if len(span) <= 60 else span[:57] + "..."
            notes.append(f"span {shown!r} is not in the {side} text; dropped")
            continue
        explanation = " ".join(item["explanation"].split())  # one line in `reasons`
        if len(explanation) > MAX_EXPLANATION:
            explanation = explanation[:MAX_EXPLANATION - 1] + "…"
        errors.append(JudgedError(side, start, end, text[start:end], item["category"], item["severity"],
                                  explanation))
    return errors, notes


def locate(span: str, text: str) -> tuple[int, int]:
    """[start, end) of `span`'s first occurrence in `text`, verbatim or else both in NFC (offsets into
    `text` as given, widened to whole characters with their accents); (-1, -1) when absent."""
    if not span:
        return -1, -1
    start = text.find(span)
    if start >= 0:
        return start, start + len(span)
    # NFC per cluster (a starter and the marks after it), remembering where each cluster began
    bounds = [i for i, c in enumerate(text) if i == 0 or not unicodedata.combining(c)] + [len(text)]
    normal, first, last = [], [], []
    for a, b in zip(bounds, bounds[1:]):
        piece = unicodedata.normalize("NFC", text[a:b])
        normal.append(piece)
        first += [a] * len(piece)
        last += [b] * len(piece)
    normal_text, target = "".join(normal), unicodedata.normalize("NFC", span)
    if normal_text != unicodedata.normalize("NFC", text):  # composition across clusters (e.g. Hangul jamo)
        return -1, -1
    k = normal_text.find(target)
    if k < 0:
        return -1, -1
    return first[k], last[k + len(target) - 1]


def mqm_score(errors: list[JudgedError]) -> float:
    return float(sum(MQM_WEIGHTS[e.severity] for e in errors))
