"""Every shipped signal's declaration in one place: importing this module imports the signal modules
(the QA checks discover their own package), whose classes register their flags, categories, default
weights and rules as they are defined (audit/signals.py `declare`). docs/flags.md, the default
[weights] / [signals.*] config and the config template read it from here. The declarations themselves
live below every check (audit/signals.py); every module that reads them (risk, perror, ranking,
calibration, flagdoc) imports this one, so they are complete, and in one order, whichever audit module
is imported first. The package's __init__ imports nothing, so the options modules stay light."""

from __future__ import annotations

from importlib import import_module

from .signals import DECLARED, FLAG_SPECS, context_columns, default_signal_rules, default_weights, flag_specs

DECLARING = tuple(import_module(f"bbsard_audit.audit.{name}") for name in (
    "backtranslation", "checks", "crosslingual", "glossary", "gold_documents", "retrieval_consistency",
    "corpus.checks", "judge.signal", "qe.signal"))
"""The shipped declaring modules (a package: its modules, in the package's order), in the order their
flags are listed (docs/flags.md, the config template, p_error's features). Imported by name: the
document checks sit in the corpus stage, which reads the risk model built on this module, so a static
import would make the audit's subpackages a loop (`lint-imports`, acyclic siblings); by name, the
declaring modules are plugins of the registry, as a source or a pack is of its own.
`qe.signal` only declares: COMET runs with `audit --qe`."""


def _rank(module: str) -> int:
    return next((i for i, m in enumerate(DECLARING) if module == m.__name__ or module.startswith(m.__name__ + ".")),
                len(DECLARING))


def _in_order(specs: dict, module_of) -> None:
    """Reorder a declaration dict in place by `DECLARING` (stable: a module keeps its classes' order,
    a package its modules'), whichever declaring module was imported first."""
    ordered = sorted(specs.items(), key=lambda kv: _rank(module_of(kv[1])))
    specs.clear()
    specs.update(ordered)


_in_order(FLAG_SPECS, lambda spec: spec.module)
_in_order(DECLARED, lambda cls: cls.__module__)

__all__ = ["context_columns", "default_signal_rules", "default_weights", "flag_specs"]
