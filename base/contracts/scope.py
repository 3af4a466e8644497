"""scope.json (audit/data/scope.json, written by `benchmarks/bench_mqm.py --scope`, read by the report and
docs/languages.md): what the built-in checks catch of real MT errors, per MQM category, measured once on a
named dev set; and the evidence an audit ran with, read from its audit.meta.json the same way for the
dev set's audit and for the audit a report shows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bbsard_audit.base.errors import InputError

from .jsonfile import Record, read_checked

FORMAT = "bbsard-audit scope 1"
EVIDENCE = ("back-translations", "LLM judge", "COMET / QE", "bilingual dictionaries", "word alignment")
"""The evidence beyond the built-in surface checks, in the order a report lists it."""
CHECK_OF = {"bilingual dictionaries": "lexical", "word alignment": "alignment"}
"""Evidence that is one check of the audit (its name in timings_s and checks_unavailable)."""
ASK_FOR = {"back-translations": "--backtranslations FILE or --translator MODEL",
           "LLM judge": "--judge llm:MODEL", "COMET / QE": "--qe comet:MODEL"}


@dataclass(frozen=True)
class Evidence:
    """One kind of evidence and whether an audit ran with it: `ran` false with `status` saying why
    (not asked for: the option; not available: what to install)."""

    name: str
    ran: bool
    status: str


def evidence(meta: dict) -> list[Evidence]:
    """The evidence an audit ran with, from its audit.meta.json (one entry per EVIDENCE name); a sidecar
    that does not record it (written before `checks_unavailable` existed) says so for each."""
    if "checks_unavailable" not in meta:
        return [Evidence(name, False, "not recorded in audit.meta.json") for name in EVIDENCE]
    bt = meta.get("backtranslation") or {}
    judge, qe = meta.get("judge"), meta.get("qe")
    out = [Evidence("back-translations", bt.get("status") == "used",
                    f"used ({bt['translator']})" if bt.get("status") == "used" and bt.get("translator")
                    else "used (file)" if bt.get("status") == "used" else f"not used: {ASK_FOR['back-translations']}"),
           Evidence("LLM judge", bool(judge) and not judge.get("dry_run"),
                    f"used ({judge.get('model')}, on {judge.get('on')} pairs: {judge.get('selected')} selected)"
                    if judge and not judge.get("dry_run") else "dry run only: no pair judged" if judge
                    else f"not used: {ASK_FOR['LLM judge']}"),
           Evidence("COMET / QE", bool(qe), f"used ({qe.get('model')})" if qe else f"not used: {ASK_FOR['COMET / QE']}")]
    ran = set(meta.get("timings_s") or {}) | set(meta.get("cached_signals") or [])
    for name, check in CHECK_OF.items():
        notes = [str(n).removeprefix(f"{check}: ") for n in meta.get("checks_unavailable") or []
                 if str(n).startswith(f"{check}: ")]
        if notes:
            out.append(Evidence(name, False, "; ".join(notes)))
        elif check in ran:
            out.append(Evidence(name, True, f"used (the `{check}` check)"))
        else:
            out.append(Evidence(name, False, "not recorded (an audit made before the check existed)"))
    return out


@dataclass(frozen=True)
class DevSet:
    """The labelled data measured on, named by id and hash (never a path)."""

    id: str
    name: str
    source: str
    target: str
    revision: str
    """The audited dataset's revision (its sidecar's `dataset.revision`)."""
    labels: str
    """The label file's name and sha256 (`pairs.jsonl sha256:...`)."""
    raters: str


@dataclass(frozen=True)
class Rate:
    """`count` of `n` pairs, its share and Wilson 95% interval."""

    count: int
    n: int
    share: float
    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 <= self.count <= self.n or not all(0 <= v <= 1 for v in (self.share, self.low, self.high)):
            raise ValueError("a rate needs 0 <= count <= n and shares in [0, 1]")


@dataclass(frozen=True)
class Category:
    """One MQM category: the pairs with a Major error of it the flag catches, above chance or not, and
    the flags that caught them (pairs per flag, most first)."""

    category: str
    recall: Rate
    above_chance: bool
    caught_by: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Auc:
    auc: float
    auc_length_matched: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) and 0 <= v <= 1 for v in (self.auc, self.auc_length_matched)):
            raise ValueError("an AUC lies in [0, 1]")


@dataclass(frozen=True)
class Scope(Record):
    """The measured scope of the built-in checks; `definitions` gives each figure's one definition."""

    dev_set: DevSet
    measured: str
    """The date measured (ISO)."""
    tool_version: str
    tool_revision: str
    """The git commit of the code that audited and measured."""
    evidence: list[Evidence]
    """What the dev set's audit ran with (`evidence` of its sidecar)."""
    positives: int
    clean: Rate
    """Clean pairs flagged."""
    recall: Rate
    """Major-accuracy pairs flagged (every category)."""
    p_error: Auc
    categories: list[Category]
    definitions: dict[str, str]
    format: str = FORMAT

    def __post_init__(self) -> None:
        if {e.name for e in self.evidence} != set(EVIDENCE):
            raise ValueError(f"evidence must name each of {', '.join(EVIDENCE)} once")
        if not self.categories:
            raise ValueError("no MQM category")

    @classmethod
    def read(cls, path: str | Path) -> "Scope":
        """Strict: unknown or missing keys, wrong types, another format -> one-line InputError naming the file."""
        scope = read_checked(cls, path, "a scope file")
        if scope.format != FORMAT:
            raise InputError(f"not a scope file (format {scope.format!r}, expected {FORMAT!r})", file=str(path))
        return scope
