"""A translated benchmark as a small YAML manifest (docs/formats.md, "Manifest"): a `name`, and a
`source` and `target` side, each `{path, lang, format}` with `path` a folder (relative to the
manifest's folder, never the current one) or an HF id (`owner/name`); optionally its `license` (an identifier)
and `citation`, which a release's card quotes. The sides are joined by query id (`beir.join`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import InputError
from ..io import digest_of
from ..languages import LanguagePair, check_code
from ..untrusted import load_yaml
from .beir import join
from .checker import Checker, revision_of
from .corpus import CorpusPair
from .model import Dataset
from .registry import formats, side_reader, source

TOP_KEYS = {"name", "source", "target", "license", "citation"}
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+\-]{0,63}")
"""A licence identifier as the hub's cards take it (`cc-by-4.0`, `apache-2.0`, `other`)."""
MAX_CITATION = 10_000
SIDE_KEYS = {"path", "lang", "format", "revision", "qrels"}
REQUIRED_SIDE_KEYS = ("path", "lang", "format")


def is_manifest(src: str) -> bool:
    """A `.yaml`/`.yml` name that is not a folder (a CSV folder may be named so, and stays one)."""
    return src.lower().endswith((".yaml", ".yml")) and not Path(src).is_dir()


def _text(value, label: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{key}: must be a non-empty string", file=label)
    return value.strip()


def side_spec(spec, label: str, key: str, base: Path) -> dict:
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
        if k in out:
            out[k] = _located(out[k], base, label, f"{key}.{k}")
    return out


HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
"""A hub dataset id, `owner/name`: what a side's path that is not found beside the manifest may be."""


def _located(value: str, base: Path, label: str, key: str) -> str:
    """A side's `path` or `qrels`: a local path, resolved against the manifest's folder only (never the
    current one), or a hub id. A value that looks local (absolute, `./`, `../`, `~`, or not of the
    `owner/name` shape) and is not there is an error, not a hub id to try."""
    local = Path(value).expanduser()
    local = local if local.is_absolute() else base / local
    if os.path.lexists(local):
        return str(local)
    if value.startswith((".", "~", "/")) or not HF_ID.fullmatch(value):
        raise InputError(f"{key}: path does not exist: {value} (looked for {local}; a hub dataset id is "
                         "owner/name)", file=label)
    return value


def corpus(src: str, max_doc_chars: int) -> CorpusPair:
    """Each side's documents from its format's side reader (SideReader.open_corpus)."""
    path = Path(src)
    spec = load_yaml(path, "dataset manifest")
    if not isinstance(spec, dict) or not {"source", "target"} <= set(spec):
        raise InputError("a dataset manifest must be a mapping with keys name, source, target", file=src)
    sides, files = [], {path.name: digest_of(path)}
    for key in ("source", "target"):
        s = side_spec(spec[key], src, key, path.parent)
        side, name, pin = side_reader(s["format"], s["path"]).open_corpus(s["path"], s["lang"], max_doc_chars,
                                                                          s.get("revision"))
        sides.append(side)
        files[f"{key}/{name}"] = pin
    try:
        pair = LanguagePair(sides[0].lang, sides[1].lang)
    except InputError as exc:
        raise InputError(exc.message, file=src) from None
    return CorpusPair(path.name, pair, (sides[0], sides[1]), files)


@source("manifest", "a YAML manifest (.yaml/.yml) joining a source and a target benchmark side",
        matches=is_manifest, order=20, corpus=corpus)
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
    sides = {k: side_spec(spec[k], src, k, path.parent) for k in ("source", "target")}
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
    dataset = join(checker, pair, read["source"], read["target"], source=src, revision=revision_of(files),
                   files=files, name=name)
    dataset.license, dataset.citation = _licence(spec, src), _citation(spec, src)
    return dataset


def _licence(spec: dict, src: str) -> str | None:
    if "license" not in spec:
        return None
    value = spec["license"]
    if not isinstance(value, str) or not LICENSE_ID.fullmatch(value):
        raise InputError("license: must be a licence identifier such as cc-by-4.0 (lower case letters, digits, "
                         "'.', '+', '-')", file=src)
    return value


def _citation(spec: dict, src: str) -> str | None:
    if "citation" not in spec:
        return None
    value = _text(spec["citation"], src, "citation")
    if len(value) > MAX_CITATION or "\x00" in value:
        raise InputError(f"citation: must be at most {MAX_CITATION:,} characters of text", file=src)
    return value
