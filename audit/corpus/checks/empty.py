"""Document check `doc_empty`: an empty document, or one without a single letter or digit
(whitespace only, a row of dots: mMARCO#7), on either side. A translation that came out empty
silently removes a relevant document from the benchmark. No language pack needed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .base import DocCheck, Docs, Result, contentless, quoted, spans_in

class EmptyCheck(DocCheck):
    name = "doc_empty"
    order = 10
    flags = {"doc_empty": "The source or the target document is empty, whitespace only, or has no letter or "
                          "digit (e.g. a translation that came out as dots)."}
    categories = {"doc_empty": "omission"}
    weights = {"doc_empty": 0.9}
    columns = {"doc_empty_source": pa.bool_(), "doc_empty_target": pa.bool_()}

    def map(self, docs: Docs, ctx) -> Result:
        empty = {side: contentless(docs.arrow(f"{side}_text")) for side in ("source", "target")}
        findings = [[] for _ in range(len(docs))]
        codes = docs.pair.record()
        for i in np.flatnonzero(empty["source"] | empty["target"]):
            parts, spans = [], ()
            for side in ("source", "target"):
                if empty[side][i]:
                    text = (docs.source if side == "source" else docs.target)[i]
                    code = codes[side]
                    if text.strip():
                        parts.append(f"{code.upper()} has no letter or digit: {quoted(text)}")
                        spans += spans_in(code, text, [(0, min(len(text), 200))], self.name)
                    else:
                        parts.append(f"{code.upper()} is empty" + (" (whitespace only)" if text else ""))
            findings[i] = [self.finding("; ".join(parts), spans)]
        return Result({"doc_empty_source": empty["source"], "doc_empty_target": empty["target"]}, findings)
