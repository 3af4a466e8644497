"""Strict configuration files: every key known, every number finite, a table where a table belongs.

A config is checked against a template (the shipped defaults): an unknown or misspelt key or section
is an error naming the nearest valid one ("did you mean ..."), never silently ignored.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError
from .redact import is_secret_key
from .untrusted import load_yaml


def read_toml(path: str | Path, what: str = "config") -> dict:
    """A TOML (or, for `.yaml`/`.yml`, YAML) file as a dict; any problem is one line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} file not found" if not path.exists() else f"{what} is not a regular file",
                         file=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {exc}", file=str(path)) from None
    if path.suffix.lower() in (".yaml", ".yml"):
        data = load_yaml(path, what, data=text.encode("utf-8"), unreadable=f"cannot parse {what}")
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"cannot parse {what}: {str(exc).splitlines()[0]}", file=str(path)) from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError(f"{what} must be a table/mapping at the top level", file=str(path))
    return dict(data)


def suggest(name: str, valid) -> str:
    """`; did you mean 'x'?` for the closest valid name, or the list of valid names."""
    valid = sorted(map(str, valid))
    close = difflib.get_close_matches(str(name), valid, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; valid: {', '.join(valid)}" if valid else ""


def check_against(data: Mapping, template: Mapping, *, file: str | None = None, prefix: str = "") -> None:
    """Every key of `data` must exist in `template`, with the same shape (table or value) and kind:
    numbers finite (an integer where the template has an integer), strings and booleans as such."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in template:
            kind = "section" if isinstance(value, Mapping) else "key"
            where = f" in [{prefix[:-1]}]" if prefix else ""
            raise InputError(f"unknown {kind} {name!r}{where}{suggest(key, template)}", file=file)
        expected = template[key]
        if isinstance(expected, Mapping):
            if not isinstance(value, Mapping):
                raise InputError(f"{name} must be a table ([{name}]), not {_kind(value)} {value!r}", file=file)
            check_against(value, expected, file=file, prefix=f"{name}.")
        elif isinstance(value, Mapping):
            raise InputError(f"{name} must be a value like {expected!r}, not a table", file=file)
        else:
            check_value(name, value, expected, file=file)


def check_value(name: str, value: Any, expected: Any, *, file: str | None = None) -> None:
    if isinstance(expected, bool):
        ok = isinstance(value, bool)
    elif isinstance(expected, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(expected, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(value):
            raise InputError(f"{name} = {value!r}: must be a finite number", file=file)
    else:
        ok = isinstance(value, type(expected))
    if not ok:
        raise InputError(f"{name} must be {_kind(expected)} (like {expected!r}), not {_kind(value)}{_shown(name, value)}",
                         file=file)


def _shown(name: str, value: Any) -> str:
    """` <value>` for a message; nothing for a credential's key (its value is the secret, whatever its type)."""
    return "" if is_secret_key(name) else f" {value!r}"


_KINDS: tuple[tuple[type, str], ...] = ((bool, "a boolean"), (int, "an integer"), (float, "a number"),
                                        (str, "a string"), (Mapping, "a table"), (list, "a list"))
"""First match wins: a bool is also an int."""


def _kind(value: Any) -> str:
    return next((name for kind, name in _KINDS if isinstance(value, kind)), type(value).__name__)
