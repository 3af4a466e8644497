"""The `bbsard-audit` command: a thin typer layer over the library API.

Stage packages plug in by exposing `register(app)` in their `cli` module (`bbsard_audit.audit.cli`,
`bbsard_audit.annotations.cli`, `bbsard_audit.eval.cli`, `bbsard_audit.app.cli.report`, ...). An
ImportError is never swallowed: a stage that cannot be imported is a broken install.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

from bbsard_audit import __version__
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.cli_options import DatasetOption, OneLineErrors

STAGE_MODULES = ("bbsard_audit.audit.cli", "bbsard_audit.annotations.cli", "bbsard_audit.eval.cli",
                 "bbsard_audit.app.cli.report", "bbsard_audit.app.cli.release", "bbsard_audit.app.cli.campaign",
                 "bbsard_audit.app.cli.example")

app = typer.Typer(
    cls=OneLineErrors, no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
    help="Translation validation and dataset audit for bBSARD (French/Dutch statutory article "
         "retrieval).\n\nExample: `bbsard-audit demo --out reports/demo`",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bbsard-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    pass


@app.command()
def validate(dataset: DatasetOption = "sample") -> None:
    """Load a dataset, print counts per split and language and every warning; exit 1 on errors.

    A CSV folder holds `questions_{fr,nl}_{train,test}.csv` (some splits are enough) and optionally
    `articles_{fr,nl}.csv`; `hf:PATH` reads a local copy laid out like the hub's (or a release's `hf/`);
    a manifest `FILE.yaml` joins a source and a target BEIR side (any language pair; docs/formats.md).

    Example: `bbsard-audit validate --dataset ../shared/data/bbsard`, or `--dataset beir-nl-scifact.yaml`
    """
    ds = load_dataset(dataset, strict=False)
    typer.echo(f"dataset: {ds.source} (revision {ds.revision})")
    for split in ds.splits:
        pairs = ds.select(split)
        n_gold = sum(len(p.article_ids) for p in pairs)
        typer.echo(f"  {split:5s}  {ds.pair.source}: {len(pairs)} questions  {ds.pair.target}: {len(pairs)} questions  "
                   f"gold links: {n_gold}")
    typer.echo(f"  total  {len(ds.pairs)} question pairs")
    if ds.corpus is not None:
        langs = [lang for lang, texts in zip(ds.corpus.langs, (ds.corpus.source_texts, ds.corpus.target_texts)) if texts is not None]
        typer.echo(f"  corpus {len(ds.corpus)} articles ({', '.join(langs)})")
    else:
        typer.echo("  corpus not loaded (questions only)")
    for issue in ds.warnings:
        typer.echo(f"warning: {issue.one_line()}")
    for issue in ds.errors:
        typer.echo(f"error: {issue.one_line()}", err=True)
    if ds.errors:
        typer.echo(f"{len(ds.errors)} error(s), {len(ds.warnings)} warning(s)", err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: 0 errors, {len(ds.warnings)} warning(s)")


@app.command()
def demo(out: Annotated[Path, typer.Option(help="Folder for every stage's outputs.")] = Path("reports/demo")) -> None:
    """Run the whole pipeline on the embedded sample, offline: validate, audit, review queue,
    illustrative verdicts, eval, report, release. Prints the path of report.html.

    Example: `bbsard-audit demo --out reports/demo`
    """
    from ..demo import run_demo

    result = run_demo(out)
    typer.echo(result.report or result.out)


def _register_stages() -> None:
    """Every stage is part of the install: a stage that fails to import is a bug, never skipped."""
    for name in STAGE_MODULES:
        importlib.import_module(name).register(app)


_register_stages()


def main() -> None:
    app()
