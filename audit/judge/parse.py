"""Strict reading of a judge's answer: the schema of audit/judge/prompt.py, nothing guessed.

A broken answer (not JSON, wrong shape, unknown category or severity) is `Malformed`, so the caller
can ask once more. A span that is not an exact substring of the text it names is evidence the model
made up: that error is dropped, with a note, and does not count in the MQM score.
"""

from __future__ import annotations

import json
import re
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
        start = text.find(span) if span else -1
        if start < 0:
            shown = span if len(span) <= 60 else span[:57] + "..."
            notes.append(f"span {shown!r} is not in the {side} text; dropped")
            continue
        explanation = " ".join(item["explanation"].split())  # one line in `reasons`
        if len(explanation) > MAX_EXPLANATION:
            explanation = explanation[:MAX_EXPLANATION - 1] + "…"
        errors.append(JudgedError(side, start, start + len(span), span, item["category"], item["severity"],
                                  explanation))
    return errors, notes


def mqm_score(errors: list[JudgedError]) -> float:
    return float(sum(MQM_WEIGHTS[e.severity] for e in errors))
