"""`bbsard-audit annotate ...`: expert review in Label Studio (thin layer over annotations.*)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import pandas as pd
import typer
from rich.progress import Progress

from bbsard_audit.base.cli_options import dataset_option, guard_out, seed_option
from bbsard_audit.base.contracts.campaign_design import campaigns_inside, check_campaign_folder
from bbsard_audit.base.contracts.estimate import STOPPING_BOUND
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.contracts.verdicts import read_raw
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import file_problem, sidecar_path, write_csv, write_json, write_sidecar

from .adjudication import AdjudicationRule, disagreements
from .agreement import agreement as compute_agreement
from .draw import CERTAIN_SHARE, DrawRule
from .estimate import Goal, check_level
from .estimate_files import check_files, estimate_files
from .pull import (RAW_FILE, REFUSED_FILE, choice_conflicts, pull as pull_verdicts, raw_from_export, read_export_file,
                   foreign_annotations, refused_annotations)
from .spans import SPANS_FILE
from bbsard_audit.base.contracts.audit import Layout

from .tasks import AUDIT_COLUMNS, QUEUE_COLUMNS, audit_version, build_tasks, label_config, read_audit

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
Config = Annotated[Optional[Path], typer.Option(
    "--ls-config", metavar="FILE", help="Label Studio credentials: a TOML file with [label_studio] url, api_key "
                                        "(default: ~/.config/bbsard-audit holds it as config.toml; old spelling "
                                        "--config).")]
Project = Annotated[str, typer.Option("--project", help="Label Studio project title.")]
Retries = Annotated[int, typer.Option(help="Retries (exponential backoff) on transient errors.")]
Timeout = Annotated[float, typer.Option(help="Seconds one HTTP request may take, body included; one operation "
                                              "(with its retries, or a listing with all its pages) may take "
                                              "(retries + 1) times this.")]
TargetHalfwidth = Annotated[Optional[float], typer.Option(help="Stopping target: half-width of the error-rate "
                                                                "CI (a share, e.g. 0.02).")]
MaxMissed = Annotated[Optional[float], typer.Option(help="Stopping target: at most this many legal errors left "
                                                         "among the unreviewed pairs, compared with the stopping "
                                                         "bound (the upper end of the confidence sequence, valid "
                                                         "however often checked), not with the expected number; a "
                                                         "campaign without probability draws has no stopping bound "
                                                         "and compares the expected number (it says so).")]


def _connection(url, config, retries, timeout) -> Connection:
    from .connection import Connection

    return Connection.resolve(url, config, retries=retries, timeout=timeout)


def _open_project(conn, title: str, **options):
    from .project import ReviewProject

    return ReviewProject.open(conn, title, **options)


def _dataset(source: Optional[str], audit: Path):
    """The dataset whose gold articles the tasks show: `--dataset`, else the one audit.meta.json names
    (`bbsard_audit.base.dataset.recorded_source`). One that cannot be found or loaded is said in one line and
    the tasks go without gold articles: the review itself does not need them."""
    from bbsard_audit.base.dataset import load_dataset, recorded_source, same_data

    def skip(why: str) -> None:
        typer.echo(f"gold articles not shown: {why}; give --dataset SRC", err=True)

    recorded, named = None, source
    if not source:
        meta = sidecar_path(audit)
        recorded = read_sidecar(meta).get("dataset") if meta.is_file() else None
        if not isinstance(recorded, dict):
            return skip(f"{meta.name} names no dataset")
        named = f"the audit's dataset {recorded.get('source')} (revision {recorded.get('revision')})"
        source = recorded_source(recorded)
        if source is None:
            return skip(f"{named} is not known on this machine")
    try:
        ds = load_dataset(source, strict=recorded is not None)
    except InputError as exc:
        return skip(f"cannot load {named}: {exc.one_line()}")
    if recorded is not None:
        if not same_data(ds, recorded):
            return skip(f"{named} has changed since the audit")
        typer.echo(f"gold articles from {named}")
    return ds


def _queue_tasks(audit: Path, queue: Optional[Path], dataset: Optional[str]) -> tuple[list[dict], pd.DataFrame]:
    frame = read_audit(queue, QUEUE_COLUMNS) if queue else read_audit(audit, AUDIT_COLUMNS)
    return build_tasks(frame, model_version=audit_version(audit), dataset=_dataset(dataset, audit),
                       layout=Layout.of(audit)), frame


@annotate.command()
def push(audit: Annotated[Path, typer.Option(help="audit.csv of the audit stage (with --next: the audit re-run "
                                                   "with `audit --learned`).")],
         project: Project,
         queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv (default: every audit row).")] = None,
         campaign: Annotated[Optional[Path], typer.Option(help="Campaign folder: the first push records the design "
                                                               "(strata over every pair + control sample) in "
                                                               "campaign.json; pull into DIR/verdicts.csv.")] = None,
         next_n: Annotated[Optional[int], typer.Option("--next", metavar="N",
                                                       help="Add a batch (needs --campaign) from the pairs of --audit "
                                                            "never queued or reviewed: a probability draw of exactly N "
                                                            "pairs (Brewer's πps: never over a budget; the likeliest "
                                                            "errors with certainty, the rest with probabilities growing "
                                                            "with p_error, else risk, read as at least 1 %); an older "
                                                            "campaign folder: the N riskiest. The trade-off: each pair "
                                                            "drawn by chance instead of by rank is an error the ranking "
                                                            "might have found, bought for an interval on the pairs never "
                                                            "reviewed (the ranking alone has none); `campaign simulate` "
                                                            "prints both for your audit.")] = None,
         dataset: Annotated[Optional[str], dataset_option("Dataset, to show gold article ids (and titles when a "
                                                               "corpus is loaded); default: the one audit.meta.json names.",
                                                               short=False)] = None,
         certain: Annotated[float, typer.Option(help="With --next (format-3 campaign): share of the batch forced "
                                                     "certain, the likeliest errors, on top of those the draw rule "
                                                     "takes with certainty; the rest is drawn with probabilities "
                                                     "growing with p_error (else risk).")] = CERTAIN_SHARE,
         seed: Annotated[int, seed_option("Seed of the campaign's draws (recorded at the start; each "
                                                "`--next` batch draws with (seed, batch number)).")] = 0,
         overlap: Annotated[int, typer.Option(help="Annotations wanted per task.")] = 2,
         batch_size: Annotated[int, typer.Option("--request-size", metavar="N", help="Tasks per import request.")] = 250,
         update_config: Annotated[bool, typer.Option(help="Add the span labels to a project created with an older "
                                                          "labelling config (nothing is removed).")] = False,
         url: Url = None, config: Config = None, retries: Retries = 3, timeout: Timeout = 60.0) -> None:
    """Create the project if absent and import the queued questions not yet there (never a duplicate).

    Example: `bbsard-audit annotate push --audit out/audit.csv --queue out/review_queue.csv --project bbsard-review`

    Adaptive campaign: `--campaign camp --queue out/review_queue.csv` first, then after pull and
    `audit learn` / `audit --learned`: `--campaign camp --audit out2/audit.csv --next 20`.

    The trade-off of `--next` (measured, benchmarks/bench_ppi_design.md; 70 reviews of 222 in batches of
    14, half of each batch certain): on the real bBSARD test split the draw found 15.8 errors where the 56
    riskiest + 14 control found 15.9, and its 95 % interval was 9.8 points wide instead of 14.9 (covering
    100 %); where the audit does not see the errors (MQM, AUC 0.52) 8.4 against 8.2 found, 20.5 against 23.1
    points, covering 94.5 % (97 %); where the errors follow p_error itself (the ranking's best case) 14.3
    against 14.9 found, 8.0 against 13.8 points (`--certain 0.8`: 14.8 found, 10.2 points). `campaign simulate` prints, for your audit, the errors the draws expected
    to find against the top-N ranking and the interval they bought.
    """
    if next_n is not None and next_n < 1:
        raise InputError(f"--next must be >= 1, not {next_n}: a batch of {next_n} pairs reviews nothing")
    if next_n is not None and campaign is None:
        raise typer.BadParameter("--next needs --campaign (the folder that holds campaign.json)")
    for option, path in (("--audit", audit), ("--queue", queue)):  # before any server or campaign is touched
        problem = file_problem(path) if path is not None else None
        if problem:
            raise InputError(f"{option} {problem}", file=str(path))
    state = _campaign(campaign, audit, queue, project, next_n, seed) if campaign else None
    conn = _connection(url, config, retries, timeout)
    proj = _open_project(conn, project, create=True, overlap=overlap, layout=Layout.of(audit))
    if proj.check_config(update=update_config):
        typer.echo(f"project {project!r}: labelling config updated (span labels added)")
    if state is not None:
        if next_n is not None:
            rows = state.add_batch(read_audit(audit), audit, next_n, set(proj.question_ids()), DrawRule(certain))
            pool = len(state.record["batches"][-1].get("pool") or [])
            typer.echo(f"campaign {campaign}: batch {len(state.record['batches']) - 1} queues {len(rows)} pair(s)"
                       + (f" (only {len(rows)} unreviewed pair(s) left)" if len(rows) < next_n and (
                           not state.drawn or pool <= next_n) else
                          f" (a probability draw of {'exactly' if state.record['batches'][-1].get('sampling') == 'brewer' else 'expected size'} "
                          f"{next_n} from {pool} pair(s), by {state.record['batches'][-1]['prediction']})"
                          if state.drawn else ""))
        state.save()  # before importing: an interrupted push is resumed by the next one
        reviewed = state.reviewed()
        frame = state.queue[~state.queue["id"].isin(reviewed)]
        tasks = build_tasks(frame, model_version=audit_version(audit), dataset=_dataset(dataset, audit),
                            layout=Layout.of(audit))
    else:
        tasks, _ = _queue_tasks(audit, queue, dataset)
    with Progress(transient=True) as bar:
        job = bar.add_task("importing tasks", total=len(tasks))
        result = proj.push(tasks, batch_size=batch_size, progress=lambda n: bar.advance(job, n))
    typer.echo(f"project {project!r} (id {result.project_id}): {result.created} task(s) imported, "
               f"{result.already_there} already there, {result.seconds:.1f} s")
    if result.duplicates_on_server:
        typer.echo(f"warning: {len(result.duplicates_on_server)} question(s) have several tasks on the "
                   f"server (ids {result.duplicates_on_server[:10]}); pull merges them", err=True)


def _campaign(folder: Path, audit: Path, queue: Optional[Path], project: str, next_n: Optional[int], seed: int = 0):
    """The campaign in `folder`: loaded (its start queue unchanged), or started from --queue."""
    from .adaptive import Campaign

    if Campaign.exists(folder):
        state = Campaign.load(folder)
        if queue is not None:
            state.check_start_queue(queue)
        if state.record["project"] != project:
            raise InputError(f"campaign {folder} reviews in project {state.record['project']!r}, not {project!r}")
        return state
    if next_n is not None or queue is None:
        if folder.is_dir() and campaigns_inside(folder):
            check_campaign_folder(folder)  # the work folder given for the campaign folder inside it: named
        raise InputError(f"no campaign in {folder}: start it with --queue review_queue.csv (no --next)")
    return Campaign.start(folder, project=project, audit=read_audit(audit), audit_path=audit,
                          queue=read_audit(queue, QUEUE_COLUMNS), queue_path=queue, seed=seed)


@annotate.command("export-tasks")
def export_tasks(audit: Annotated[Path, typer.Option(help="audit.csv of the audit stage.")],
                 out: Annotated[Path, typer.Option(help="Label Studio import JSON to write.")],
                 queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv.")] = None,
                 dataset: Annotated[Optional[str], dataset_option("Dataset (gold article ids); default: the one "
                                                                       "audit.meta.json names.", short=False)] = None) -> None:
    """Write the Label Studio import JSON (tasks + predictions) for an air-gapped server.

    Example: `bbsard-audit annotate export-tasks --audit out/audit.csv --queue out/review_queue.csv --out out/tasks.json`
    """
    guard_out(out, command="annotate export-tasks", inputs=[audit, queue], folder=False)
    tasks, _ = _queue_tasks(audit, queue, dataset)
    write_json(out, tasks)
    write_sidecar(out, audit=audit, queue=queue, n_tasks=len(tasks),
                  model_version=audit_version(audit), label_config=label_config(Layout.of(audit)))
    typer.echo(f"{len(tasks)} task(s) -> {out}; in Label Studio, create a project whose labelling interface "
               f"(Settings > Labeling Interface > Code) is `label_config` of {sidecar_path(out)}, then import {out}; "
               f"`annotate pull --from-file EXPORT.json` reads its JSON export back")


@annotate.command()
def pull(out: Annotated[Path, typer.Option(help="verdicts.csv to write (annotations_raw.csv goes next to it).")],
         project: Annotated[Optional[str], typer.Option("--project", help="Label Studio project title.")] = None,
         from_file: Annotated[Optional[Path], typer.Option(help="Read a Label Studio JSON export instead of the server.")] = None,
         adjudication: Annotated[Optional[Path], typer.Option(help="Adjudication TOML (default: annotations/adjudication.toml).")] = None,
         url: Url = None, config: Config = None, retries: Retries = 3, timeout: Timeout = 60.0) -> None:
    """Export all annotations and write verdicts.csv + annotations_raw.csv, merged with earlier pulls.

    Example: `bbsard-audit annotate pull --project bbsard-review --out out/verdicts.csv`
    """
    kept = [RAW_FILE, sidecar_path(RAW_FILE).name, SPANS_FILE, sidecar_path(SPANS_FILE).name, REFUSED_FILE]
    guard = guard_out(out, command="annotate pull", inputs=[from_file, adjudication, config], folder=False,
                      names=[RAW_FILE, sidecar_path(RAW_FILE).name, REFUSED_FILE], preserve=kept)
    rule = AdjudicationRule.load(adjudication)
    if from_file:
        tasks, users, source = read_export_file(from_file), {}, {"export_file": str(from_file)}
        origin = str(from_file)
    else:
        if not project:
            raise typer.BadParameter("give --project (or --from-file)")
        proj = _open_project(_connection(url, config, retries, timeout), project)
        tasks, users = proj.export(), proj.users()
        source = {"label_studio_url": proj.conn.shown_url, "project": project, "project_id": proj.id}
        origin = f"Label Studio project {project!r}"
    raw, verdicts = pull_verdicts(tasks, out, users=users, rule=rule, source=source, origin=origin)
    counts = verdicts["agreement_status"].value_counts()
    said = ", ".join(f"{n} {status}" + (" (no verdict until adjudicated)" if status == "unresolved" else "")
                     for status, n in counts.items()) or "no question annotated yet"
    typer.echo(f"{len(raw)} annotation(s) on {len(verdicts)} question(s) -> {out}: {said}")
    conflicts = choice_conflicts(tasks)
    if len(conflicts):
        typer.echo(f"warning: {len(conflicts)} annotation(s) give several choices to a single-choice control "
                   f"(annotation ids {', '.join(map(str, conflicts['annotation_id'][:10]))}; question ids "
                   f"{', '.join(map(str, sorted(set(conflicts['id']))[:10]))}): those questions are left "
                   "unresolved; fix the annotations in Label Studio and pull again", err=True)
    for r in refused_annotations(tasks):  # one line each; every other annotation was pulled
        typer.echo(f"warning: task {r['task_id']} (question {r['id']}, annotation {r['annotation_id']}): "
                   f"{r['reason']}: not pulled, kept verbatim in {out.with_name(REFUSED_FILE)}; its question is "
                   "left unresolved; fix the annotation in Label Studio and pull again", err=True)
    foreign = foreign_annotations(tasks)
    if foreign:
        tasks_of = sorted({str(r["task_id"]) for r in foreign})
        typer.echo(f"warning: {len(foreign)} annotation(s) on {len(tasks_of)} task(s) without a question_id (task ids "
                   f"{', '.join(tasks_of[:10])}{', ...' if len(tasks_of) > 10 else ''}; tasks bbsard-audit did not "
                   f"push) count for no question: kept verbatim in {out.with_name(REFUSED_FILE)}", err=True)
    for name, copy in guard.kept:
        typer.echo(f"note: {name} was changed since `annotate pull` wrote it: its annotations are merged, "
                   f"and that version is kept as {copy}", err=True)


@annotate.command()
def status(project: Project,
           audit: Annotated[Optional[Path], typer.Option(help="audit.csv: also report the errors left unreviewed "
                                                             "and the stopping target (with --verdicts or --campaign).")] = None,
           verdicts: Annotated[Optional[Path], typer.Option(help="verdicts.csv written by pull.")] = None,
           queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv (risk queue + control).")] = None,
           campaign: Annotated[Optional[Path], typer.Option(help="Campaign folder (its design, queue and verdicts.csv).")] = None,
           split: Annotated[str, typer.Option(help="train, test or all.")] = "all",
           estimate_file: Annotated[Optional[Path], typer.Option(
               "--estimate", metavar="FILE", help="estimate.json (written by `annotate estimate`) whose errors left "
                                                  "to report, at its own level (default with --campaign DIR: "
                                                  "DIR/estimate.json when it exists).")] = None,
           target_halfwidth: TargetHalfwidth = None, max_missed: MaxMissed = None,
           url: Url = None, config: Config = None, retries: Retries = 3, timeout: Timeout = 60.0) -> None:
    """Tasks, annotated, remaining, annotations per annotator, and the errors left as estimate.json says them
    (the one estimate: its level and figures; said stale when the verdicts changed since). Without an
    estimate.json, --audit computes them now (nothing written).

    Example: `bbsard-audit annotate status --project bbsard-review --campaign camp --max-missed 5`
    """
    if audit is not None and verdicts is None and campaign is None:
        raise typer.BadParameter("--audit needs --verdicts or --campaign")
    goal = Goal(target_halfwidth, max_missed)
    if estimate_file is None and campaign is not None and (campaign / ESTIMATE_FILE).is_file():
        estimate_file = campaign / ESTIMATE_FILE
    recorded = _read_estimate(estimate_file, verdicts or (campaign / "verdicts.csv" if campaign else None)) \
        if estimate_file is not None else None  # read before the server is asked: a bad file is one line
    conn = _connection(url, config, retries, timeout)
    proj = _open_project(conn, project)
    tasks = proj.export()
    overlap = conn.call("get project", lambda: proj.client.projects.get(proj.id)).maximum_annotations or 1
    raw = raw_from_export(tasks, proj.users())
    per_task = raw.groupby("task_id").size()
    done = int((per_task >= overlap).sum())
    waiting = int(per_task.size - done)
    more = "awaiting a second annotator" if overlap == 2 else f"awaiting more annotators (of {overlap})"
    typer.echo(f"project {project!r} (id {proj.id}): {done} of {len(tasks)} task(s) done ({overlap} annotation(s) "
               f"required per task), {waiting} {more}, {len(tasks) - per_task.size} never annotated; "
               f"{len(raw)} annotation(s) in all")
    for name, n in raw.groupby("annotator").size().sort_values(ascending=False).items():
        typer.echo(f"  {name}: {n}")
    if recorded is not None:
        result, stale = recorded
        typer.echo(f"errors left as {estimate_file.name} says them ({100 * result.level:g}% level, "
                   f"{result.population:,} pairs)" + (f"; {stale}" if stale else ""))
        if goal.set:
            result.target = goal.judge(result)
        _report_missed(result)
    elif audit is not None:
        _check_inputs(verdicts, queue, campaign)
        result, _ = estimate_files(audit, verdicts, queue, campaign, split, 0.95, 0, goal)
        typer.echo("no estimate.json: the errors left computed now at the 95% level, nothing written "
                   "(`annotate estimate --out` writes the one estimate every command and the report read)")
        _report_missed(result)


ESTIMATE_FILE = "estimate.json"


def _read_estimate(path: Path, verdicts: Optional[Path]):
    """(estimate.json read strictly, a sentence when it was computed from other final verdicts than
    `verdicts` holds now, else ""): `annotate status` says the one estimate, never a second one."""
    from bbsard_audit.base.contracts.estimate import Estimate
    from bbsard_audit.base.contracts.jsonfile import read_checked
    from bbsard_audit.base.contracts.verdicts import fingerprint, read_verdicts

    if not path.is_file():
        raise InputError("no such estimate.json (write it with `annotate estimate --out`)", file=str(path))
    result = read_checked(Estimate, path, "an estimate.json")
    if result.errors_left is None:
        raise InputError("this estimate.json has no errors left (no unreviewed pairs were estimated)", file=str(path))
    stale = ""
    if result.verdicts is not None and verdicts is not None and verdicts.is_file():
        table = read_verdicts(verdicts)
        final = table[table["verdict"] != ""]
        n, sha = fingerprint(zip(final["id"], final["verdict"]))
        if sha != result.verdicts.sha256:
            stale = (f"STALE: computed from {result.verdicts.final:,} final verdict(s), {verdicts.name} now holds "
                     f"{n:,} other ones (re-run `annotate estimate`)")
    return result, stale


@annotate.command()
def agreement(raw: Annotated[Path, typer.Option(help=f"{RAW_FILE} written by pull.")],
              out: Annotated[Path, typer.Option(help="Folder for agreement.json and disagreements.csv.")],
              n_boot: Annotated[int, typer.Option(help="Bootstrap resamples of items.")] = 2000,
              seed: Annotated[int, seed_option("Bootstrap seed.")] = 0,
              adjudication: Annotated[Optional[Path], typer.Option(help="Adjudication TOML.")] = None) -> None:
    """Cohen's kappa per annotator pair and Krippendorff's alpha, overall and legal-vs-not, with CIs.

    Example: `bbsard-audit annotate agreement --raw out/annotations_raw.csv --out out`
    """
    table = read_raw(raw, layout=Layout.of(raw))  # pull records the pair and id kind in its sidecar
    if table.empty:  # refused before anything is written: "0 disagreement(s)" would read as full agreement
        raise InputError("no annotation in this file: there is no agreement to measure (pull some first)",
                         file=str(raw))
    guard_out(out, command="annotate agreement", inputs=[raw, adjudication],
              names=["agreement.json", "agreement.meta.json", "disagreements.csv", "disagreements.meta.json"])
    report = compute_agreement(table, n_boot=n_boot, seed=seed)
    rule = AdjudicationRule.load(adjudication)
    wide = disagreements(table, rule)
    report.n_disagreements = len(wide)
    record = report.write(out / "agreement.json")
    write_sidecar(out / "agreement.json", files=[record], raw=raw, n_boot=n_boot, seed=seed)
    write_csv(out / "disagreements.csv", wide)
    write_sidecar(out / "disagreements.csv", raw=raw, adjudication=rule.describe())
    for score in report.scores:
        who = f" {' vs '.join(score.annotators)}" if "kappa" in score.name else ""
        typer.echo(f"{score.name}{who}: {score.value:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}] "
                   f"(n={score.n_items})")
    typer.echo(f"{len(wide)} disagreement(s) -> {out / 'disagreements.csv'}")


@annotate.command()
def estimate(audit: Annotated[Path, typer.Option(help="audit.csv (the population: every pair of the split).")],
             out: Annotated[Path, typer.Option(help="estimate.json to write.")],
             verdicts: Annotated[Optional[Path], typer.Option(help="verdicts.csv written by pull "
                                                                   "(default with --campaign: DIR/verdicts.csv).")] = None,
             queue: Annotated[Optional[Path], typer.Option(help="review_queue.csv (risk queue + control).")] = None,
             campaign: Annotated[Optional[Path], typer.Option(help="Campaign folder: the design of its first push "
                                                                   "(strata, control sample) and every batch.")] = None,
             split: Annotated[str, typer.Option(help="train, test or all.")] = "all",
             level: Annotated[float, typer.Option(help="Confidence level.")] = 0.95,
             seed: Annotated[int, seed_option("Monte Carlo seed.")] = 0,
             target_halfwidth: TargetHalfwidth = None, max_missed: MaxMissed = None) -> None:
    """Estimated share of legally inaccurate translations in the split, with a CI, and the legal errors
    expected among the pairs not reviewed yet (the stopping rule). A campaign started now: the
    prediction-powered estimate from every batch's draw, batch by batch, and a stopping bound valid
    when checked after every batch; an older campaign or a --queue: reviewed pairs count exactly, the
    rest of each start-risk band is estimated from its control pairs (docs/annotations.md).

    Example: `bbsard-audit annotate estimate --audit out/audit.csv --queue out/review_queue.csv --verdicts out/verdicts.csv --out out/estimate.json --split test`
    """
    check_level(level)
    goal = Goal(target_halfwidth, max_missed)  # out of range: one line before anything is read or written
    guard_out(out, command="annotate estimate", inputs=[audit, verdicts, queue, campaign], folder=False)
    _check_inputs(verdicts, queue, campaign)
    result, inputs = estimate_files(audit, verdicts, queue, campaign, split, level, seed, goal)
    record = result.write(out)
    write_sidecar(out, files=[record], **inputs, split=split, level=level, seed=seed, method=result.method)
    typer.echo(f"legally inaccurate: {result.share_legal:.1%} [{result.ci_low:.1%}, {result.ci_high:.1%}] "
               f"of {result.population} pairs ({split})")
    for b in result.by_batch:  # format 3: the interval batch by batch
        typer.echo(f"  after batch {b.batch} ({b.reviewed} reviewed): {b.share_legal:.1%} [{b.ci_low:.1%}, "
                   f"{b.ci_high:.1%}], stopping bound [{b.cs_low:.1%}, {b.cs_high:.1%}]")
    for s in result.strata if not result.by_batch else []:
        rate = "n/a" if s.rate is None else f"{s.rate:.1%}"
        sample = f"control: {s.legal}/{s.reviewed} legal, {rate}" if s.control else f"rate {rate}"
        typer.echo(f"  {s.name}: {s.found_legal}/{s.found} reviewed legal ({sample}), {s.unreviewed} of "
                   f"{s.population} pairs unreviewed")
    for note in result.assumptions:
        typer.echo(f"  assumption: {note}")
    _report_missed(result)


def _check_inputs(verdicts: Optional[Path], queue: Optional[Path], campaign: Optional[Path]) -> None:
    """`check_files` as a usage error of the command line (exit 2, with its usage)."""
    try:
        check_files(verdicts, queue, campaign)
    except InputError as exc:
        raise typer.BadParameter(exc.message) from None


def _report_missed(result) -> None:
    """The errors left, from the estimate's one object (`Estimate.errors_left`), worded as the report says them."""
    left = result.errors_left
    typer.echo(f"legal errors left unreviewed (all): {left.sentence(result.level)}")
    if left.stopping_bound is not None:
        typer.echo(f"  {STOPPING_BOUND}")
    for m in result.unreviewed:
        if m.name != "all" and m.unreviewed:  # a legacy design's groups (a stratum reviewed in full is not said)
            typer.echo(f"  of which {m.name}: {m.expected:.1f} expected [{m.ci_low:.0f}, {m.ci_high:.0f}] among "
                       f"{m.unreviewed} pair(s)")
    t = result.target
    if t is not None:
        wanted = [(f"stopping bound {left.stopping_bound:.1f} errors left, {left.expected:.1f} expected (target: at "
                   f"most {t.max_missed:g} by the stopping bound)" if left.stopping_bound is not None else
                   f"{t.expected_missed:.1f} expected errors left (target: at most {t.max_missed:g}); no stopping "
                   "bound in this design, so the expected number is compared")
                  if t.max_missed is not None else "",
                  f"error-rate {'confidence-sequence' if t.rule else 'CI'} half-width {t.halfwidth:.1%} "
                  f"(target: at most {t.target_halfwidth:.1%})"
                  if t.target_halfwidth is not None else ""]
        typer.echo(f"target {'met' if t.met else 'not met'}: {'; '.join(w for w in wanted if w)}")


def register(app: typer.Typer) -> None:
    app.add_typer(annotate, name="annotate")
