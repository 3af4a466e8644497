"""Strict JSON files: no NaN/Infinity either way, no duplicated key, and typed records with one
`to_dict` / `from_dict` shared by the producer that writes a file and everyone who reads it."""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import dumps, write_json
from bbsard_audit.base.untrusted import load_json

from .files import FileRecord, read_text

T = TypeVar("T")


def read_json(path: str | Path) -> Any:
    """Parsed JSON; `NaN`/`Infinity` literals, a key twice or a truncated file -> one-line InputError."""
    path = Path(path)
    text = read_text(path)

    def no_constant(name: str):
        raise ValueError(f"{name} is not JSON (write null for a missing number)")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"key {twice[0]!r} appears twice in one object")
        return dict(pairs)

    try:
        return load_json(text, parse_constant=no_constant, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg}, column {exc.colno}); truncated?", file=str(path),
                         row=exc.lineno) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON: {exc}", file=str(path)) from None


def write_record(path: str | Path, record: Any) -> FileRecord:
    """Atomically write a record (a `to_dict()` object or plain data) as strict JSON (NaN -> null)."""
    path = Path(path)
    write_json(path, record.to_dict() if hasattr(record, "to_dict") else record)
    return FileRecord.of(path, None)


@dataclass(frozen=True)
class NamedValue:
    """A number a JSON file reports, with its confidence interval when it has one (for reports)."""

    name: str
    value: float | int
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


class Record:
    """Mixin for the dataclass of one JSON file: `to_dict`, a strict `from_dict`, `read`, `write`."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[T], data: Any, source: str = "<memory>") -> T:
        return from_dict(cls, data, source)

    @classmethod
    def read(cls: type[T], path: str | Path) -> T:
        return from_dict(cls, read_json(path), str(path))

    def write(self, path: str | Path) -> FileRecord:
        """Strict JSON; refuses (one line) a record its own reader would reject, before writing."""
        from_dict(type(self), json.loads(dumps(self.to_dict())), str(path))
        return write_record(path, self)


def read_checked(cls: type[T], path: str | Path, what: str) -> T:
    """`cls` read from `path` strictly, its own checks (`__post_init__`'s ValueError) included, as
    one-line InputErrors: `not <what>: <reason>`."""
    try:
        return from_dict(cls, read_json(path), str(path))
    except ValueError as exc:
        raise InputError(f"not {what}: {exc}", file=str(path)) from None


def from_dict(cls: type[T], data: Any, source: str, where: str = "") -> T:
    """Build dataclass `cls` from parsed JSON, checking every field's type; unknown keys and missing
    fields without a default are errors (a producer and its readers share one definition)."""
    if not isinstance(data, dict):
        raise InputError(f"{where or 'top level'} must be an object, found {type(data).__name__}", file=source)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(map(repr, unknown))} in {where or cls.__name__}", file=source)
    values = {}
    for name, f in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise InputError(f"missing key {path!r}", file=source)
            continue
        values[name] = _value(hints[name], data[name], source, path)
    return cls(**values)


def _value(hint: Any, value: Any, source: str, path: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _value(arg, value, source, path)
            except InputError:
                continue
        raise InputError(f"{path} = {value!r} has the wrong type (expected {hint})", file=source)
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, source, path)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise InputError(f"{path} must be a list", file=source)
        items = [_value(args[0] if args else Any, v, source, f"{path}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise InputError(f"{path} must be an object", file=source)
        return {k: _value(args[1] if args else Any, v, source, f"{path}.{k}") for k, v in value.items()}
    if hint is Any:
        return value
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint in (str, bool) and isinstance(value, hint):
        return value
    raise InputError(f"{path} = {value!r} is not {getattr(hint, '__name__', hint)}", file=source)
