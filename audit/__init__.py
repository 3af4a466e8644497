"""Audit stage: flag suspect Dutch translations of bBSARD questions with explained risk scores."""
