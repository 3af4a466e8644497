"""Document check `doc_truncated`: the translation is much shorter than its source, measured against
the corpus's own length ratio.

A translation's length ratio target/source depends on the pair (Dutch runs ~5 % longer than French)
and on the corpus, so the check learns it: the log length ratio of every pair with a source of at
least `min_source_chars` characters, its median and MAD streamed over the corpus (reduce phase). A
pair is truncated (in a corpus of at least `min_corpus` measured pairs) when its robust z = (log
ratio - median) / (1.4826 MAD) is below -`z` AND its ratio is below `ratio` times the corpus's
median ratio (so a tight distribution cannot flag a translation 10 % short). The evidence span is
where the translation stops. No language pack needed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base import DocCheck, Docs, Result, RobustDistribution, contentless, robust_z, span_at

TAIL = 40
"""Characters of the translation's end shown as the span."""


class LengthAccumulator:
    def __init__(self) -> None:
        self.distribution = RobustDistribution(-8.0, 8.0, 3200)

    def add(self, mapped: pa.Table) -> None:
        self.distribution.add_values(mapped.column("doc_length_log_ratio").to_numpy(zero_copy_only=False))

    def finish(self) -> dict:
        return self.distribution.finish()


class LengthCheck(DocCheck):
    name = "doc_truncated"
    order = 40
    flags = {"doc_truncated": "The translation is much shorter than its source for this corpus: robust z of the "
                              "log length ratio (median/MAD over the corpus) below -z and the ratio below "
                              "`ratio` x the corpus median."}
    categories = {"doc_truncated": "omission"}
    weights = {"doc_truncated": 0.7}
    columns = {"doc_length_log_ratio": pa.float64(), "_target_tail": pa.string()}
    scored = {"doc_length_z": pa.float64()}
    params = {"z": 4.0, "ratio": 0.6, "min_source_chars": 40.0, "min_spread": 0.05, "min_corpus": 30.0}

    def map(self, docs: Docs, ctx) -> Result:
        source, target = docs.source_chars.astype(float), docs.target_chars.astype(float)
        ratio = np.log((target + 1.0) / (source + 1.0))
        ratio[(source < self.param(ctx, "min_source_chars")) | contentless(docs.arrow("target_text"))] = np.nan
        tails = pc.utf8_slice_codeunits(docs.arrow("target_text"), -TAIL).to_numpy(zero_copy_only=False)
        return Result({"doc_length_log_ratio": ratio, "_target_tail": tails},
                      [[] for _ in range(len(docs))])

    def accumulator(self, ctx) -> LengthAccumulator:
        return LengthAccumulator()

    def score(self, mapped: pa.Table, stats, ctx) -> Result:
        summary = stats.checks[self.name]
        ratio = mapped.column("doc_length_log_ratio").to_numpy(zero_copy_only=False).astype(float)
        z = robust_z(ratio, summary, self.param(ctx, "min_spread"))
        raised = ((z < -self.param(ctx, "z")) & (ratio - summary["median"] < np.log(self.param(ctx, "ratio")))
                  & (summary["n"] >= self.param(ctx, "min_corpus")))
        findings = [[] for _ in range(mapped.num_rows)]
        if raised.any():
            source_chars = mapped.column("source_chars").to_numpy()
            target_chars = mapped.column("target_chars").to_numpy()
            tails = mapped.column("_target_tail").to_pylist()
            src, tgt = ctx.pair.source.upper(), ctx.pair.target.upper()
            for i in np.flatnonzero(raised):
                tail, end = tails[i], int(target_chars[i])
                reason = (f"{tgt} has {end:,} characters for {src}'s {int(source_chars[i]):,} "
                          f"({np.exp(ratio[i]):.2f}x; corpus median {np.exp(summary['median']):.2f}x, "
                          f"robust z = {z[i]:.1f} < -{self.param(ctx, 'z'):g})")
                findings[i] = [self.finding(reason, [span_at(ctx.pair.target, end - len(tail), tail, self.name)])]
        return Result({"doc_length_z": z}, findings)
