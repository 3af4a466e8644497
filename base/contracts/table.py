"""The typed column-rule table: one strict CSV/Parquet reader and one atomic writer per exchanged file.

A `TableSpec` lists one `Column` rule per column. Reading checks the raw file before any cell is
typed: a regular UTF-8 file without NUL bytes, ending with a line end, every record with exactly
the header's number of fields, no column name twice; then every cell against its column's rule
and the key for duplicates; then, when the file's `.meta.json` sidecar records a row count for it,
that count. Any violation is one `InputError` naming file, row (CSV records, header = row 1) and
id — never a dropped row. Writing validates the frame with the same rules first, so a tool never
writes a file it would refuse to read.

CSV cells are spreadsheet-safe (docs/formats.md, "Spreadsheet-safe cells"): a cell a spreadsheet
would run as a formula (leading `=`, `+`, `-`, `@`, tab or CR; plain numbers excepted) is written
with one `'` in front, and so is a cell that already starts with `'` + one of those or `'`; the
reader removes exactly that `'`, so every text reads back exactly. The sidecar's file record says
`"cells": "spreadsheet-safe"`; a file whose sidecar records it without that mark (an older
version's) is read verbatim.

Datasets are not read here: `sources.checker` reads a publisher's files, collecting every problem
for `bbsard-audit validate` rather than stopping at the first (its docstring says why).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import atomic_path, file_problem, sidecar_path, write_sidecar
from bbsard_audit.base.transactions import settled
from bbsard_audit.base.untrusted import text_problem

from .files import FileRecord, read_text
from .sidecar import read_sidecar

TRUE, FALSE = ("true", "1"), ("false", "0")
_ID = re.compile(r"[0-9]+")
STRING_ID = re.compile(r"[^\s,;'\"\x00-\x1f\x7f\ud800-\udfff]+")
"""A string id (BEIR's `PLAIN-2`, `MED-10`): no white space and no list separator or quote, so it stays
one cell of a TREC line, a qrels line and an `article_ids` list; no control character or lone
surrogate, which no output file could hold."""
_INT = re.compile(r"-?[0-9]+")
_COUNT = re.compile(r"-?[0-9]+(\.0*)?")  # pandas writes an integer column holding a NaN as 3.0
KINDS = ("id", "sid", "int", "float", "bool", "text", "enum", "json", "any")
FORMULA_START = frozenset("=+-@\t\r")
_NUMBER = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")
MAX_CELL = csv.field_size_limit() - 1
"""The longest text a CSV cell may hold: the csv reader's field limit, less the `'` of `shield`."""
SAFE_CELLS = "spreadsheet-safe"
"""The sidecar mark (file record `cells`) of a CSV written with `shield`."""


def shield(text: str) -> str:
    """A cell as written: `'` + text when a spreadsheet would run it as a formula, or when it looks
    like an escape already (so `unshield` gives every text back); plain numbers stay as they are."""
    formula = text[:1] in FORMULA_START and not _NUMBER.fullmatch(text)
    return "'" + text if formula or _escaped(text) else text


def unshield(text: str) -> str:
    """The text of a written cell: `shield` undone."""
    return text[1:] if _escaped(text) else text


def _escaped(text: str) -> bool:
    """A `'` followed by a formula start or another `'`: the one form `shield` writes."""
    return text[:1] == "'" and (text[1:2] in FORMULA_START or text[1:2] == "'")


def parse_flag(value: object) -> bool:
    """The one reading of a boolean cell such as `flagged`: true/false or 1/0, any case."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ValueError(f"{value!r} is not true/false")


def parse_id(value: object, strings: bool = False) -> int | str:
    """A question id: plain ASCII digits (no sign, no decimals, no other script's digits); with `strings`
    (a benchmark with string ids, e.g. BEIR's `PLAIN-2`) the id's text, kept as it is."""
    text = str(value).strip()
    if strings:
        if not STRING_ID.fullmatch(text):
            raise ValueError(f"{value!r} is not a valid id (no white space, comma, semicolon or quote)")
        return text
    if not _ID.fullmatch(text):
        raise ValueError(f"{value!r} is not an integer")
    return int(text)


def as_id(value: object) -> int | str:
    """An id as the stages key it: a string id stays a str, anything else (a numpy int) an int."""
    return value if isinstance(value, str) else int(value)


def id_order(value: int | str) -> tuple:
    """Sort key for ids (also ids as text, like run ids): integers by value, string ids after them by
    text, never a TypeError."""
    text = str(value)
    return (0, int(text), "") if _ID.fullmatch(text) else (1, 0, text)


@dataclass(frozen=True)
class Column:
    """The rule for one column. `kind`: id | sid (a string id) | int | float | bool | text | enum | json |
    any (only required to be present: a number column when every cell is a number, else text).

    `required`: the column must be present. `empty_ok`: an empty cell is allowed (NaN for numbers,
    "" for text/enum, None for json). `choices`: the enum's values. `lo`/`hi`: inclusive bounds.
    `parse`: text -> value raising ValueError with a short reason (json cells, patterned text).
    """

    name: str
    kind: str = "text"
    required: bool = True
    empty_ok: bool = False
    choices: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    parse: Callable[[str], Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown column kind {self.kind!r}")

    def value(self, text: str) -> Any:
        """The typed value of one cell; ValueError with a short reason when the rule is broken."""
        if text == "":
            if not self.empty_ok and self.kind not in ("text", "any"):
                raise ValueError("is empty")
            return {"float": math.nan, "int": math.nan, "json": None, "bool": None}.get(self.kind, "")
        if self.parse is not None:
            return self.parse(text)
        if self.kind in ("id", "sid"):
            return parse_id(text, strings=self.kind == "sid")
        if self.kind == "int":
            if not _COUNT.fullmatch(text):
                raise ValueError(f"{text!r} is not an integer")
            return self._bounded(int(float(text)) if "." in text else int(text))
        if self.kind == "float":
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"{text!r} is not a number") from None
            if not math.isfinite(number):
                raise ValueError(f"{text!r} is not a finite number (leave the cell empty when missing)")
            return self._bounded(number)
        if self.kind == "bool":
            return parse_flag(text)
        if self.kind == "enum":
            if text not in self.choices:
                raise ValueError(f"{text!r} is not one of {', '.join(c or '(empty)' for c in self.choices)}")
            return text
        return text

    def _bounded(self, number):
        if (self.lo is not None and number < self.lo) or (self.hi is not None and number > self.hi):
            raise ValueError(f"{number!r} is outside [{self.lo}, {self.hi}]")
        return number


def cell_problem(text: str) -> str | None:
    """Why `text` cannot be a CSV cell that reads back (a NUL, a lone surrogate, over `MAX_CELL`), else None."""
    if len(text) > MAX_CELL:
        return f"is {len(text):,} characters long, more than the {MAX_CELL:,} a cell may hold"
    return text_problem(text)


def _cell_text(value: Any) -> str:
    """A frame cell as the text the CSV writer puts in the file (so writing checks what reading will)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    return str(value)


@dataclass(frozen=True)
class TableSpec:
    """One exchanged table: its column rules, the columns that must be unique together, row checks."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    row_checks: tuple[Callable[[dict], str | None], ...] = field(default=(), compare=False)

    @property
    def names(self) -> list[str]:
        """The column names, in file order."""
        return [c.name for c in self.columns]

    @property
    def required(self) -> list[str]:
        return [c.name for c in self.columns if c.required]

    def with_string_ids(self, strings: bool = True) -> "TableSpec":
        """This spec with its `id` columns holding string ids (`sid`); itself when `strings` is false."""
        if not strings:
            return self
        columns = tuple(replace(c, kind="sid") if c.kind == "id" else c for c in self.columns)
        return replace(self, columns=columns)

    # ------------------------------------------------------------------ reading

    def read(self, path: str | Path, *, edited: bool = False) -> pd.DataFrame:
        """The typed frame of a CSV (or `.parquet`) file; `InputError` on any broken rule. `edited`: the
        file was changed since it was written, so its sidecar's row count no longer describes it."""
        path = Path(path)
        parquet = path.suffix.lower() == ".parquet"
        header, records = _parquet_records(path) if parquet else read_records(path)
        record = file_record(path)
        if not parquet and (record is None or record.get("cells") == SAFE_CELLS):  # else: an older version's
            records = [(row_no, [unshield(f) for f in fields]) for row_no, fields in records]
        frame = self.typed(header, records, str(path))
        if not edited:
            check_rows(path, len(frame), record)
        return frame

    def typed(self, header: Sequence[str], records: Sequence[tuple[int, Sequence[str]]], source: str) -> pd.DataFrame:
        """Apply the column rules to text records [(row number, fields)] under `header`."""
        header = list(header)
        if len(set(header)) != len(header):
            twice = sorted({h for h in header if header.count(h) > 1})
            raise InputError(f"column(s) {', '.join(twice)} appear more than once in the header", file=source, row=1)
        missing = [c for c in self.required if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)} (found: {', '.join(header) or 'none'})",
                             file=source)
        rules = {c.name: c for c in self.columns}
        id_at = header.index("id") if "id" in header else None
        values: dict[str, list] = {h: [] for h in header}
        seen: dict[tuple, int] = {}
        for row_no, fields in records:
            rid = fields[id_at].strip() if id_at is not None else None
            row = {}
            for name, text in zip(header, fields):
                rule = rules.get(name)
                if rule is None:
                    row[name] = text
                    continue
                try:
                    row[name] = rule.value(text if rule.kind == "text" else text.strip())
                except ValueError as exc:
                    raise InputError(f"{name} {exc}", file=source, row=row_no,
                                     id=(rid or None) if name != "id" else None) from None
            for check in self.row_checks:
                problem = check(row)
                if problem:
                    raise InputError(problem, file=source, row=row_no, id=rid or None)
            if self.key:
                key = tuple(row[k] for k in self.key)
                if key in seen:
                    what = "id" if self.key == ("id",) else f"({', '.join(self.key)})"
                    raise InputError(f"duplicate {what}: already on row {seen[key]}", file=source, row=row_no,
                                     id=rid or None)
                seen[key] = row_no
            for name in header:
                values[name].append(row[name])
        frame = pd.DataFrame({h: _column(values[h], rules.get(h)) for h in header}, columns=list(header))
        return frame

    # ------------------------------------------------------------------ writing

    def check(self, frame: pd.DataFrame, source: str = "<output>") -> None:
        """Refuse to write a frame this spec would not read back (a bug, reported as one line)."""
        header = [str(c) for c in frame.columns]
        records = [(i, [_cell_text(v) for v in row]) for i, row in
                   enumerate(frame.itertuples(index=False, name=None), start=2)]
        self.typed(header, records, source)
        for row_no, fields in records:  # what the file itself could not hold, or its reader take back
            for name, text in zip(header, fields):
                problem = cell_problem(text)
                if problem:
                    raise InputError(f"{name} {problem}", file=source, row=row_no,
                                     id=fields[header.index("id")] if "id" in header else None)

    def write_file(self, path: str | Path, frame: pd.DataFrame, *, parquet: bool = False) -> FileRecord:
        """Atomically write `frame` as CSV (or Parquet); return the record for the sidecar."""
        path = Path(path)
        self.check(frame, path.name)
        as_json = [c.name for c in self.columns if c.kind == "json" and c.name in frame.columns]
        if as_json:  # parsed cells (e.g. spans lists) go back to the compact JSON text they came from
            frame = frame.assign(**{c: frame[c].map(lambda v: v if isinstance(v, str) else _cell_text(v))
                                    for c in as_json})
        csv_file = not (parquet or path.suffix.lower() == ".parquet")
        with atomic_path(path) as tmp:
            if csv_file:
                cells = frame.map(lambda v: shield(v) if isinstance(v, str) else v)
                # the csv module quotes a cell holding "\n" but not one holding a lone "\r", which a
                # reader takes for a line end: such a file gets every cell quoted
                cr = cells.map(lambda v: isinstance(v, str) and "\r" in v).to_numpy().any()
                cells.to_csv(tmp, index=False, lineterminator="\n", quoting=csv.QUOTE_ALL if cr else csv.QUOTE_MINIMAL)
            else:
                frame.to_parquet(tmp, index=False)
        return FileRecord.of(path, len(frame), SAFE_CELLS if csv_file else None)

    def write(self, path: str | Path, frame: pd.DataFrame, **sidecar: Any) -> Path:
        """Write `frame` and its sidecar (`sidecar` fields + the file's row count and sha256)."""
        record = self.write_file(path, frame)
        write_sidecar(path, files=[record], **sidecar)
        return Path(path)


