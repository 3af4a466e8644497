"""The report as Markdown tables, for a pull request or a paper appendix (figures stay in the HTML).

Every text is data (run and annotator names, questions, reasons): the document's only markup is a
`code` span, as in the HTML renderer; everything else is escaped, so a name such as
`[x](javascript:alert(1))` shows as written and never becomes a link, an image, emphasis or a tag.
"""

from __future__ import annotations

import html
import re

from .document import Details, Figures, Headline, Marked, Plot, Report, Section, Table, Text

_CODE = re.compile(r"(`[^`]+`)")
_INLINE = re.compile(r"[\\`*|~]|(?<=\])\(|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
"""Backslash-escaped: emphasis, strikethrough, table cells, stray backticks and the `(` of `](`, which
ends any link or image (no reference definition can exist: `_BLOCK_START`). `[0.41, 0.80]` stays."""
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_HTML = re.compile(r"[<>]|&(?=#?\w+;)")
"""Tags, autolinks (`<javascript:...>`) and entity references are shown, never rendered."""
_BLOCK_START = re.compile(r"^(\s*)([#+=\[-]|\d+[.)])", re.M)
"""A line that would open a heading, list, setext underline or link reference definition (a quote's
`>` is already `&gt;`)."""


def render_markdown(report: Report) -> str:
    parts = [f"# {_inline(report.title)}\n\n{_text(report.subtitle)}\n"]
    parts += [_section(s, 2) for s in report.sections]
    return "\n".join(parts)


def _section(section: Section, level: int) -> str:
    out = [f'<a id="{html.escape(section.key)}"></a>\n\n{"#" * level} {_inline(section.title)}\n']
    out += [_block(b) for b in section.blocks]
    out += [_section(s, level + 1) for s in section.subsections if not s.empty]
    return "\n".join(out)


def _inline(text: str) -> str:
    """`text` as literal Markdown, its `code` spans kept (a `|` in one is escaped for tables)."""
    parts = _CODE.split(str(text))
    return "".join(part.replace("|", "\\|") if i % 2 else
                   _INLINE.sub(lambda m: "\\" + m.group(0), _HTML.sub(lambda m: _ENTITY[m.group(0)[0]], part))
                   for i, part in enumerate(parts))


def _text(text: str) -> str:
    """A paragraph: inline-escaped, and no line of it opens a block (heading, list, quote)."""
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), _inline(text))


def _cell(value: str | Marked) -> str:
    if isinstance(value, Marked):  # highlighted ranges: the renderer's own <mark> around escaped text
        return "".join(f"<mark>{_cell(t)}</mark>" if m else _cell(t) for t, m in value.parts())
    return _inline(value).replace("\n", "<br>")


def _summary(text: str) -> str:
    """Inside <summary> (raw HTML, not Markdown): HTML-escaped."""
    return html.escape(str(text), quote=False).replace("\n", " ")


def _table(block: Table, rows) -> str:
    lines = [f"*{_cell(block.caption)}*\n", "| " + " | ".join(map(_cell, block.columns)) + " |",
             "|" + "|".join("---" for _ in block.columns) + "|"]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _block(block) -> str:
    if isinstance(block, Text):
        return _text(block.text) + "\n"
    if isinstance(block, Figures):
        return "".join(f"- **{_cell(k)}**: {_cell(v)}\n" for k, v in block.items)
    if isinstance(block, Headline):
        anchor = re.sub(r"[^-\w]", "", block.anchor)
        return f"- {_cell(block.text)} ([{_cell(block.label)}](#{anchor}))\n"
    if isinstance(block, Table):
        if block.visible == 0:
            return (f"<details><summary>{_summary(block.caption)} ({len(block.rows):,} rows)</summary>\n\n"
                    f"{_table(block, block.rows)}\n</details>\n")
        shown = block.rows if block.visible is None else block.rows[:block.visible]
        text = _table(block, shown)
        rest = block.rows[len(shown):]
        if rest:
            text += f"\n<details><summary>{len(rest):,} more row(s)</summary>\n\n{_table(block, rest)}\n</details>\n"
        return text
    if isinstance(block, Details):
        inner = "\n".join(_block(b) for b in block.blocks)
        return f"<details><summary>{_summary(block.summary)}</summary>\n\n{inner}\n</details>\n"
    if isinstance(block, Plot):
        return f"*Figure in report.html: {_cell(block.caption)}.*\n"
    raise TypeError(f"unknown report block {type(block).__name__}")
