"""The report as plain blocks, built once and rendered twice (HTML for people, Markdown for papers)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Figures:
    """Key numbers shown as cards in HTML and a bullet list in Markdown."""

    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Marked:
    """A table cell of untrusted text with highlighted ranges (evidence spans); each renderer escapes
    the text as any cell's and adds only its own highlight markup around the ranges."""

    text: str
    marks: tuple[tuple[int, int], ...] = ()
    """Sorted, non-overlapping [start, end) ranges of `text`."""

    def parts(self) -> list[tuple[str, bool]]:
        """(segment, highlighted) in order, empty segments left out."""
        out, at = [], 0
        for start, end in self.marks:
            out += [(self.text[at:start], False), (self.text[start:end], True)]
            at = end
        out.append((self.text[at:], False))
        return [(t, m) for t, m in out if t]


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str | Marked, ...], ...]
    wide: bool = False
    """Long free text (questions side by side): wrap cells and give the table the full width."""
    visible: int | None = None
    """Rows shown open; the rest folds into a collapsed `<details>` (no scripts). None: all open."""


@dataclass(frozen=True)
class Details:
    """Blocks folded under a one-line summary (collapsed until the reader opens it)."""

    summary: str
    blocks: tuple


@dataclass(frozen=True)
class Headline:
    """One sentence of the report's Findings block and the section (anchor) holding its evidence
    (not `audit.findings.Finding`, a check's flag on one pair)."""

    text: str
    anchor: str
    label: str


@dataclass(frozen=True)
class Plot:
    caption: str
    alt: str
    png: bytes


@dataclass
class Section:
    key: str
    title: str
    blocks: list = field(default_factory=list)
    subsections: list["Section"] = field(default_factory=list)

    def add(self, block) -> None:
        self.blocks.append(block)

    def sub(self, title: str, key: str | None = None) -> "Section":
        """A subsection; `key` gives it a stable anchor (else `<parent>-<n>`) for Findings to link to."""
        child = Section(key=key or f"{self.key}-{len(self.subsections) + 1}", title=title)
        self.subsections.append(child)
        return child

    @property
    def empty(self) -> bool:
        return not self.blocks and all(s.empty for s in self.subsections)


@dataclass
class Report:
    title: str
    subtitle: str
    sections: list[Section]
