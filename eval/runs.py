"""Runs and qrels for the evaluation: the types and readers live in the base layer
(`bbsard_audit.base.contracts.runs`) so the audit reads runs with the same rules without importing eval."""

from bbsard_audit.base.contracts.runs import Qrels, Run, RunIndex

__all__ = ["Qrels", "Run", "RunIndex"]
