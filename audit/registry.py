"""Every shipped signal's declaration in one place: importing this module imports the signal modules
(the QA checks discover their own package), whose classes register their flags, categories, default
weights and rules as they are defined (audit/signals.py `declare`). docs/flags.md, the default
[weights] / [signals.*] config and the config template read it from here."""

from __future__ import annotations

from . import backtranslation, checks, crosslingual, glossary, retrieval_consistency  # noqa: F401  (they declare)
from .corpus import checks as corpus_checks  # noqa: F401  (the document checks declare their doc_* flags)
from .signals import FLAG_SPECS, FlagSpec, default_rules


def flag_specs() -> dict[str, FlagSpec]:
    return dict(FLAG_SPECS)


def default_weights() -> dict[str, float]:
    """[weights]: each declared flag's default weight (flags with a rule have none)."""
    return {flag: spec.weight for flag, spec in FLAG_SPECS.items() if spec.weight is not None}


def default_signal_rules() -> dict[str, dict]:
    """[signals.COLUMN] tables of every declared rule, in `order`."""
    return {rule.column: rule.table() for rule in default_rules()}
