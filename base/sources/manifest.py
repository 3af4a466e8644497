"""A translated benchmark as a small YAML manifest (docs/formats.md, "Manifest"): a `name`, and a
`source` and `target` side, each `{path, lang, format}` with `path` a folder (relative to the
manifest) or an HF id. The sides are joined by query id (`beir.join`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..io import digest_of
from ..languages import LanguagePair, check_code
from ..untrusted import load_yaml
from .beir import join
from .checker import Checker, revision_of
from .model import Dataset
from .registry import formats, side_reader, source

TOP_KEYS = {"name", "source", "target"}
SIDE_KEYS = {"path", "lang", "format", "revision", "qrels"}
REQUIRED_SIDE_KEYS = ("path", "lang", "format")


def is_manifest(src: str) -> bool:
    """A `.yaml`/`.yml` name that is not a folder (a CSV folder may be named so, and stays one)."""
    return src.lower().endswith((".yaml", ".yml")) and not Path(src).is_dir()


def _text(value, label: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{key}: must be a non-empty string", file=label)
    return value.strip()


def _side(spec, label: str, key: str, base: Path) -> dict:
    """One side's keys, checked; `path` resolved against the manifest's folder when it exists there."""
    if not isinstance(spec, dict):
        raise InputError(f"{key}: must be a mapping with keys {', '.join(REQUIRED_SIDE_KEYS)}", file=label)
    unknown = sorted(map(str, set(spec) - SIDE_KEYS))
    if unknown:
        raise InputError(f"{key}.{unknown[0]}: unknown key (known: {', '.join(sorted(SIDE_KEYS))})", file=label)
    missing = [k for k in REQUIRED_SIDE_KEYS if k not in spec]
    if missing:
        raise InputError(f"{key}.{missing[0]}: missing", file=label)
    out = {k: _text(spec[k], label, f"{key}.{k}") for k in spec}
    check_code(out["lang"], file=label, key=f"{key}.lang")
    if out["format"] not in formats():
        raise InputError(f"{key}.format: unknown format {out['format']!r} (known: {', '.join(formats())})", file=label)
    for k in ("path", "qrels"):
        if k in out and (base / out[k]).exists():
            out[k] = str(base / out[k])
    return out


@source("manifest", "a YAML manifest (.yaml/.yml) joining a source and a target benchmark side",
        matches=is_manifest, order=20)
def load(src: str, with_corpus: bool) -> Dataset:
    path = Path(src)
    data = path.read_bytes() if path.is_file() else None
    spec = load_yaml(path, "dataset manifest", data=data)
    if not isinstance(spec, dict):
        raise InputError("a dataset manifest must be a mapping with keys name, source, target", file=src)
    unknown = sorted(map(str, set(spec) - TOP_KEYS))
    if unknown:
        raise InputError(f"{unknown[0]}: unknown key (known: {', '.join(sorted(TOP_KEYS))})", file=src)
    missing = [k for k in ("name", "source", "target") if k not in spec]
    if missing:
        raise InputError(f"{missing[0]}: missing", file=src)
    name = _text(spec["name"], src, "name")
    sides = {k: _side(spec[k], src, k, path.parent) for k in ("source", "target")}
    try:
        pair = LanguagePair(sides["source"]["lang"], sides["target"]["lang"])
    except InputError as exc:
        raise InputError(exc.message, file=src) from None
    checker = Checker()
    read, files = {}, {path.name: digest_of(path)}
    for key, s in sides.items():
        reader = side_reader(s["format"], s["path"])
        read[key] = reader.read(s["path"], with_corpus, checker, key,
                                revision=s.get("revision"), qrels=s.get("qrels"))
        files.update(read[key].files)
    return join(checker, pair, read["source"], read["target"], source=src, revision=revision_of(files),
                files=files, name=name)
