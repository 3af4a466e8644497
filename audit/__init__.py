"""Audit stage: flag suspect Dutch translations of bBSARD questions with explained risk scores."""

from . import registry  # noqa: F401  (the top of the stage: every signal module declares, whatever is imported first)
