"""Which questions each subset holds (full / verified / corrected / flagged / unflagged), read from
expert verdicts and audit files, and how FR and NL runs of one system are paired for the gap."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.verdicts import VERDICTS, Verdicts
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import LanguagePair

from .options import DEFAULT_KEEP

__all__ = ["Verdicts", "read_flags", "build_subsets", "language_pairs", "question_groups", "SUBSETS"]
SUBSETS = ("full", "verified", "corrected", "flagged", "unflagged")
_LANG_SUFFIX = r"^(?P<base>.+?)[_\-.](?P<lang>{})$"


def read_flags(path: str | Path) -> dict[str, bool]:
    """Question id -> flagged, from an audit.csv read through its contract (its sidecar's pair and ids)."""
    frame = Layout.of(path).audit.read(path)
    return {str(q): bool(f) for q, f in zip(frame["id"], frame["flagged"])}


def build_subsets(full: Sequence[str], verdicts: Verdicts | None = None,
                  keep: Iterable[str] = DEFAULT_KEEP, flags: Mapping[str, bool] | None = None,
                  corrected: bool = False) -> dict[str, tuple[str, ...]]:
    """Subset name -> question ids (in `full` order). `verified` = verdict in `keep` (questions
    without a verdict are not verified); `corrected` = the full set, Dutch questions replaced
    by the experts' corrections (the caller re-retrieves them); flagged/unflagged from the audit."""
    keep = tuple(keep)
    bad = [k for k in keep if k not in VERDICTS]
    if bad:
        raise InputError(f"--keep {','.join(bad)}: verdicts are {', '.join(VERDICTS)}")
    subsets = {"full": tuple(full)}
    if verdicts is not None:
        subsets["verified"] = tuple(q for q in full if verdicts.verdict.get(q) in keep)
        if corrected:
            subsets["corrected"] = tuple(full)
    if flags is not None:
        subsets["flagged"] = tuple(q for q in full if flags.get(q) is True)
        subsets["unflagged"] = tuple(q for q in full if flags.get(q) is False)
    return subsets


def language_pairs(names: Sequence[str], pair: LanguagePair) -> dict[str, tuple[str, str]]:
    """System base name -> (source run, target run), from names ending in the pair's codes: _fr/_nl
    (or -fr, .fr) for bBSARD, _en/_nl for an English -> Dutch benchmark."""
    suffix = re.compile(_LANG_SUFFIX.format("|".join(map(re.escape, pair))), re.IGNORECASE)
    found: dict[str, dict[str, str]] = {}
    for name in names:
        match = suffix.match(name)
        if match:
            found.setdefault(match["base"], {})[match["lang"].lower()] = name
    return {base: (langs[pair.source], langs[pair.target]) for base, langs in found.items() if len(langs) == 2}


def question_groups(qids: Sequence[str], verdicts: Verdicts | None,
                    flags: Mapping[str, bool] | None) -> dict[str, dict[str, tuple[str, ...]]]:
    """{"all": {"all": qids}, "verdict": {correct: ..., none: ...}, "flag": {flagged: ..., ...}}."""
    groups = {"all": {"all": tuple(qids)}}
    if verdicts is not None:
        groups["verdict"] = {v: tuple(q for q in qids if verdicts.verdict.get(q, "none") == v)
                             for v in (*VERDICTS, "none")}
    if flags is not None:
        groups["flag"] = {"flagged": tuple(q for q in qids if flags.get(q) is True),
                          "unflagged": tuple(q for q in qids if flags.get(q) is False),
                          "not_audited": tuple(q for q in qids if q not in flags)}
    return {level: {g: ids for g, ids in by.items() if ids} for level, by in groups.items()}
