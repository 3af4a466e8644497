"""Every dataset source, one module each, declared in `registry` (see docs/formats.md, "Sources").

Importing the package imports each of its modules, so a new source is one new module here.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import SIDES, SOURCES, load_dataset

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["SIDES", "SOURCES", "load_dataset"]
