"""audit.csv / audit.parquet and review_queue.csv (docs/formats.md): the audit's outputs as read by
the annotations and eval stages, calibration and the report."""

from __future__ import annotations

import json

from .table import Column, TableSpec

SEVERITIES = ("high", "medium", "low", "none")
QUEUES = ("risk", "control")
SPAN_SIDES = ("fr", "nl")
SPAN_CATEGORIES = ("terminology", "mistranslation", "omission", "addition", "untranslated", "number",
                   "negation", "entity", "role", "other")
SPAN_KEYS = {"side": str, "start": int, "end": int, "text": str, "category": str, "flag": str}


def parse_spans(text: str) -> list[dict]:
    """The `spans` cell: a JSON array of {side, start, end, text, category, flag} objects."""
    try:
        spans = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
    except ValueError as exc:
        raise ValueError(f"is not a JSON array ({exc})") from None
    if not isinstance(spans, list):
        raise ValueError("is not a JSON array")
    for i, span in enumerate(spans):
        if not isinstance(span, dict) or set(span) != set(SPAN_KEYS):
            raise ValueError(f"element {i} must have exactly the keys {', '.join(SPAN_KEYS)}")
        for key, kind in SPAN_KEYS.items():
            if not isinstance(span[key], kind) or isinstance(span[key], bool):
                raise ValueError(f"element {i}: {key} is not {kind.__name__}")
        if span["side"] not in SPAN_SIDES:
            raise ValueError(f"element {i}: side {span['side']!r} is not fr or nl")
        if span["category"] not in SPAN_CATEGORIES:
            raise ValueError(f"element {i}: category {span['category']!r} is not one of {', '.join(SPAN_CATEGORIES)}")
        if not 0 <= span["start"] <= span["end"]:
            raise ValueError(f"element {i}: start {span['start']} / end {span['end']} are not 0 <= start <= end")
    return spans


def _spans_match_text(row: dict) -> str | None:
    """Each span's `text` is exactly question_<side>[start:end]."""
    for i, span in enumerate(row.get("spans") or []):
        question = row.get(f"question_{span['side']}")
        if isinstance(question, str) and question[span["start"]:span["end"]] != span["text"]:
            return (f"spans[{i}] text {span['text']!r} is not question_{span['side']}"
                    f"[{span['start']}:{span['end']}] ({question[span['start']:span['end']]!r})")
    return None


AUDIT_COLUMNS = (
    Column("id", "id"),
    Column("split", "text"),
    Column("question_fr", "text"),
    Column("question_nl", "text"),
    Column("backtranslation", "text"),
    Column("risk", "float", lo=0.0, hi=1.0),
    Column("severity", "enum", choices=SEVERITIES),
    Column("flagged", "bool"),
    Column("flags", "text"),
    Column("reasons", "text"),
    Column("spans", "json", required=False, parse=parse_spans),
)
AUDIT = TableSpec("audit.csv", AUDIT_COLUMNS, key=("id",), row_checks=(_spans_match_text,))

QUEUE = TableSpec("review_queue.csv", AUDIT_COLUMNS + (
    Column("queue", "enum", choices=QUEUES),
    Column("stratum", "text"),
    Column("stratum_size", "int", required=False, empty_ok=True, lo=0),
    Column("stratum_sampled", "int", required=False, empty_ok=True, lo=0),
    Column("sample_weight", "float", required=False, empty_ok=True, lo=0.0),
    Column("inclusion_prob", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
    Column("stratum_risk_min", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
    Column("stratum_risk_max", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
), key=("id",), row_checks=(_spans_match_text,))
