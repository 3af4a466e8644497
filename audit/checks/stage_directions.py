"""QA check `stage_directions`: a stage direction of the source ('(Laughter)', '(Applause)') that the
translation drops while it translates the rest is an omission (raters count it). The directions are
the language packs' `stage_directions` (audit/stage.py); the evidence spans are the source's dropped
directions."""

from __future__ import annotations

from pathlib import Path

from .. import stage
from ..findings import Finding
from ..signal_cache import fingerprint
from ..stage import stage_directions
from .base import Check, Side

FLAGS = {
    "stage_direction_dropped": "The source reports a stage direction ('(Laughter)', '(Applause)') that the "
                               "translation lacks, bracketed or not: an omission.",
}
SCHEMA = {"needs": "words"}


class StageDirectionsCheck(Check):
    name = "stage_directions"
    order = 97
    flags = FLAGS
    categories = {"stage_direction_dropped": "omission"}
    weights = {"stage_direction_dropped": 0.55}
    columns = ("qa_stage_dropped",)
    packages = ()
    data = "stage_directions"

    def signature(self) -> str:
        return super().signature() + fingerprint([Path(stage.__file__)])[:16]

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        src, tgt = stage_directions(source.text, source.lang), stage_directions(target.text, target.lang)
        dropped = src.bracketed - tgt.words
        if not dropped:
            return [], (0,)
        names = ", ".join(sorted(dropped))
        spans = source.spans(list(src.spans), "stage_direction_dropped")
        return [Finding("stage_direction_dropped", f"the {source.pack.name} reports {names}; the "
                                                   f"{target.pack.name} does not", spans)], (sum(dropped.values()),)
