"""The one CSV-cell neutraliser: every CSV the tool writes from outside text is spreadsheet-safe.

A cell a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`, tab or CR; plain numbers
excepted: `=HYPERLINK(...)`, `-2+3+cmd|' /C calc'!A0`) is written with one `'` in front, and so is a
cell that already starts with `'` + one of those or `'`; `unshield` removes exactly that `'`, so a
reader of the tool's own files gets every text back (docs/formats.md, "Spreadsheet-safe cells").
A file written so is marked `SAFE_CELLS` in its sidecar's file record.
"""

from __future__ import annotations

import csv
import re
from typing import Any

FORMULA_START = frozenset("=+-@\t\r")
_NUMBER = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")
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


def to_safe_csv(frame: Any, target: Any) -> None:
    """`frame` as UTF-8 CSV with every text cell (and column name) shielded. The csv module quotes a
    cell holding "\\n" but not one holding a lone "\\r", which a reader takes for a line end: such a
    file gets every cell quoted."""
    cells = frame.map(lambda v: shield(v) if isinstance(v, str) else v)
    cells.columns = [shield(c) if isinstance(c, str) else c for c in cells.columns]
    cr = cells.map(lambda v: isinstance(v, str) and "\r" in v).to_numpy().any()
    cells.to_csv(target, index=False, lineterminator="\n", quoting=csv.QUOTE_ALL if cr else csv.QUOTE_MINIMAL)
