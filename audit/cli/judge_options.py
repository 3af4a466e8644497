"""The judge's command-line options, declared once for `audit` and `audit corpus` (one meaning, one
help text, one default each); both commands turn them into a `JudgeOptions`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..judge.options import CONCURRENCY

Judge = Annotated[Optional[str], typer.Option(
    "--judge", metavar="llm:MODEL",
    help="Also ask an LLM judge (GEMBA-MQM error spans) at --judge-url about the pairs or documents --judge-on "
         "selects; its API key from the environment (docs/audit.md, \"LLM judge\").")]
JudgeUrl = Annotated[Optional[str], typer.Option(
    "--judge-url", metavar="URL", help="OpenAI-compatible base URL (vLLM, Ollama, llama.cpp, an API).")]
JudgeOn = Annotated[Optional[str], typer.Option(
    "--judge-on", metavar="WHICH",
    help="Which pairs or documents the judge sees: flagged (by the audit; the default), uncertain (the "
         "low..high severity band) or all.")]
JudgeConcurrency = Annotated[Optional[int], typer.Option(
    "--judge-concurrency", metavar="N", help=f"Requests in flight at once (default {CONCURRENCY}).")]
JudgeDryRun = Annotated[bool, typer.Option(
    "--judge-dry-run", help="Print the judge's requests (stdout) and a token estimate; send nothing, write nothing.")]
