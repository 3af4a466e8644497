"""Audit stage: flag suspect Dutch translations of bBSARD questions with explained risk scores.

It imports nothing, so `audit/options.py` stays light: the modules that read the signals' declarations
(risk, perror, ranking, calibration, flagdoc) import `audit/registry.py`, which completes them."""
