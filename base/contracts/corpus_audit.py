"""corpus_audit.parquet (docs/corpus.md): one row per document pair of a corpus audit, written by
the corpus engines from `audit/corpus/documents.py` OUTPUT_SCHEMA, read back here strictly.

The reader checks the file before trusting a cell: the leading columns in order with their Arrow
types, every further column a `doc_*` signal of type float64, int64 or bool (or the LLM judge's
optional `judge_mqm` float64 and `judge_status` string, "" | judged | failed), ids non-empty and
unique, risk in [0, 1], a known severity, non-negative character counts, excerpts of at most 300
characters, and each `spans` cell a JSON array of {side, start, end, text, category, flag} with a
language-code side and a known category. A violation is one InputError naming file, row and id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import atomic_path

from .audit import SEVERITIES, SPAN_CATEGORIES, SPAN_KEYS

NAME = "corpus_audit.parquet"
LEADING = (("id", pa.string()), ("risk", pa.float64()), ("severity", pa.string()), ("flagged", pa.bool_()),
           ("flags", pa.string()), ("reasons", pa.string()), ("spans", pa.string()), ("source_chars", pa.int64()),
           ("target_chars", pa.int64()), ("source_excerpt", pa.string()), ("target_excerpt", pa.string()))
SIGNAL_TYPES = (pa.float64(), pa.int64(), pa.bool_())
JUDGE_COLUMNS = {"judge_mqm": pa.float64(), "judge_status": pa.string()}
"""Added by `audit corpus --judge` (audit/corpus/judge.py)."""
JUDGE_STATUSES = ("", "judged", "failed")
EXCERPT = 300


def check_spans(text: str) -> str | None:
    """Why a `spans` cell is invalid, else None."""
    try:
        spans = json.loads(text)
    except ValueError:
        return "spans is not JSON"
    if not isinstance(spans, list):
        return "spans is not a JSON array"
    for i, span in enumerate(spans):
        if not isinstance(span, dict) or set(span) != set(SPAN_KEYS):
            return f"spans[{i}] must have exactly the keys {', '.join(SPAN_KEYS)}"
        if any(not isinstance(span[k], t) or isinstance(span[k], bool) for k, t in SPAN_KEYS.items()):
            return f"spans[{i}] has a value of the wrong type"
        if not (len(span["side"]) == 2 and span["side"].isalpha() and span["side"].islower()):
            return f"spans[{i}] side {span['side']!r} is not a language code"
        if span["category"] not in SPAN_CATEGORIES:
            return f"spans[{i}] category {span['category']!r} is not one of {', '.join(SPAN_CATEGORIES)}"
        if not 0 <= span["start"] <= span["end"] or span["end"] - span["start"] != len(span["text"]):
            return f"spans[{i}] offsets {span['start']}-{span['end']} do not fit its text"
    return None


def check_schema(schema: pa.Schema, label: str) -> None:
    names = schema.names
    for k, (name, kind) in enumerate(LEADING):
        if k >= len(names) or names[k] != name:
            found = names[k] if k < len(names) else "none"
            raise InputError(f"column {k + 1} must be {name!r}, found {found!r}", file=label)
        if schema.field(k).type != kind:
            raise InputError(f"column {name!r} must be {kind}, found {schema.field(k).type}", file=label)
    for f in list(schema)[len(LEADING):]:
        if f.name in JUDGE_COLUMNS:
            if f.type != JUDGE_COLUMNS[f.name]:
                raise InputError(f"column {f.name!r} must be {JUDGE_COLUMNS[f.name]}, found {f.type}", file=label)
        elif not f.name.startswith("doc_") or f.type not in SIGNAL_TYPES:
            raise InputError(f"column {f.name!r} must be a doc_* signal of type float64, int64 or bool, "
                             f"found {f.type}", file=label)
    if len(set(names)) != len(names):
        raise InputError("a column name appears twice", file=label)


def validate(table: pa.Table, label: str) -> None:
    """Every rule of the module docstring; the first violation as one InputError."""
    check_schema(table.schema, label)
    check_rows(table, label)


def check_rows(table: pa.Table, label: str, numbered: bool = True) -> None:
    """The row rules of the columns `table` holds (a reader may read some of a file's columns only);
    `numbered` False: `table` is a selection of rows, a violation names its id but no row."""
    present = set(table.column_names)
    columns = {name: table.column(name).to_pylist() for name, _ in LEADING if name in present}
    status = table.column("judge_status").to_pylist() if "judge_status" in present else None
    seen: set[str] = set()
    for row, doc in enumerate(columns["id"]):
        def bad(message: str):
            return InputError(message, file=label, row=row + 1 if numbered else None, id=doc)
        if not doc:
            raise bad("id is empty")
        if doc in seen:
            raise bad("duplicate id")
        seen.add(doc)
        if "risk" in columns and (columns["risk"][row] is None or not 0.0 <= columns["risk"][row] <= 1.0):
            raise bad(f"risk {columns['risk'][row]!r} is not in [0, 1]")
        if "severity" in columns and columns["severity"][row] not in SEVERITIES:
            raise bad(f"severity {columns['severity'][row]!r} is not one of {', '.join(SEVERITIES)}")
        for name in ("flagged", "flags", "reasons", "spans", "source_excerpt", "target_excerpt"):
            if name in columns and columns[name][row] is None:
                raise bad(f"{name} is empty")
        for name in ("source_chars", "target_chars"):
            if name in columns and (columns[name][row] is None or columns[name][row] < 0):
                raise bad(f"{name} {columns[name][row]!r} is not a count")
        for name in ("source_excerpt", "target_excerpt"):
            if name in columns and len(columns[name][row]) > EXCERPT:
                raise bad(f"{name} is longer than {EXCERPT} characters")
        if status is not None and status[row] not in JUDGE_STATUSES:
            raise bad(f"judge_status {status[row]!r} is not one of {', '.join(map(repr, JUDGE_STATUSES))}")
        problem = check_spans(columns["spans"][row]) if "spans" in columns else None
        if problem:
            raise bad(problem)


def read(path: str | Path, columns: tuple[str, ...] | None = None, flagged_only: bool = False) -> pd.DataFrame:
    """The validated table as a DataFrame (one InputError line on any violation). `columns` (id
    first): read and check only these, the schema whole; `flagged_only`: the flagged rows only (a
    violation then names the id, not a row). A corpus of millions of documents is read without the
    excerpts, reasons and spans of its unflagged documents."""
    path = Path(path)
    label = path.name
    if columns is not None and (not columns or columns[0] != "id"):
        raise ValueError("columns must start with 'id'")
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file ({str(exc).splitlines()[0][:120]})", file=label) from None
    check_schema(schema, label)  # before reading: every leading column is there, with its type
    try:
        table = pq.read_table(path, columns=list(columns) if columns is not None else None,
                              filters=[("flagged", "==", True)] if flagged_only else None)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file ({str(exc).splitlines()[0][:120]})", file=label) from None
    check_rows(table, label, numbered=not flagged_only)
    return table.to_pandas()


def write(table: pa.Table, path: str | Path) -> Path:
    """Validate, then write atomically (a reader never sees half a file)."""
    path = Path(path)
    validate(table, path.name)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path
