"""Annotation stage: expert review of suspect translations in Label Studio, verdicts and agreement."""
