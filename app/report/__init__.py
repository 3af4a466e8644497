"""`bbsard-audit report`: one HTML page and one Markdown file summarising a work folder."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import write_sidecar, write_text
from .corpus_section import corpus_section
from .reliability_section import add_reliability
from .simulation_section import simulation_section
from .html import render_html
from .loaders import Workdir, load_workdir
from .markdown import render_markdown
from .sections import build, stale_estimate


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    sections: tuple[str, ...]
    review: Path | None = None
    """The campaign folder the review files were read from (None: the work folder itself)."""
    warnings: tuple[str, ...] = ()
    """Said on the terminal too (a stale estimate.json)."""


def build_report(workdir: str | Path, out: str | Path | None = None, campaign: str | Path | None = None) -> ReportFiles:
    """Read the stage outputs in `workdir` (review files from its campaign folder, `loaders.review_folder`);
    write report.html and report.md (to `out`, default workdir). A folder with no stage output is refused:
    an empty report would look like a finished one."""
    started = time.perf_counter()
    wd = load_workdir(workdir, campaign)
    simulated = simulation_section(wd.root)
    if not wd.found and simulated is None:
        raise InputError("no stage output here (audit.csv, verdicts.csv, metrics.csv, ...): nothing to report; "
                         "give the folder a stage wrote with --out", file=str(wd.root))
    report = build(wd, extra=[s for s in (corpus_section(wd),) if s is not None], simulated=simulated)
    add_reliability(report, wd)
    out = Path(out) if out is not None else wd.root
    html = write_text(out / "report.html", render_html(report))
    md = write_text(out / "report.md", render_markdown(report))
    write_sidecar(html, inputs=wd.found, sections=[s.title for s in report.sections],
                  timings={"report_s": round(time.perf_counter() - started, 3)})
    stale = stale_estimate(wd.document("estimate.json"), wd)
    return ReportFiles(html, md, tuple(s.title for s in report.sections), wd.review, (stale,) if stale else ())


__all__ = ["ReportFiles", "Workdir", "build_report", "load_workdir"]
