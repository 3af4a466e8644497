"""`bbsard-audit release`: thin CLI over `bbsard_audit.app.release.build_release`."""

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    from bbsard_audit.base.cli_options import DatasetOption

    @app.command()
    def release(
        verdicts: Annotated[Path, typer.Option(help="Expert verdicts CSV (id, verdict[, corrected_nl, ...]).")],
        out: Annotated[Path, typer.Option(help="Release folder to write; only an earlier release's own "
                                            "files there are replaced, anything else is left alone.")],
        dataset: DatasetOption = "sample",
        policy: Annotated[str, typer.Option(help="Legally inaccurate, uncorrected pairs: `exclude` (remove) "
                                            "or `keep-marked` (keep, verification=excluded).")] = "exclude",
        keep_minor: Annotated[bool, typer.Option("--keep-minor/--no-keep-minor", help="Count uncorrected "
                                                 "minor-issue pairs as verified (else: like legal ones).")] = True,
        audit: Annotated[Path | None, typer.Option(help="audit.csv: unreviewed flagged pairs become "
                                                   "`flagged-unverified`.")] = None,
        annotations: Annotated[Path | None, typer.Option(help="annotations_raw.csv for CHANGELOG dates "
                                                         "(default: next to the verdicts).")] = None,
        agreement: Annotated[Path | None, typer.Option(help="agreement.json for the card (default: next to the "
                                                       "verdicts, else in the campaign folder: the subfolder "
                                                       "holding campaign.json).")] = None,
        estimate: Annotated[Path | None, typer.Option(help="estimate.json for the card (found like --agreement).")] = None,
        push_to_hub: Annotated[str | None, typer.Option(metavar="REPO", help="Also upload to this hub dataset "
                                                        "repo (token from HF_TOKEN).")] = None,
    ) -> None:
        """Write a cleaned bBSARD: Dutch corrections applied, a `verification` column, CHANGELOG.csv, a
        dataset card and a `datasets` copy (hf/). agreement.json / estimate.json next to the verdicts
        (else in the campaign folder, the subfolder holding campaign.json) go into the card; the card
        claims expert verification only for the pairs reviewed.

        Example: `bbsard-audit release --dataset ../shared/data/bbsard --verdicts reports/verdicts.csv --out reports/release`
        """
        from rich.console import Console

        from bbsard_audit.base.dataset import load_dataset
        from ..release import ReleasePolicy, build_release, push_to_hub as push

        rules = ReleasePolicy(legal=policy, keep_minor=keep_minor)
        with Console(stderr=True).status(f"building the release in {out}"):
            ds = load_dataset(dataset)
            summary = build_release(ds, verdicts, out, rules, audit=audit, annotations=annotations,
                                    agreement=agreement, estimate=estimate)
        for split, counts in summary.counts.items():
            typer.echo(f"  {split:5s} " + "  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
        typer.echo(f"{summary.changes} change(s) in CHANGELOG.csv; {summary.removed} pair(s) removed "
                   f"(policy {policy}, {'keep' if keep_minor else 'no-keep'}-minor)")
        typer.echo(f"{summary.reviewed:,} of {summary.total:,} pairs reviewed ({summary.verdict_kind})")
        for warning in summary.warnings:
            typer.echo(f"warning: {warning}", err=True)
        typer.echo(f"wrote {summary.out}")
        if push_to_hub:
            typer.echo(f"pushed to {push_to_hub}: {push(summary.out, push_to_hub)}")
