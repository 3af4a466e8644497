"""`bbsard-audit annotate ...`: expert review in Label Studio (thin layer over annotations.*)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import pandas as pd
import typer
from rich.progress import Progress

from bbsard_audit.contracts.sidecar import write_sidecar
from bbsard_audit.contracts.verdicts import read_raw, read_verdicts
from bbsard_audit.errors import InputError
from bbsard_audit.io import write_csv, write_json

from .adjudication import AdjudicationRule, disagreements
from .agreement import agreement as compute_agreement
from .pull import RAW_FILE, pull as pull_verdicts, raw_from_export, read_export_file
from .tasks import AUDIT_COLUMNS, QUEUE_COLUMNS, audit_version, build_tasks, read_audit

if TYPE_CHECKING:  # label_studio_sdk and scipy load in ~1.5 s: only the commands that talk to them import them
    from .connection import Connection

annotate = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                       help="Expert review in Label Studio: push the review queue, pull verdicts, "
                            "agreement, error-rate estimate.\n\nExample: `bbsard-audit annotate push "
                            "--audit reports/run/audit.csv --queue reports/run/review_queue.csv "
                            "--project bbsard-review`")

Url = Annotated[Optional[str], typer.Option(help="Label Studio URL (else $LABEL_STUDIO_URL or the config "
                                                 "file). The API key only comes from "
                                                 "$LABEL_STUDIO_API_KEY or the config file.")]
Config = Annotated[Optional[Path], typer.Option(help="TOML file with [label_studio] url, api_key "
                                                     "(default ~/.config/bbsard-audit/config.toml).")]
Project = Annotated[str, typer.Option("--project", help="Label Studio project title.")]
Retries = Annotated[int, typer.Option(help="Retries (exponential backoff) on transient errors.")]
Timeout = Annotated[float, typer.Option(help="Seconds before one HTTP request times out.")]


def _connection(url, config, retries, timeout) -> Connection:
    from .connection import Connection

    return Connection.resolve(url, config, retries=retries, timeout=timeout)


def _open_project(conn, title: str, **options):
    from .project import ReviewProject

    return ReviewProject.open(conn, title, **options)


def _queue_tasks(audit: Path, queue: Optional[Path], dataset: Optional[str]) -> tuple[list[dict], pd.DataFrame]:
    frame = read_audit(queue, QUEUE_COLUMNS) if queue else read_audit(audit, AUDIT_COLUMNS)
    ds = None
    if dataset:
        from bbsard_audit.dataset import load_dataset
        ds = load_dataset(dataset, strict=False)
    return build_tasks(frame, model_version=audit_version(audit), dataset=ds), frame


@annotate.command()
def push(audit: Annotated[Path, typer.Option(help="audit.csv of the audit stage.")],
         project: Project,
         queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv (default: every audit row).")] = None,
         dataset: Annotated[Optional[str], typer.Option(help="Dataset source, to show gold article ids "
                                                             "(and titles when a corpus is loaded).")] = None,
         overlap: Annotated[int, typer.Option(help="Annotations wanted per task.")] = 2,
         batch_size: Annotated[int, typer.Option(help="Tasks per import request.")] = 250,
         url: Url = None, config: Config = None, retries: Retries = 3, timeout: Timeout = 60.0) -> None:
    """Create the project if absent and import the queued questions not yet there (never a duplicate).

    Example: `bbsard-audit annotate push --audit out/audit.csv --queue out/review_queue.csv --project bbsard-review`
    """
    tasks, _ = _queue_tasks(audit, queue, dataset)
    conn = _connection(url, config, retries, timeout)
    proj = _open_project(conn, project, create=True, overlap=overlap)
    with Progress(transient=True) as bar:
        job = bar.add_task("importing tasks", total=len(tasks))
        result = proj.push(tasks, batch_size=batch_size, progress=lambda n: bar.advance(job, n))
    typer.echo(f"project {project!r} (id {result.project_id}): {result.created} task(s) imported, "
               f"{result.already_there} already there, {result.seconds:.1f} s")
    if result.duplicates_on_server:
        typer.echo(f"warning: {len(result.duplicates_on_server)} question(s) have several tasks on the "
                   f"server (ids {result.duplicates_on_server[:10]}); pull merges them", err=True)


@annotate.command("export-tasks")
def export_tasks(audit: Annotated[Path, typer.Option(help="audit.csv of the audit stage.")],
                 out: Annotated[Path, typer.Option(help="Label Studio import JSON to write.")],
                 queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv.")] = None,
                 dataset: Annotated[Optional[str], typer.Option(help="Dataset source (gold article ids).")] = None) -> None:
    """Write the Label Studio import JSON (tasks + predictions) for an air-gapped server.

    Example: `bbsard-audit annotate export-tasks --audit out/audit.csv --queue out/review_queue.csv --out out/tasks.json`
    """
    tasks, _ = _queue_tasks(audit, queue, dataset)
    write_json(out, tasks)
    write_sidecar(out, audit=str(audit), queue=str(queue) if queue else None, n_tasks=len(tasks),
                  model_version=audit_version(audit), label_config=(Path(__file__).with_name(
                      "labeling_config.xml")).read_text(encoding="utf-8"))
    typer.echo(f"{len(tasks)} task(s) -> {out} (import it in Label Studio with the labelling config in "
               f"the sidecar)")


@annotate.command()
def pull(out: Annotated[Path, typer.Option(help="verdicts.csv to write (annotations_raw.csv goes next to it).")],
         project: Annotated[Optional[str], typer.Option("--project", help="Label Studio project title.")] = None,
         from_file: Annotated[Optional[Path], typer.Option(help="Read a Label Studio JSON export instead of the server.")] = None,
         adjudication: Annotated[Optional[Path], typer.Option(help="Adjudication TOML (default: annotations/adjudication.toml).")] = None,
         url: Url = None, config: Config = None, retries: Retries = 3, timeout: Timeout = 60.0) -> None:
    """Export all annotations and write verdicts.csv + annotations_raw.csv, merged with earlier pulls.

    Example: `bbsard-audit annotate pull --project bbsard-review --out out/verdicts.csv`
    """
    rule = AdjudicationRule.load(adjudication)
    if from_file:
        tasks, users, source = read_export_file(from_file), {}, {"export_file": str(from_file)}
        origin = str(from_file)
    else:
        if not project:
            raise typer.BadParameter("give --project (or --from-file)")
        proj = _open_project(_connection(url, config, retries, timeout), project)
        tasks, users = proj.export(), proj.users()
        source = {"label_studio_url": proj.conn.url, "project": project, "project_id": proj.id}
        origin = f"Label Studio project {project!r}"
    raw, verdicts = pull_verdicts(tasks, out, users=users, rule=rule, source=source, origin=origin)
    counts = verdicts["agreement_status"].value_counts().to_dict()
    typer.echo(f"{len(raw)} annotation(s), {len(verdicts)} question(s) -> {out} {counts}")


@annotate.command()
def status(project: Project, url: Url = None, config: Config = None, retries: Retries = 3,
           timeout: Timeout = 60.0) -> None:
    """Tasks, annotated, remaining, and annotations per annotator.

    Example: `bbsard-audit annotate status --project bbsard-review`
    """
    conn = _connection(url, config, retries, timeout)
    proj = _open_project(conn, project)
    tasks = proj.export()
    overlap = conn.call("get project", lambda: proj.client.projects.get(proj.id)).maximum_annotations or 1
    raw = raw_from_export(tasks, proj.users())
    per_task = raw.groupby("task_id").size()
    done = int((per_task >= overlap).sum())
    typer.echo(f"project {project!r} (id {proj.id}): {len(tasks)} task(s), {per_task.size} annotated, "
               f"{done} with {overlap} annotation(s), {len(tasks) - done} remaining")
    for name, n in raw.groupby("annotator").size().sort_values(ascending=False).items():
        typer.echo(f"  {name}: {n}")


@annotate.command()
def agreement(raw: Annotated[Path, typer.Option(help=f"{RAW_FILE} written by pull.")],
              out: Annotated[Path, typer.Option(help="Folder for agreement.json and disagreements.csv.")],
              n_boot: Annotated[int, typer.Option(help="Bootstrap resamples of items.")] = 2000,
              seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
              adjudication: Annotated[Optional[Path], typer.Option(help="Adjudication TOML.")] = None) -> None:
    """Cohen's kappa per annotator pair and Krippendorff's alpha, overall and legal-vs-not, with CIs.

    Example: `bbsard-audit annotate agreement --raw out/annotations_raw.csv --out out`
    """
    table = read_raw(raw)
    report = compute_agreement(table, n_boot=n_boot, seed=seed)
    rule = AdjudicationRule.load(adjudication)
    wide = disagreements(table, rule)
    report.n_disagreements = len(wide)
    record = report.write(out / "agreement.json")
    write_sidecar(out / "agreement.json", files=[record], raw=str(raw), n_boot=n_boot, seed=seed)
    write_csv(out / "disagreements.csv", wide)
    write_sidecar(out / "disagreements.csv", raw=str(raw), adjudication=rule.describe())
    for score in report.scores:
        who = f" {' vs '.join(score.annotators)}" if "kappa" in score.name else ""
        typer.echo(f"{score.name}{who}: {score.value:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}] "
                   f"(n={score.n_items})")
    typer.echo(f"{len(wide)} disagreement(s) -> {out / 'disagreements.csv'}")


@annotate.command()
def estimate(audit: Annotated[Path, typer.Option(help="audit.csv (the population: every pair of the split).")],
             verdicts: Annotated[Path, typer.Option(help="verdicts.csv written by pull.")],
             out: Annotated[Path, typer.Option(help="estimate.json to write.")],
             queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv (risk queue + control).")] = None,
             split: Annotated[str, typer.Option(help="train, test or all.")] = "all",
             level: Annotated[float, typer.Option(help="Confidence level.")] = 0.95,
             seed: Annotated[int, typer.Option(help="Monte Carlo seed.")] = 0) -> None:
    """Estimated share of legally inaccurate translations in the split, stratified, with a CI.

    Example: `bbsard-audit annotate estimate --audit out/audit.csv --queue out/review_queue.csv --verdicts out/verdicts.csv --out out/estimate.json --split test`
    """
    population = read_audit(audit)
    if split != "all":
        splits = sorted(population["split"].unique())
        population = population[population["split"] == split]
        if population.empty:
            raise InputError(f"no audited pair in split {split!r} (the audit has: {', '.join(splits) or 'none'})",
                             file=str(audit))
    table = read_verdicts(verdicts)
    from .estimate import estimate as compute_estimate

    result = compute_estimate(population, table, read_audit(queue, QUEUE_COLUMNS) if queue else None,
                              level=level, seed=seed)
    record = result.write(out)
    write_sidecar(out, files=[record], audit=str(audit), verdicts=str(verdicts), queue=str(queue) if queue else None,
                  split=split, level=level, seed=seed, method=result.method)
    typer.echo(f"legally inaccurate: {result.share_legal:.1%} [{result.ci_low:.1%}, {result.ci_high:.1%}] "
               f"of {result.population} pairs ({split})")
    for s in result.strata:
        rate = "n/a" if s.rate is None else f"{s.rate:.1%}"
        typer.echo(f"  {s.name}: {s.legal}/{s.reviewed} reviewed legal ({rate}) of {s.population} pairs")
    for note in result.assumptions:
        typer.echo(f"  assumption: {note}")


def register(app: typer.Typer) -> None:
    app.add_typer(annotate, name="annotate")
