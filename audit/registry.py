"""Every shipped signal's declaration in one place: importing this module imports the signal modules
(the QA checks discover their own package), whose classes register their flags, categories, default
weights and rules as they are defined (audit/signals.py `declare`). docs/flags.md, the default
[weights] / [signals.*] config and the config template read it from here. The declarations themselves
live below every check (audit/signals.py, which audit/risk.py reads); the package's __init__ imports
this module, so they are complete whichever audit module is imported first."""

from __future__ import annotations

from . import backtranslation, checks, crosslingual, glossary, gold_documents, retrieval_consistency  # noqa: F401  (they declare)
from .corpus import checks as corpus_checks  # noqa: F401  (the document checks declare their doc_* flags)
from .judge import signal as judge_signal  # noqa: F401  (declares the LLM judge)
from .qe import signal as _qe  # noqa: F401  (declares; runs only with `audit --qe`)
from .signals import context_columns, default_signal_rules, default_weights, flag_specs

__all__ = ["context_columns", "default_signal_rules", "default_weights", "flag_specs"]
