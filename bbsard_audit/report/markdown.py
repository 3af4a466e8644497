"""The report as Markdown tables, for a pull request or a paper appendix (figures stay in the HTML)."""

from __future__ import annotations

import html

from .document import Figures, Plot, Report, Section, Table, Text


def render_markdown(report: Report) -> str:
    parts = [f"# {report.title}\n\n{report.subtitle}\n"]
    parts += [_section(s, 2) for s in report.sections]
    return "\n".join(parts)


def _section(section: Section, level: int) -> str:
    out = [f"{'#' * level} {section.title}\n"]
    out += [_block(b) for b in section.blocks]
    out += [_section(s, level + 1) for s in section.subsections if not s.empty]
    return "\n".join(out)


def _cell(value: str) -> str:
    """Table cells hold data (questions, flags): HTML in them is shown, never rendered."""
    return html.escape(value, quote=False).replace("|", "\\|").replace("\n", "<br>")


def _block(block) -> str:
    if isinstance(block, Text):
        return html.escape(block.text, quote=False) + "\n"
    if isinstance(block, Figures):
        return "".join(f"- **{k}**: {_cell(v)}\n" for k, v in block.items)
    if isinstance(block, Table):
        lines = [f"*{_cell(block.caption)}*\n", "| " + " | ".join(map(_cell, block.columns)) + " |",
                 "|" + "|".join("---" for _ in block.columns) + "|"]
        lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in block.rows]
        return "\n".join(lines) + "\n"
    if isinstance(block, Plot):
        return f"*Figure in report.html: {block.caption}.*\n"
    raise TypeError(f"unknown report block {type(block).__name__}")
