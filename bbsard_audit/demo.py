"""`bbsard-audit demo`: every stage that exists, run on the embedded sample, offline."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from .dataset import load_dataset
from .io import write_json, write_sidecar

console = Console(stderr=True)


def run_demo(out: Path) -> Path:
    """Run the pipeline on `sample` into `out`; return the main output's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ran = []
    with console.status("validating the embedded sample"):
        ds = load_dataset("sample")
    summary = out / "dataset.json"
    write_json(summary, {**ds.provenance(), "warnings": [w.one_line() for w in ds.warnings]})
    write_sidecar(summary, dataset=ds.provenance())
    ran.append(f"validate: {len(ds.pairs)} pairs, {len(ds.corpus or [])} articles -> {summary}")
    for line in ran:
        console.print(f"[green]✓[/green] {line}")
    console.print(f"demo ran: {', '.join(r.split(':')[0] for r in ran)}; outputs in {out}")
    return summary
