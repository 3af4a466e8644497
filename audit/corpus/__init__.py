"""The corpus audit: every document pair of a translated corpus, streamed (docs/scale.md)."""
