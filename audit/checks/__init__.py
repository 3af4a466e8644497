"""Signal 4: classic translation-QA consistency checks, one signal per module.

Each check compares something that must survive translation (numbers, negation, regions,
institutions, party roles, length and sentences, French left in, the question mark) and says what
changed. They are cheap, explainable and complementary to the glossary: a swapped
'huurder'/'verhuurder' or a lost 'niet' keeps every legal term right but inverts the question.
Each check's word lists are in `audit/data/<check>.yaml`. Documented in docs/glossary.md.

Every module of this package but `base` is imported on import and its `Check` classes register
themselves (name, flags, categories, default weights, `order`): adding a check is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Sequence

import pandas as pd

from bbsard_audit.base.contracts.audit import BBSARD_LAYOUT

from ..findings import Finding
from ..signals import Batch, Signal
from .base import Check

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

CHECKS: tuple[type[Check], ...] = tuple(Check.registered())
"""By `order`: the order of a row's QA flags and reasons."""
globals().update({check.__name__: check for check in CHECKS})  # `checks.NumbersCheck` etc.

FLAGS: dict[str, str] = {flag: doc for check in CHECKS for flag, doc in check.flags.items()}


def all_checks() -> list[Signal]:
    return [check() for check in CHECKS]


def check_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[list[Finding]], pd.DataFrame]:
    """Every QA check on bBSARD's (source, target) pairs, uncached: one findings list per pair + `qa_*`
    columns, named as bBSARD's files name them."""
    batch = Batch([source for source, _ in pairs], [target for _, target in pairs], pair=BBSARD_LAYOUT.pair)
    results = [check.score(batch) for check in all_checks()]
    findings = [[f for r in results for f in r.findings[i]] for i in range(len(batch))]
    return findings, pd.concat([r.columns for r in results], axis=1).rename(columns=BBSARD_LAYOUT.column)