def _column(values: list, rule: Column | None):
    """A column of typed cells; undeclared columns are integers or numbers when every cell is one, else text."""
    if rule is None or rule.kind == "any":
        if values and all(_INT.fullmatch(v.strip()) for v in values):
            return pd.Series([int(v) for v in values], dtype="int64")
        try:
            numbers = [float(v) if v.strip() != "" else math.nan for v in values]
        except ValueError:
            return pd.Series(values, dtype=object)
        return pd.Series(numbers, dtype=float)
    if rule.kind in ("float",) or (rule.kind == "int" and any(isinstance(v, float) for v in values)):
        return pd.Series(values, dtype=float)
    if rule.kind in ("id", "int"):
        return pd.Series(values, dtype="int64")
    if rule.kind == "bool" and None not in values:
        return pd.Series(values, dtype=bool)
    return pd.Series(values, dtype=object)


def read_records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and [(row number, fields)] of a CSV, checking the file itself is whole and plain."""
    text = read_text(path)
    if not text.strip():
        raise InputError("file is empty", file=str(path))
    if not text.endswith(("\n", "\r")):
        raise InputError("truncated: the last line has no line end", file=str(path))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        for fields in reader:
            rows.append(fields)
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({exc}); truncated?", file=str(path), row=len(rows) + 1) from None
    header = [h.strip() for h in rows[0]]
    records = []
    for row_no, fields in enumerate(rows[1:], start=2):
        if not fields:  # a blank line carries nothing
            continue
        if len(fields) != len(header):
            last = row_no == len(rows)
            raise InputError(f"has {len(fields)} field(s), the header has {len(header)}"
                             + (" (truncated file?)" if last and len(fields) < len(header) else ""),
                             file=str(path), row=row_no)
        records.append((row_no, fields))
    return header, records


def _parquet_records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    problem = file_problem(settled(path))
    if problem:
        raise InputError(problem, file=str(path))
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a damaged file
        raise InputError(f"unreadable Parquet ({type(exc).__name__}); truncated?", file=str(path)) from None
    return [str(c) for c in frame.columns], [(i, [_cell_text(v) for v in row]) for i, row in
                                             enumerate(frame.itertuples(index=False, name=None), start=2)]


def file_record(path: Path) -> dict | None:
    """What the file's sidecar records about it (rows, sha256, cells); None without one."""
    meta = sidecar_path(path)
    if not meta.is_file():
        return None
    record = (read_sidecar(meta).get("files") or {}).get(path.name)
    return record if isinstance(record, dict) else None


def check_rows(path: Path, rows: int, record: dict | None) -> None:
    """When the file's sidecar records its row count, the file must still have exactly that many."""
    meta = sidecar_path(path)
    if record is not None and isinstance(record.get("rows"), int) and record["rows"] != rows:
        raise InputError(f"has {rows} data row(s) but its sidecar {meta.name} records {record['rows']} "
                         "(truncated, or edited after writing: restore it or remove the sidecar)", file=str(path))

