"""What the LLM judge takes, one object for the question audit and the corpus audit (`--judge`,
`--judge-url`, `--judge-on`, `--judge-concurrency`, `--judge-max-chars`, `--judge-dry-run`), checked in one
place. Imports no heavy library: the command line builds it at parse time."""

from __future__ import annotations

from dataclasses import dataclass

from bbsard_audit.base.errors import InputError

ON = ("flagged", "uncertain", "all")
"""Which pairs or documents the judge sees."""
CONCURRENCY = 4


@dataclass(frozen=True)
class JudgeOptions:
    model: str | None = None
    """`llm:MODEL`; None: no judge (unless `dry_run`)."""
    url: str | None = None
    """OpenAI-compatible base URL."""
    on: str = "flagged"
    concurrency: int = CONCURRENCY
    max_chars: int | None = None
    """Corpus audit: characters of each side sent per request (None: the corpus judge's default)."""
    dry_run: bool = False

    @property
    def wanted(self) -> bool:
        return self.model is not None or self.dry_run

    @classmethod
    def given(cls, model: str | None = None, url: str | None = None, on: str | None = None,
              concurrency: int | None = None, max_chars: int | None = None, dry_run: bool = False) -> JudgeOptions:
        """The options as a command line gave them (None = not given): `--judge-*` options without `--judge`
        (or `--judge-dry-run`) would be ignored, and a bad `--judge-on` unnoticed, so each is one line
        before any work."""
        if on is not None and on not in ON:
            raise InputError(f"--judge-on must be one of {'|'.join(ON)}, not {on!r}")
        if model is None and not dry_run:
            named = [name for name, value in (("--judge-url", url), ("--judge-on", on),
                                              ("--judge-concurrency", concurrency), ("--judge-max-chars", max_chars))
                     if value is not None]
            if named:
                raise InputError(f"{' and '.join(named)} {'needs' if len(named) == 1 else 'need'} --judge llm:MODEL "
                                 "(without it no judge runs)")
        return cls(model, url, on or "flagged", CONCURRENCY if concurrency is None else concurrency, max_chars,
                   dry_run)
