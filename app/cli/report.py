"""`bbsard-audit report`: thin CLI over `bbsard_audit.app.report.build_report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        workdir: Annotated[Path, typer.Option("--workdir", "-w", help="Folder holding the stage outputs "
                                              "(audit.csv, verdicts.csv, metrics.csv, ...).")] = Path("reports"),
        campaign: Annotated[Optional[Path], typer.Option(
            "--campaign", metavar="DIR", help="Folder of the review files (verdicts.csv, annotations_raw.csv, "
                                              "agreement.json, estimate.json, ...). Default: the subfolder of "
                                              "the work folder holding campaign.json, else the work folder.")] = None,
        out: Annotated[Optional[Path], typer.Option(help="Where to write report.html and report.md "
                                                    "(default: the work folder).")] = None,
    ) -> None:
        """Summarise a work folder as report.html (self-contained, offline) and report.md (tables).

        Sections appear only for the stage outputs present (a folder with none is an error): Findings
        (a few sentences answering what is suspect, how much is legally wrong, whether the benchmark's
        conclusions survive), Audit, Review campaign (verdicts, agreement, the estimate, p_error's
        calibration, and a simulated campaign from `campaign simulate`), Evaluation, Corpus (a corpus audit:
        artifacts by type, examples side by side, questions affected), Provenance.

        Example: `bbsard-audit report --workdir reports/demo`
        """
        from rich.console import Console

        from bbsard_audit.base.cli_options import guard_out
        from ..report import build_report

        guard_out(out if out is not None else workdir, command="report",
                  names=["report.html", "report.md", "report.meta.json"])
        with Console(stderr=True).status(f"rendering the report of {workdir}"):
            files = build_report(workdir, out, campaign)
        typer.echo(f"sections: {', '.join(files.sections)}")
        if files.review is not None:
            typer.echo(f"review files from {files.review}")
        typer.echo(f"wrote {files.markdown}")
        typer.echo(f"wrote {files.html}")
        for warning in files.warnings:
            typer.echo(f"warning: {warning}", err=True)
