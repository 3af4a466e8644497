"""QA check `identical`: the Dutch is the French text unchanged (after case/accent folding); the
whole Dutch text is the evidence span."""

from __future__ import annotations

from ..findings import Finding
from bbsard_audit.base.untrusted import visible

from ..termmatch import fold
from .base import Check, Side

FLAGS = {
    "identical_to_source": "The Dutch text is the French text (after case/accent folding).",
}


def is_identical(source: str, target: str) -> bool:
    source, target = visible(source).strip(), visible(target).strip()
    return fold(source) == fold(target) and bool(source)


class IdenticalCheck(Check):
    name = "identical"
    order = 80
    flags = FLAGS
    categories = {"identical_to_source": "untranslated"}
    weights = {"identical_to_source": 0.9}
    columns = ("qa_identical",)
    packages = ()

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        same = is_identical(source.text, target.text)
        if not same:
            return [], (0,)
        text = target.text
        detail = f"the {target.pack.name} is the {source.pack.name} text unchanged"
        span = target.spans([(len(text) - len(text.lstrip()), len(text.rstrip()))], "identical_to_source")
        return [Finding("identical_to_source", detail, span)], (1,)
