"""Typer pieces every stage's CLI shares (base layer: stages import this, never `bbsard_audit.cli`)."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup

from .errors import InputError

DatasetOption = Annotated[str, typer.Option(
    "--dataset", "-d", metavar="SRC",
    help="`sample` (embedded), a CSV directory (questions_{fr,nl}_{train,test}.csv "
         "[+ articles_{fr,nl}.csv]) or hf:clips/bBSARD[@REVISION].")]


class OneLineErrors(TyperGroup):
    """Bad input becomes one line on stderr and exit code 2, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            typer.echo(f"error: {exc.one_line()}", err=True)
            raise typer.Exit(2) from None
