"""Every extension point of bbsard-audit in one place (as datasette's hookspecs.py): what a new check,
signal, metric, retriever, source, side reader, language pack or command implements, how it is
registered, and what is registered now. Adding one is one new module; no list here changes.
`python -m bbsard_audit.app.extensions` prints the table with what is registered."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Protocol

from bbsard_audit.audit.checks.base import Check
from bbsard_audit.audit.corpus.checks.base import DocCheck
from bbsard_audit.audit import registry  # noqa: F401  (completes DECLARED)
from bbsard_audit.audit.signals import DECLARED, Declared
from bbsard_audit.base import languages
from bbsard_audit.base.sources import registry as sources
from bbsard_audit.eval import metrics, retrievers


class CommandModule(Protocol):
    """A layer's `cli` module: adds its commands to the root app."""

    def register(self, app) -> None: ...


@dataclass(frozen=True)
class ExtensionPoint:
    kind: str
    protocol: type
    """The class an extension implements (or the record its decorator builds)."""
    how: str
    """How a new one registers itself."""
    example: str
    """A shipped module to copy."""
    registered: Callable[[], list[str]]
    """The names registered now."""


def _stage_commands() -> list[str]:
    from .cli import STAGE_MODULES

    return [importlib.import_module(name).__name__ for name in STAGE_MODULES]


POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("question check", Check, "subclass `Check` with a `name` in a new module of audit/checks/ "
                   "(the package imports each module; defining the class declares its flags)",
                   "audit/checks/numbers.py", lambda: [c.name for c in Check.registered()]),
    ExtensionPoint("document check", DocCheck, "subclass `DocCheck` with a `name` in a new module of "
                   "audit/corpus/checks/", "audit/corpus/checks/length.py",
                   lambda: [c.name for c in DocCheck.registered()]),
    ExtensionPoint("signal", Declared, "subclass `Declared` (or `ScorerSignal`) with a `name`, its flags, "
                   "categories, weights and rules; import the module in audit/registry.py",
                   "audit/gold_documents.py",
                   lambda: sorted(n for n, c in DECLARED.items() if not issubclass(c, Check | DocCheck))),
    ExtensionPoint("metric", metrics.MetricKind, "`@metric(name, order)` on a per-query function in eval/metrics.py",
                   "eval/metrics.py (recall)", lambda: list(metrics.kinds())),
    ExtensionPoint("retriever", retrievers.RetrieverKind, "`@retriever(prefix)` on a factory in eval/retrievers.py",
                   "eval/retrievers.py (bm25)", lambda: sorted(retrievers.RETRIEVERS)),
    ExtensionPoint("dataset source", sources.Source, "`@source(name, doc, matches=..., corpus=...)` in a new "
                   "module of base/sources/", "base/sources/sample.py", lambda: [s.name for s in sources.SOURCES]),
    ExtensionPoint("manifest side reader", sources.SideReader, "`@side(format, name, doc, matches=..., corpus=...)` "
                   "in a new module of base/sources/", "base/sources/beir_folder.py",
                   lambda: [f"{s.format} ({s.name})" for s in sources.SIDES]),
    ExtensionPoint("language pack", languages.Pack, "`<code>.yaml` + `<code>.py` in base/languages/ "
                   "(keyed by ISO 639-1 code)", "base/languages/en.py", lambda: list(languages.codes())),
    ExtensionPoint("command group", CommandModule, "a `<layer>.cli` module exposing `register(app)`, named in "
                   "app/cli/__init__.py STAGE_MODULES", "app/cli/report.py", _stage_commands),
)


def table() -> str:
    lines = ["| extension point | implements | how | example | registered now |", "|---|---|---|---|---|"]
    for point in POINTS:
        names = ", ".join(point.registered())
        lines.append(f"| {point.kind} | `{point.protocol.__module__}.{point.protocol.__qualname__}` | {point.how} "
                     f"| {point.example} | {names} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
