"""`bbsard-audit example beir DIR`: thin typer layer over bbsard_audit.app.example."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bbsard_audit.base.cli_options import guard_out
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.sources.sample import BACKTRANSLATIONS

from ..example import FILES, PAIR, write_beir_example


def register(app: typer.Typer) -> None:
    example = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                          help="Write a small example to try the tool on.\n\n"
                               "Example: `bbsard-audit example beir --out reports/beir-example`")
    app.add_typer(example, name="example")

    @example.command("beir")
    def beir(folder: Annotated[Optional[Path], typer.Argument(metavar="[DIR]", help="Folder to write the example into "
                                                                              "(as --out; kept for older command lines).")]
             = None,
             out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR",
                                                         help="Folder to write the example into.")] = None) -> None:
        """The embedded sample as a translated benchmark in BEIR layout: `fr/` (source) and `nl/`
        (translation), each with queries.jsonl, corpus.jsonl and qrels/{train,test}.tsv; the manifest
        `sample-beir.yaml` joining them; `backtranslations_nl_fr.jsonl`; and `runs/bm25_{fr,nl}.trec`
        (BM25 over the test questions, top 100) to evaluate.

        Example: `bbsard-audit example beir --out reports/beir-example`, then
        `bbsard-audit validate --dataset reports/beir-example/sample-beir.yaml`
        """
        if (folder is None) == (out is None):
            raise InputError("give the folder once: --out DIR (or DIR, the older spelling)")
        out = out or folder
        guard_out(out, command="example beir", names=FILES)
        manifest = write_beir_example(out)
        typer.echo(f"wrote {manifest} (source {out / PAIR.source}, target {out / PAIR.target}, "
                   f"{out / BACKTRANSLATIONS}, runs in {out / 'runs'})")
