"""Corpus audit: every document pair of a translated corpus (a source document and its translation,
joined by id) through the document checks, in three batch phases (documents.py: map, reduce, score)
that the local and Ray engines run the same way. The checks and phases: docs/corpus_checks.md."""
