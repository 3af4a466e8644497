"""QA check `alignment`: word-alignment evidence learned from the audited pairs themselves (IBM Model 1).

The batch's own parallel text teaches, without labels, how each source word is usually translated
(audit/ibm1.py: EM, both directions, diagonal prior; seeded with the pair's FreeDict word pairs when
they are installed, audit/checks/lexical.py). Per pair, Bicleaner-style:
- `qa_align_logprob_st` / `_ts`: the mean over target (source) words of log max t(word | a word of the
  other side), floored at FLOOR: length-normalised, so a long sentence is not less likely per word;
- `qa_align_content`: the same over the source's content words, each by its best target partner;
- `qa_align_unaligned_{source}` / `_{target}`: content words with no partner at t(f | e) >= THETA and
  no rendering the lexical check finds, and `qa_align_gap` = the smaller of the two: THRESHOLD of each
  raise the `alignment_gap` flag, with spans on those words.

What it can know is what the batch repeats: a word seen once is aligned to whatever shares its
sentence (IBM-1's "garbage collector"), so a rare word wrongly rendered ("a fluke" -> "einem Fluch")
passes unless other pairs translate it. Measured on the MQM TED en-de dev set, benchmarks/bench_mqm.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bbsard_audit.base.languages import Unavailable

from .. import ibm1
from ..findings import Finding
from ..termmatch import Tokens, tokenize
from .base import Check, Pair, Side
from .lexical import Lexicon, LexicalCheck, content_words, letter_tokens, lexicon_or_none, pair_evidence

THETA = 0.2
"""A content word is aligned when some word of the other side has t(f | e) >= THETA under the
forward table (p(target word | source word)): a source word usually rendered otherwise, or a target
word that is not a usual rendering of any source word, falls below it."""
FLOOR = 1e-4
"""Floor of a word's best translation probability before its log (a never-seen pair)."""
THRESHOLD = 3
"""`qa_align_gap` at or above it (3 words each side) raises `alignment_gap`, a discrete flag: the pairs below
keep their risk to the last digit. On the MQM dev set (each system's 529 pairs one batch, seeded), words
the lexical check finds rendered set aside: >= 1 fired on 19.4 % of major-accuracy and 17.3 % of clean
pairs, >= 2 on 2.3 % / 2.4 %, >= 3 on 0.6 % / 0.3 %. Without that filter >= 5 took 6.8 % / 1.6 %, all of it
length (length-matched AUC of the count 0.500): names copied as they are ('Biased Chains'), compounds
('space-time' / 'Raumzeit') and paraphrase ('put together' / 'zusammengestellt')."""
MIN_PAIRS = 200
"""A smaller batch teaches too little to tell a usual translation from a one-off (one pair alone aligns
every word to whatever shares its sentence): the check is listed as not available for it. The
smallest batch measured is an MQM system's 529 pairs."""
WEIGHT = 0.0
"""No weight in the default p_error: the flag explains with spans, and a refit (`audit calibrate`) weighs
it from verdicts. Measured (benchmarks/bench_mqm.md): on the MQM dev set its evidence is at chance once
length is matched, and at 0.05 it fired on 5 correct bBSARD pairs (paraphrase: 'union libre' ->
'samenwoningsverband') and took the fr-nl oracle of bench_calibration from 0.8930 to 0.8929."""

FLAGS = {
    "alignment_gap": "Source words that no target word usually translates, together with target words that usually "
                     "translate none of the source (word alignment learned from the audited pairs themselves, "
                     "IBM Model 1 both directions): a meaning lost or replaced.",
}
SCHEMA = {"needs": "words"}


class TooFewPairs(Unavailable):
    """The batch is too small to learn word alignment from."""

    def __init__(self, n: int):
        Exception.__init__(self, f"not available for a batch of {n} pairs (it learns word alignment from the "
                                 f"batch: at least {MIN_PAIRS} pairs)")
        self.lang, self.section = None, "pairs"


@dataclass(frozen=True)
class Alignment:
    """One pair's alignment evidence: column values and the token positions at fault."""

    logprob_st: float
    logprob_ts: float
    content: float
    unaligned_source: tuple[int, ...]
    unaligned_target: tuple[int, ...]


def _words(tokens: Tokens, at: Sequence[int]) -> list[str]:
    return [tokens.lemmas[i] for i in at]


def _lexicon(pair: Pair) -> Lexicon:
    """The pair's dictionaries; without them an empty one (cognates still count as renderings)."""
    lex = lexicon_or_none(pair)
    return Lexicon({}, {}, ()) if lex is None else lex


