"""The dataset API the stages use: load any source (`load_dataset`) into typed objects, and find a
recorded dataset again. The sources themselves are modules of `bbsard_audit.base.sources` (one each:
`sample`, a CSV folder, `hf:NAME[@REV]`, a BEIR manifest), declared in its registry.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from .languages import BBSARD, LanguagePair
from .sources import load_dataset
from .sources.hub import HUB_PROBE_TIMEOUT_S, check_hub_reachable as _check_hub_reachable
from .sources.model import (ARTICLE_COLUMNS, LANGS, META_COLUMNS, PLAIN_INT, QUESTION_COLUMNS,
                            REQUIRED_QUESTION_COLUMNS, SAMPLE, SPLITS, Corpus, Dataset, Issue, QuestionPair)
from .sources.sample import sample_dir

__all__ = ["ARTICLE_COLUMNS", "BBSARD", "HUB_PROBE_TIMEOUT_S", "LANGS", "META_COLUMNS", "PLAIN_INT",
           "QUESTION_COLUMNS", "REQUIRED_QUESTION_COLUMNS", "SAMPLE", "SPLITS", "Corpus", "Dataset", "Issue",
           "LanguagePair", "QuestionPair", "load_dataset", "recorded_source", "remember_source", "same_data",
           "sample_dir", "_check_hub_reachable"]


# ---------------------------------------------------------------- finding a recorded dataset again

def _known_sources_file() -> Path:
    from .embeddings import default_cache_dir

    return default_cache_dir().parent / "local_datasets.json"


def _source_key(provenance: Mapping) -> str:
    return f"{provenance.get('source')}@{provenance.get('revision')}"


def remember_source(src: str, provenance: Mapping) -> None:
    """Note on this machine where a local source (a CSV folder or `hf:PATH`) lies, keyed by what outputs
    record of it (source id + revision), in the user's cache (`local_datasets.json`): shareable outputs
    stay path-free and `recorded_source` still finds the data they name. Hub ids and `sample` need no note."""
    prefix, path = ("hf:", src[3:]) if src.startswith("hf:") else ("", src)
    if src == SAMPLE or not Path(path).exists():
        return
    from .io import write_json

    known = _known_sources()
    known[_source_key(provenance)] = prefix + os.path.abspath(path)
    try:
        write_json(_known_sources_file(), known)
    except OSError:  # a read-only cache only loses the convenience
        pass


def _known_sources() -> dict[str, str]:
    import json

    try:
        known = json.loads(_known_sources_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in known.items() if isinstance(v, str)} if isinstance(known, dict) else {}


def recorded_source(provenance: Mapping) -> str | None:
    """The `--dataset` that loads the data a sidecar's `dataset` record names: `sample`, a local folder
    noted by `remember_source` on this machine, or the hub id at its recorded commit; None if unknown here."""
    source, revision = str(provenance.get("source") or ""), str(provenance.get("revision") or "")
    local = _known_sources().get(_source_key(provenance))
    if local is not None or source == SAMPLE:  # a folder of the user's may be named `sample` too
        return local or SAMPLE
    if source.startswith("hf:") and "/" in source:  # a hub id (a local copy is named by its folder only)
        pinned = revision and not revision.startswith(("sha256:", "main"))
        return f"{source}@{revision}" if pinned else source
    return None


def same_data(ds: Dataset, provenance: Mapping) -> bool:
    """`ds` holds the files a sidecar recorded (same sha256), or the same revision when none were recorded."""
    files = provenance.get("files_sha256") or {}
    if files:
        return all(ds.files.get(name) == digest for name, digest in files.items())
    recorded = str(provenance.get("revision") or "")
    return ds.revision == recorded or recorded.startswith("main")  # an unpinned hub load: any commit
