"""Typer pieces every stage's CLI shares (base layer: stages import this, never `bbsard_audit.app.cli`)."""

from __future__ import annotations

import contextlib
import contextvars
import os
from typing import Annotated, Iterable

import typer
from typer.core import TyperGroup

from .errors import InputError
from .io import OutputGuard, guard_outputs
from .transactions import disk_problem
from .redact import redact

DatasetOption = Annotated[str, typer.Option(
    "--dataset", "-d", metavar="SRC",
    help="`sample` (embedded), a CSV folder (its layout: `bbsard-audit validate --help`), "
         "`hf:clips/bBSARD[@REV]` (REV: a hub commit or tag) or a manifest `FILE.yaml` joining two BEIR "
         "sides (docs/formats.md, \"Dataset sources\").")]


class OneLineErrors(TyperGroup):
    """Bad input becomes one line on stderr and exit code 2, never a traceback (nor a credential)."""

    def invoke(self, ctx):
        try:
            with contextlib.ExitStack() as resources:  # closed when the command returns or fails (commits, rolls back)
                token = _RESOURCES.set(resources)
                try:
                    return super().invoke(ctx)
                finally:
                    _RESOURCES.reset(token)
        except InputError as exc:
            typer.echo(f"error: {redact(exc.one_line())}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:  # a write outside io's writers (e.g. `datasets`) on a full disk
            reason = disk_problem(exc)
            if reason is None:
                raise
            where = exc.filename or "the output"
            typer.echo(f"error: {redact(f'cannot write {where}: {reason}')}", err=True)
            raise typer.Exit(2) from None


_RESOURCES: contextvars.ContextVar[contextlib.ExitStack | None] = contextvars.ContextVar("bbsard_cli_resources",
                                                                                         default=None)


def guard_out(out: str | os.PathLike, *, command: str, inputs: Iterable[str | os.PathLike | None] = (),
              names: Iterable[str] = (), folder: bool = True, preserve: Iterable[str] = ()) -> OutputGuard:
    """One call near the top of a command: its writes run under `bbsard_audit.base.io.guard_outputs` until it returns."""
    resources = _RESOURCES.get()
    if resources is None:
        raise RuntimeError("guard_out is for commands run through the bbsard-audit CLI")
    return resources.enter_context(guard_outputs(out, command=command, inputs=inputs, names=names, folder=folder,
                                                 preserve=preserve))
