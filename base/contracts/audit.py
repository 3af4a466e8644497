"""audit.csv / audit.parquet and review_queue.csv (docs/formats.md): the audit's outputs as read by
the annotations and eval stages, calibration and the report.

An audit is written for one language pair, and its ids are integers or strings: its `Layout`, recorded
in audit.meta.json and read back by every later stage (`Layout.of`). Files keep language-coded names
(`question_<source>`, `question_<target>`, span `side` = a language code), so a bBSARD (fr -> nl)
folder, whose sidecar predates pairs, reads exactly as ever.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Mapping

from bbsard_audit.base.io import sidecar_path
from bbsard_audit.base.languages import BBSARD, UNRECORDED, LanguagePair, language_name

from .table import Column, TableSpec

SEVERITIES = ("high", "medium", "low", "none")
QUEUES = ("risk", "control")
ROLES = ("source", "target")
"""The two sides of a pair, as the audit names them inside; files name them by language code."""
SPAN_CATEGORIES = ("terminology", "mistranslation", "omission", "addition", "untranslated", "number",
                   "negation", "entity", "role", "other")
SPAN_KEYS = {"side": str, "start": int, "end": int, "text": str, "category": str, "flag": str}


def parse_spans(text: str, sides: tuple[str, str]) -> list[dict]:
    """The `spans` cell: a JSON array of {side, start, end, text, category, flag} objects, each side one
    of the file's language codes (`sides`)."""
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
        if span["side"] not in sides:
            raise ValueError(f"element {i}: side {span['side']!r} is not {' or '.join(sides)}")
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


@dataclass(frozen=True)
class Layout:
    """What an audit's files are written for: the language pair (`question_<source>`,
    `question_<target>`, `corrected_<target>`, span sides) and whether ids are strings. In the audit
    sidecar as `languages` and `ids`; absent = fr -> nl with integer ids (folders from before pairs)."""

    pair: LanguagePair = UNRECORDED
    string_ids: bool = False

    @property
    def sides(self) -> tuple[str, str]:
        return self.pair.source, self.pair.target

    @property
    def question_src(self) -> str:
        return f"question_{self.pair.source}"

    @property
    def question_tgt(self) -> str:
        return f"question_{self.pair.target}"

    @property
    def corrected(self) -> str:
        """The verdicts' corrected translation column: `corrected_<target>`."""
        return f"corrected_{self.pair.target}"

    def meta(self) -> dict:
        """The sidecar fields that record this layout."""
        return {"languages": self.pair.record(),
                "ids": "string" if self.string_ids else "integer"}

    @classmethod
    def from_meta(cls, meta: Mapping) -> "Layout":
        """The layout a sidecar records (its own `languages`/`ids`, or its `dataset` record's languages)."""
        return cls(LanguagePair.from_sidecar(meta), meta.get("ids") == "string")

    @classmethod
    def of(cls, path: str | Path) -> "Layout":
        """The layout of a written audit file (audit.csv/.parquet, review_queue.csv, or a folder holding
        audit.csv), from its sidecar; fr -> nl with integer ids when there is none."""
        path = Path(path)
        path = path / "audit.csv" if path.is_dir() else path
        meta = sidecar_path(path)
        if not meta.is_file() and path.suffix == ".parquet":
            meta = sidecar_path(path.with_suffix(".csv"))
        if not meta.is_file():
            return cls()
        from .sidecar import read_sidecar

        return cls.from_meta(read_sidecar(meta))

    def column(self, name: str) -> str:
        """A column's name in this pair's files. A column that names a side is declared by role
        (`qa_numbers_{source}`, `qa_{target}_{source_language}_prob`): here it gets the pair's codes
        (`qa_numbers_fr`, `qa_nl_french_prob`; `qa_numbers_en`, `qa_nl_english_prob` for en -> nl)."""
        return name.format_map(self._codes) if "{" in name else name

    @property
    def _codes(self) -> dict[str, str]:
        return {"source": self.pair.source, "target": self.pair.target,
                "source_language": language_name(self.pair.source).lower()}

    @property
    def side_codes(self) -> dict[str, str]:
        """{role: language code}: a span's `side` as files write it."""
        return dict(zip(ROLES, self.sides))

    @property
    def audit(self) -> TableSpec:
        return _audit_spec(self)

    @property
    def queue(self) -> TableSpec:
        return _queue_spec(self)


def _audit_columns(layout: Layout) -> tuple[Column, ...]:
    return (
        Column("id", "id"),
        Column("split", "text"),
        Column(layout.question_src, "text"),
        Column(layout.question_tgt, "text"),
        Column("backtranslation", "text"),
        Column("risk", "float", lo=0.0, hi=1.0),
        Column("p_error", "float", required=False, lo=0.0, hi=1.0),  # absent in audits before p_error
        Column("severity", "enum", choices=SEVERITIES),
        Column("flagged", "bool"),
        Column("flags", "text"),
        Column("reasons", "text"),
        Column("spans", "json", required=False, parse=partial(parse_spans, sides=layout.sides)),
    )


def error_score(columns) -> str:
    """The audit's probability of an error: `p_error`, or `risk` in an audit written before p_error (the
    one place that reads that older format; `columns`: a frame's columns)."""
    return "p_error" if "p_error" in columns else "risk"


@cache
def _audit_spec(layout: Layout) -> TableSpec:
    return TableSpec("audit.csv", _audit_columns(layout), key=("id",),
                     row_checks=(_spans_match_text,)).with_string_ids(layout.string_ids)


@cache
def _queue_spec(layout: Layout) -> TableSpec:
    return TableSpec("review_queue.csv", _audit_columns(layout) + (
        Column("queue", "enum", choices=QUEUES),
        Column("stratum", "text"),
        Column("stratum_size", "int", required=False, empty_ok=True, lo=0),
        Column("stratum_sampled", "int", required=False, empty_ok=True, lo=0),
        Column("sample_weight", "float", required=False, empty_ok=True, lo=0.0),
        Column("inclusion_prob", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
        Column("stratum_risk_min", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
        Column("stratum_risk_max", "float", required=False, empty_ok=True, lo=0.0, hi=1.0),
    ), key=("id",), row_checks=(_spans_match_text,)).with_string_ids(layout.string_ids)


BBSARD_LAYOUT = Layout(BBSARD)
AUDIT_COLUMNS = _audit_columns(BBSARD_LAYOUT)
AUDIT = BBSARD_LAYOUT.audit
QUEUE = BBSARD_LAYOUT.queue
