"""The report as Markdown tables, for a pull request or a paper appendix (figures stay in the HTML)."""

from __future__ import annotations

from .document import Details, Figures, Finding, Plot, Report, Section, Table, Text


def render_markdown(report: Report) -> str:
    parts = [f"# {report.title}\n\n{report.subtitle}\n"]
    parts += [_section(s, 2) for s in report.sections]
    return "\n".join(parts)


def _section(section: Section, level: int) -> str:
    out = [f'<a id="{section.key}"></a>\n\n{"#" * level} {section.title}\n']
    out += [_block(b) for b in section.blocks]
    out += [_section(s, level + 1) for s in section.subsections if not s.empty]
    return "\n".join(out)


def _cell(value: str) -> str:
    return _no_html(value).replace("|", "\\|").replace("\n", "<br>")


def _no_html(text: str) -> str:
    """Cells and text hold data (questions, reasons): a tag in them is shown, never rendered."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _table(block: Table, rows) -> str:
    lines = [f"*{_cell(block.caption)}*\n", "| " + " | ".join(map(_cell, block.columns)) + " |",
             "|" + "|".join("---" for _ in block.columns) + "|"]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _block(block) -> str:
    if isinstance(block, Text):
        return _no_html(block.text) + "\n"
    if isinstance(block, Figures):
        return "".join(f"- **{k}**: {_cell(v)}\n" for k, v in block.items)
    if isinstance(block, Finding):
        return f"- {block.text} ([{block.label}](#{block.anchor}))\n"
    if isinstance(block, Table):
        if block.visible == 0:
            return (f"<details><summary>{_cell(block.caption)} ({len(block.rows):,} rows)</summary>\n\n"
                    f"{_table(block, block.rows)}\n</details>\n")
        shown = block.rows if block.visible is None else block.rows[:block.visible]
        text = _table(block, shown)
        rest = block.rows[len(shown):]
        if rest:
            text += f"\n<details><summary>{len(rest):,} more row(s)</summary>\n\n{_table(block, rest)}\n</details>\n"
        return text
    if isinstance(block, Details):
        inner = "\n".join(_block(b) for b in block.blocks)
        return f"<details><summary>{_cell(block.summary)}</summary>\n\n{inner}\n</details>\n"
    if isinstance(block, Plot):
        return f"*Figure in report.html: {block.caption}.*\n"
    raise TypeError(f"unknown report block {type(block).__name__}")