def _seeds(source: list[list[str]], target: list[list[str]], lex: Lexicon) -> list[tuple[str, str, float]]:
    """The dictionaries' word pairs whose both words occur in the batch."""
    vs, vt = {w for s in source for w in s}, {w for t in target for w in t}
    pairs = {(a, b) for a in vs for b in lex.forward.get(a, ()) if b in vt}
    pairs |= {(a, b) for b in vt for a in lex.backward.get(b, ()) if a in vs}
    return [(a, b, 1.0) for a, b in sorted(pairs)]


def _log_best(m: np.ndarray, axis: int) -> float:
    return float(np.mean(np.log(np.maximum(m.max(axis=axis), FLOOR)))) if m.size else 0.0


def align(source: Sequence[Tokens], target: Sequence[Tokens], lex: Lexicon) -> list[Alignment]:
    """Train both tables on the batch (lemmas of its letter tokens, seeded with the dictionaries' pairs)
    and read each pair's evidence. A word the lexical check finds rendered (a dictionary translation, the
    same word or a cognate: 'Biased Chains' copied as it is; a compound part: 'Raumzeit' for 'space-time')
    is never at fault."""
    src_at, tgt_at = [letter_tokens(t) for t in source], [letter_tokens(t) for t in target]
    src_w = [_words(t, a) for t, a in zip(source, src_at)]
    tgt_w = [_words(t, a) for t, a in zip(target, tgt_at)]
    seeds = _seeds(src_w, tgt_w, lex)
    forward = ibm1.train(src_w, tgt_w, seeds)
    backward = ibm1.train(tgt_w, src_w, [(b, a, x) for a, b, x in seeds])
    out = []
    for s, t, sa, ta, sw, tw in zip(source, target, src_at, tgt_at, src_w, tgt_w):
        f, b = forward.matrix(sw, tw), backward.matrix(tw, sw)
        sc = [sa.index(i) for i in content_words(s)]
        tc = [ta.index(j) for j in content_words(t)]
        best_s = f.max(axis=1) if f.size else np.zeros(len(sw))
        best_t = f.max(axis=0) if f.size else np.zeros(len(tw))
        rendered = pair_evidence(s, t, lex)
        out.append(Alignment(_log_best(f, 0), _log_best(b, 0), _log_best(f[sc], 1) if sc and f.size else 0.0,
                             tuple(sa[i] for i in sc if best_s[i] < THETA and sa[i] not in rendered.rendered_source),
                             tuple(ta[j] for j in tc if best_t[j] < THETA and ta[j] not in rendered.rendered_target)))
    return out


class AlignmentCheck(Check):
    name = "alignment"
    order = 110
    flags = FLAGS
    categories = {"alignment_gap": "mistranslation"}
    weights = {"alignment_gap": WEIGHT}
    columns = ("qa_align_logprob_st", "qa_align_logprob_ts", "qa_align_content", "qa_align_unaligned_{source}",
               "qa_align_unaligned_{target}", "qa_align_gap")
    context = ("qa_align_unaligned_{source}", "qa_align_unaligned_{target}")
    data = "alignment"
    packages = ("simplemma", "numpy")

    def signature(self) -> str:
        """Its seeds are the lexical check's dictionaries: a dictionary installed later is a new result."""
        return super().signature() + LexicalCheck().signature()[-8:]

    def prepare(self, source: Sequence[str], target: Sequence[str], pair: Pair) -> list[Alignment]:
        if len(source) < MIN_PAIRS:
            raise TooFewPairs(len(source))
        return align([tokenize(s, pair[0]) for s in source], [tokenize(t, pair[1]) for t in target], _lexicon(pair))

    def compare(self, source: Side, target: Side, stats: Alignment) -> tuple[list[Finding], tuple]:
        gap = min(len(stats.unaligned_source), len(stats.unaligned_target))
        out = []
        if gap >= THRESHOLD:
            words = lambda side, idx: ", ".join(f"'{side.tokens.original[slice(*side.tokens.spans[k])]}'" for k in idx)
            out.append(Finding("alignment_gap",
                               f"{source.code} {words(source, stats.unaligned_source)} usually translated otherwise; "
                               f"{target.code} {words(target, stats.unaligned_target)} not a usual translation of "
                               f"the {source.code}",
                               source.spans([source.tokens.spans[k] for k in stats.unaligned_source], "alignment_gap")
                               + target.spans([target.tokens.spans[k] for k in stats.unaligned_target],
                                              "alignment_gap")))
        return out, (stats.logprob_st, stats.logprob_ts, stats.content, len(stats.unaligned_source),
                     len(stats.unaligned_target), gap)
