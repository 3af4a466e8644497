"""Document check `doc_mojibake`: encoding damage, on either side.

UTF-8 read as Latin-1 / Windows-1252 leaves tell-tale pairs: 'Ã©' for 'é', 'Ã¨' for 'è', 'â€™' for
'’', 'Â ' for a no-break space; a decoder that gave up leaves U+FFFD '�'; C1 control characters
(U+0080-U+009F) never belong in text. Like ftfy's badness heuristic, without its dependency: a lead
character of a 2- or 3-byte UTF-8 sequence (Â Ã Å, or 'â€') followed by a character that is a
continuation byte read as Latin-1 / Windows-1252. No pair occurs in correctly decoded French,
Dutch, English or German. Counted in Arrow (RE2); the reason shows the repaired text when
re-encoding repairs it. No language pack needed.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base import DocCheck, Docs, Result, spans_in

_CONTINUATION = "[\u0080-\u00bf€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]"
"""A UTF-8 continuation byte (0x80-0xBF) as Latin-1 or Windows-1252 shows it."""
PATTERN = f"[ÂÃÅ]{_CONTINUATION}|â€{_CONTINUATION}?|\ufffd|[\u0080-\u009f]"
_RE = re.compile(PATTERN)


def repaired(text: str) -> str | None:
    """The text the damaged characters stood for, when re-encoding gives valid UTF-8."""
    for codec in ("cp1252", "latin-1"):
        try:
            fixed = text.encode(codec).decode("utf-8")
        except UnicodeError:
            continue
        return fixed if fixed != text else None
    return None


class MojibakeCheck(DocCheck):
    name = "doc_mojibake"
    order = 90
    flags = {"doc_mojibake": "Encoding damage (mojibake): UTF-8 read as Latin-1/Windows-1252 ('Ã©' for 'é', "
                             "'â€™' for '’'), the replacement character U+FFFD or C1 control characters."}
    categories = {"doc_mojibake": "other"}
    weights = {"doc_mojibake": 0.6}
    columns = {"doc_mojibake_source": pa.float64(), "doc_mojibake_target": pa.float64()}
    params = {"min_hits": 1.0}

    def map(self, docs: Docs, ctx) -> Result:
        counts = {side: np.asarray(pc.count_substring_regex(docs.arrow(f"{side}_text"), PATTERN).fill_null(0),
                                   dtype=float) for side in ("source", "target")}
        findings = [[] for _ in range(len(docs))]
        least = self.param(ctx, "min_hits")
        for i in np.flatnonzero((counts["source"] >= least) | (counts["target"] >= least)):
            parts, spans = [], ()
            for side, code in (("target", docs.pair.target), ("source", docs.pair.source)):
                if counts[side][i] < least:
                    continue
                text = (docs.source if side == "source" else docs.target)[i]
                hits = list(_RE.finditer(text))
                shown = ", ".join(dict.fromkeys(f"'{m.group()}'" + (f" (= '{fix}')" if (fix := repaired(m.group())) else "")
                                                for m in hits[:5]))
                parts.append(f"{code.upper()} has {len(hits)} mis-decoded character sequence(s): {shown}")
                spans += spans_in(code, text, [m.span() for m in hits], self.name)
            findings[i] = [self.finding("; ".join(parts), spans)]
        return Result({f"doc_mojibake_{s}": c for s, c in counts.items()}, findings)
