"""Evaluation stage: IR metrics on full vs verified subsets and how much system rankings shift."""
