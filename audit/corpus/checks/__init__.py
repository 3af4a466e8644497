"""The document checks of the corpus audit, one module per check (base.py says what a check
declares). Every module but `base` is imported here and its check registers itself: adding a check
is adding a module. Their flags are in docs/flags.md with the question checks'."""

from __future__ import annotations

import importlib
import pkgutil

from .base import DocCheck

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

CHECKS: tuple[type[DocCheck], ...] = tuple(DocCheck.registered())
"""By `order`: the order of a row's flags and reasons."""


def all_checks() -> list[DocCheck]:
    return [check() for check in CHECKS]
