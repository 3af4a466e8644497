"""Signal 4: classic translation-QA consistency checks, one signal per module.

Each check compares something that must survive translation (numbers, negation, regions,
institutions, party roles, length and sentences, French left in, the question mark) and says what
changed. They are cheap, explainable and complementary to the glossary: a swapped
'huurder'/'verhuurder' or a lost 'niet' keeps every legal term right but inverts the question.
Each check's word lists are in `audit/data/<check>.yaml`. Documented in docs/glossary.md.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..findings import Finding
from ..signals import Batch, Signal
from .base import Check
from .identical import IdenticalCheck
from .institutions import InstitutionsCheck
from .length import LengthCheck
from .negation import NegationCheck
from .numbers import NumbersCheck
from .question import QuestionCheck
from .regions import RegionsCheck
from .roles import RolesCheck
from .untranslated import UntranslatedCheck

CHECKS: tuple[type[Check], ...] = (NumbersCheck, NegationCheck, RegionsCheck, InstitutionsCheck, RolesCheck,
                                   LengthCheck, UntranslatedCheck, IdenticalCheck, QuestionCheck)
"""In this order: the order of a row's QA flags and reasons."""

FLAGS: dict[str, str] = {flag: doc for check in CHECKS for flag, doc in check.flags.items()}


def all_checks() -> list[Signal]:
    return [check() for check in CHECKS]


def check_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[list[Finding]], pd.DataFrame]:
    """Every QA check on (French, Dutch) pairs, uncached: one findings list per pair + `qa_*` columns."""
    batch = Batch([fr for fr, _ in pairs], [nl for _, nl in pairs])
    results = [check.score(batch) for check in all_checks()]
    findings = [[f for r in results for f in r.findings[i]] for i in range(len(batch))]
    return findings, pd.concat([r.columns for r in results], axis=1)
