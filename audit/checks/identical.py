"""QA check `identical`: the Dutch is the French text unchanged (after case/accent folding); the
whole Dutch text is the evidence span."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from bbsard_audit.base import languages

from ..findings import Finding, spans_at
from ..termmatch import fold
from .base import DEFAULT_PAIR, Check, Pair, frame

FLAGS = {
    "identical_to_source": "The Dutch text is the French text (after case/accent folding).",
}
COLUMNS = ["qa_identical"]


def is_identical(fr: str, nl: str) -> bool:
    return fold(fr.strip()) == fold(nl.strip()) and bool(fr.strip())


class IdenticalCheck(Check):
    name = "identical"
    order = 80
    flags = FLAGS
    categories = {"identical_to_source": "untranslated"}
    weights = {"identical_to_source": 0.9}
    packages = ()

    def check(self, fr: Sequence[str], nl: Sequence[str], pair: Pair = DEFAULT_PAIR
              ) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        detail = f"the {languages.get(pair[1]).name} is the {languages.get(pair[0]).name} text unchanged"
        for fr_text, nl_text in zip(fr, nl):
            same = is_identical(fr_text, nl_text)
            start = len(nl_text) - len(nl_text.lstrip())
            findings.append([Finding("identical_to_source", detail,
                                     spans_at("nl", nl_text, [(start, len(nl_text.rstrip()))], "identical_to_source"))]
                            if same else [])
            rows.append((int(same),))
        return findings, frame(rows, COLUMNS)
