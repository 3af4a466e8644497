"""QA check `length`: omission and addition, from the Dutch/French length ratio and sentence counts.

The length ratio is judged against the batch itself (robust z-score of the log ratio), so this check
is batch-dependent; it has no evidence spans (what is missing is not in the text). Abbreviations
that do not end a sentence: each language pack's `abbreviations` (those of both languages).
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple, Sequence

import numpy as np

from bbsard_audit.base import languages
from bbsard_audit.base.untrusted import visible

from ..findings import Finding
from ..signals import Rule
from .base import Check, Pair, Side

FLAGS = {
    "omission": "The Dutch is much shorter than the French relative to the batch (robust z-score of the log "
                "length ratio) or has fewer sentences while also being shorter than usual.",
    "addition": "The Dutch is much longer than the French relative to the batch, or has more sentences while "
                "also being longer than usual.",
}
SCHEMA = {"needs": "words"}

# Median and robust scale (1.4826·MAD) of log(len_nl/len_fr) in characters, measured on the bBSARD
# train split; used when a batch is too small (< MIN_BATCH_FOR_STATS pairs) to estimate its own.
REFERENCE_LOG_RATIO = (0.02, 0.12)
MIN_BATCH_FOR_STATS = 50
LENGTH_Z = 3.5
MIN_CHARS = 40
"""A length outlier must also miss (or add) at least this many characters: "Qu'est-ce que la traite
d'êtres humains ?" -> "Wat is mensenhandel?" is half as long and still complete."""
OMISSION_SENTENCE_Z = 0.0
"""Fewer Dutch sentences flags an omission when the Dutch is also shorter than the batch median
(a dropped sentence shortens it; two sentences merged into one keep the usual length)."""
ADDITION_SENTENCE_Z = 1.5
"""More Dutch sentences flags an addition only when clearly longer (GPT-4o often splits a sentence)."""

_SENTENCE_END = re.compile(r"[.!?]+(?=\s+[A-ZÀ-ÖØ-Þ«\"(]|\s*$)")


@cache
def _abbreviations(pair: Pair) -> re.Pattern:
    """The abbreviations of both languages of the pair, longest first ('p.ex' before 'p')."""
    words = sorted({w for code in pair for w in languages.get(code).section("abbreviations")}, key=lambda w: (-len(w), w))
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\.", re.I)


def count_sentences(text: str, pair: Pair) -> int:
    masked = _abbreviations(pair).sub(lambda m: m.group().replace(".", "_"), text.strip())
    return max(1, len(_SENTENCE_END.findall(masked)) + (0 if re.search(r"[.!?]\W*$", masked) else 1))


def _length_stats(log_ratio: np.ndarray) -> tuple[float, float]:
    if len(log_ratio) < MIN_BATCH_FOR_STATS:
        return REFERENCE_LOG_RATIO
    median = float(np.median(log_ratio))
    scale = float(1.4826 * np.median(np.abs(log_ratio - median)))
    return median, max(scale, 0.05)


class Lengths(NamedTuple):
    """A pair's lengths against the batch: characters of each side (at least 1), the robust z-score
    of its log length ratio and the batch's median log ratio."""

    source: float
    target: float
    z: float
    median: float


class LengthCheck(Check):
    name = "length"
    order = 60
    flags = FLAGS
    categories = {"omission": "omission", "addition": "addition"}
    weights = {"omission": 0.55, "addition": 0.35}
    rules = (
        Rule("qa_len_z", "short_translation", threshold=-2.0, scale=0.4, weight=0.45, order=40, category="omission",
             reason="{target} is shorter than usual for its {source} (length z {value:.1f} < {threshold:g})",
             doc="The Dutch is shorter than the French by more than the configured number of robust deviations of "
                 "the batch's log length ratio (`qa_len_z`), below the QA check's own `omission` cut-off: weak "
                 "evidence alone, strong together with a dropped sentence."),
        Rule("qa_sentence_gap", "sentence_dropped", threshold=0.5, scale=0.1, weight=0.45, order=50,
             direction="above", category="omission",
             reason="{source} has {value:.0f} more sentence(s) than the {target}: a context sentence may be missing",
             doc="The Dutch has fewer sentences than the French (`qa_sentence_gap` = French minus Dutch sentence "
                 "count): a context sentence such as 'Je suis locataire.' may be missing."),
    )
    columns = ("qa_sentences_{source}", "qa_sentences_{target}", "qa_len_ratio", "qa_len_z", "qa_sentence_gap")
    context = ("qa_sentences_{source}", "qa_sentences_{target}", "qa_len_ratio")
    data = "length"
    packages = ("numpy",)

    def prepare(self, source: Sequence[str], target: Sequence[str], pair: Pair) -> list[Lengths]:
        src_len = np.array([max(len(visible(t).strip()), 1) for t in source], dtype=float)
        tgt_len = np.array([max(len(visible(t).strip()), 1) for t in target], dtype=float)
        log_ratio = np.log(tgt_len / src_len) if len(source) else np.zeros(0)
        median, scale = _length_stats(log_ratio)
        z = (log_ratio - median) / scale
        return [Lengths(s, t, zz, median) for s, t, zz in zip(src_len, tgt_len, z)]

    def compare(self, source: Side, target: Side, stats: Lengths) -> tuple[list[Finding], tuple]:
        pair = (source.lang, target.lang)
        src_s, tgt_s = count_sentences(source.text, pair), count_sentences(target.text, pair)
        ratio, z = stats.target / stats.source, stats.z
        # characters the target lacks (or adds) against a typical translation of this source
        excess = stats.target - stats.source * np.exp(stats.median)
        detail = (f"{target.code} is {ratio:.0%} of the {source.pack.name} length (z = {z:.1f}); "
                  f"sentences {source.code} {src_s}, {target.code} {tgt_s}")
        out = []
        if (z <= -LENGTH_Z and -excess >= MIN_CHARS) or (tgt_s < src_s and z <= -OMISSION_SENTENCE_Z):
            out.append(Finding("omission", detail))
        elif (z >= LENGTH_Z and excess >= MIN_CHARS) or (tgt_s > src_s and z >= ADDITION_SENTENCE_Z):
            out.append(Finding("addition", detail))
        # qa_sentence_gap: how many more sentences the source has (the `sentence_dropped` rule)
        return out, (src_s, tgt_s, ratio, z, src_s - tgt_s)
