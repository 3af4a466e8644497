"""Which questions each subset holds (full / verified / corrected / flagged / unflagged), read from
expert verdicts and audit files, and how FR and NL runs of one system are paired for the gap."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

from bbsard_audit.errors import InputError

VERDICTS = ("correct", "minor", "legal")
DEFAULT_KEEP = ("correct", "minor")
SUBSETS = ("full", "verified", "corrected", "flagged", "unflagged")
_LANG_SUFFIX = re.compile(r"^(?P<base>.+?)[_\-.](?P<lang>fr|nl)$", re.IGNORECASE)


@dataclass(frozen=True)
class Verdicts:
    """Expert verdict per question id, and the corrected Dutch question where one was given."""

    verdict: Mapping[str, str]
    corrected_nl: Mapping[str, str] = field(default_factory=dict)
    source: str = "<memory>"

    @classmethod
    def read(cls, path: str | Path) -> "Verdicts":
        """Any CSV with `id, verdict[, corrected_nl]` (docs/formats.md verdicts.csv)."""
        frame = _read_csv(path, ("id", "verdict"))
        verdict, corrected = {}, {}
        for row_no, row in zip(range(2, len(frame) + 2), frame.itertuples(index=False)):
            qid = _qid(row.id, path, row_no)
            value = str(row.verdict).strip().lower()
            if value not in VERDICTS:
                raise InputError(f"verdict {row.verdict!r} is not one of {', '.join(VERDICTS)}",
                                 file=str(path), row=row_no, id=qid)
            if qid in verdict and verdict[qid] != value:
                raise InputError(f"conflicting verdicts {verdict[qid]!r} and {value!r} for one question",
                                 file=str(path), row=row_no, id=qid)
            verdict[qid] = value
            text = str(getattr(row, "corrected_nl", "") or "").strip()
            if text:
                corrected[qid] = text
        return cls(verdict, corrected, str(path))


def read_flags(path: str | Path) -> dict[str, bool]:
    """`id, flagged` from an audit.csv: question id -> flagged."""
    frame = _read_csv(path, ("id", "flagged"))
    flags = {}
    for row_no, row in zip(range(2, len(frame) + 2), frame.itertuples(index=False)):
        qid = _qid(row.id, path, row_no)
        value = str(row.flagged).strip().lower()
        if value not in ("true", "false", "1", "0", "yes", "no"):
            raise InputError(f"flagged {row.flagged!r} is not true/false", file=str(path), row=row_no, id=qid)
        flags[qid] = value in ("true", "1", "yes")
    return flags


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


def language_pairs(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """System base name -> (French run, Dutch run), from names ending in _fr/_nl (or -fr, .fr)."""
    found: dict[str, dict[str, str]] = {}
    for name in names:
        match = _LANG_SUFFIX.match(name)
        if match:
            found.setdefault(match["base"], {})[match["lang"].lower()] = name
    return {base: (langs["fr"], langs["nl"]) for base, langs in found.items() if len(langs) == 2}


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


def _read_csv(path: str | Path, required: Sequence[str]) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"unreadable CSV ({str(exc).splitlines()[0]})", file=str(path)) from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (has {', '.join(frame.columns)})", file=str(path))
    return frame


def _qid(value: str, path, row_no: int) -> str:
    text = str(value).strip()
    if not text.isdigit():
        raise InputError(f"question id {value!r} is not an integer", file=str(path), row=row_no)
    return str(int(text))
