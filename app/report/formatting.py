"""How the report writes a cell: numbers, shares and lists, and how many rows a long table shows open.
Shared by every section module, below all of them."""

from __future__ import annotations

import math

import numpy as np

VISIBLE_ROWS = 5
"""Long tables show this many rows open; the rest is folded in a <details> (all of it in the CSV)."""


def num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer() and abs(value) >= 1000:
            return f"{int(value):,}"
        if value != 0 and abs(value) < 10 ** -digits:
            return f"{value:.1g}" if abs(value) >= 1e-4 else f"{value:.1e}"  # a tiny p-value is not 0.000
        return f"{value:.{digits}f}"
    return str(value)


def pct(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,}"


def split_list(value, sep: str) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [part.strip() for part in str(value).split(sep) if part.strip()]
