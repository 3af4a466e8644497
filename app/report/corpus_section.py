"""The report's Corpus section: what the corpus audit (`bbsard-audit audit corpus`, corpus_audit.parquet
in the work folder) found in the translated documents, by artifact type and severity, examples side by
side with their evidence highlighted, and the questions whose gold documents are among them (the
`gold_*` columns the question audit writes with a corpus audit, audit/gold_documents.py).

Excerpts, reasons and ids are untrusted text: they go into `Table` cells (`Marked` for the excerpts),
which both renderers escape. The corpus audit is named by file name + sha256, its dataset by source id
+ revision (its sidecar), never by a local path.
"""

from __future__ import annotations

import json

import pandas as pd

from bbsard_audit.audit.corpus.documents import BEFORE
from bbsard_audit.audit.gold_documents import affected, gold_reason
from bbsard_audit.base.contracts.corpus_audit import NAME as CORPUS_AUDIT
from bbsard_audit.base.languages import LanguagePair
from bbsard_audit.base.transactions import digest_of

from . import plots
from .document import Figures, Marked, Plot, Section, Table, Text
from .loaders import Workdir
from .formatting import VISIBLE_ROWS, num, pct, split_list

SEVERITY_ORDER = ("high", "medium", "low", "none")
EXAMPLES_PER_FLAG = 2
WORST = 10
PROBE = 40
"""Characters of a span's text used to place it in an excerpt (the excerpt's offset is not stored)."""


def corpus_section(wd: Workdir) -> Section | None:
    """The Corpus section, or None when the work folder holds no corpus audit."""
    corpus = wd.table(CORPUS_AUDIT)
    if corpus is None:
        return None
    meta = wd.sidecars.get("corpus_audit.meta.json") or {}
    sec = Section("corpus", "Corpus")
    flagged = corpus["flagged"].astype(bool)
    severity = corpus["severity"].fillna("none").astype(str)
    counts = severity[flagged].value_counts()
    items = [("documents audited", f"{len(corpus):,}"), ("flagged", pct(int(flagged.sum()), len(corpus))),
             ("flagged documents by severity", ", ".join(f"{s} {int(counts[s]):,}" for s in SEVERITY_ORDER
                                                          if s in counts) or "–"),
             ("corpus audit", f"{CORPUS_AUDIT} (sha256 {digest_of(wd.root / CORPUS_AUDIT)[:12]})")]
    dataset = meta.get("dataset") if isinstance(meta.get("dataset"), dict) else {}
    if dataset.get("source"):
        items.append(("dataset", f"{dataset['source']} (revision {dataset.get('revision', 'unknown')})"))
    items += [(key, str(meta[key])) for key in ("engine", "embedder") if meta.get(key) is not None]
    items += [(label, "; ".join(map(str, meta[key]))) for key, label in (
        ("checks_unavailable", "checks not run"), ("checks_partial", "checks run without a resource"))
        if meta.get(key)]  # never a silent pass: what did not run, and what ran without what
    sec.add(Figures(tuple(items)))
    by_type = _by_type(corpus)
    if len(by_type):
        sub = sec.sub("Artifacts by type", key="corpus-flags")
        sub.add(Table("Documents per flag (a document can carry several) and their severities; the share is of "
                      "every audited document", ("flag", "documents", "share", "flagged", *SEVERITY_ORDER),
                      tuple((flag, f"{int(row['documents']):,}", _share(int(row["documents"]), len(corpus)),
                             f"{int(row['flagged']):,}", *(f"{int(row[s]):,}" for s in SEVERITY_ORDER))
                            for flag, row in by_type.iterrows())))
        sub.add(Plot("Documents per corpus-audit flag", "Bar chart of documents per flag: " + ", ".join(
            f"{f} {int(n)}" for f, n in by_type["documents"].items()), plots.horizontal_bars(
                list(by_type.index), by_type["documents"].tolist(), "documents", integer=True)))
        sec.sub("Examples side by side", key="corpus-examples").add(_examples(corpus, by_type.index, meta))
    sub = sec.sub("Questions affected", key="corpus-questions")
    for block in _questions(wd):
        sub.add(block)
    return sec


def _share(part: int, whole: int) -> str:
    """A percentage that stays visible for 1 document in millions."""
    share = 100 * part / max(whole, 1)
    return f"{share:.2f}%" if share >= 0.01 or share == 0 else f"{share:.1g}%"


def _by_type(corpus: pd.DataFrame) -> pd.DataFrame:
    """Per flag: documents raising it, how many of them are flagged, and per severity; most frequent first."""
    rows = corpus.assign(flag=corpus["flags"].map(lambda v: split_list(v, ";"))).explode("flag").dropna(subset=["flag"])
    if not len(rows):
        return pd.DataFrame()
    table = pd.crosstab(rows["flag"], rows["severity"].fillna("none").astype(str))
    table = table.reindex(columns=list(SEVERITY_ORDER), fill_value=0)
    table.insert(0, "flagged", rows.groupby("flag")["flagged"].sum().astype(int))
    table.insert(0, "documents", table[list(SEVERITY_ORDER)].sum(axis=1))
    return table.sort_values(["documents", "flagged"], ascending=False, kind="stable")


def _examples(corpus: pd.DataFrame, flags, meta: dict) -> Table | Text:
    """The highest-risk flagged documents of each flag, source and target excerpts side by side."""
    src, tgt = LanguagePair.from_sidecar(meta)  # the spans' `side` values
    bad = corpus[corpus["flagged"].astype(bool)].sort_values(["risk", "id"], ascending=[False, True], kind="stable")
    carried = bad["flags"].map(lambda v: set(split_list(v, ";")))
    rows, seen = [], set()
    for flag in flags:
        for _, r in bad[carried.map(lambda f: flag in f)].head(EXAMPLES_PER_FLAG).iterrows():
            if r["id"] in seen:
                continue
            seen.add(r["id"])
            spans = json.loads(r["spans"])  # checked by the contract's reader
            excerpts = [Marked(r[f"{role}_excerpt"], marks(r[f"{role}_excerpt"], [s for s in spans if s["side"] == side]))
                        for role, side in (("source", src), ("target", tgt))]
            rows.append((flag, str(r["id"]), num(float(r["risk"])), str(r["severity"]), *excerpts,
                         "\n".join(split_list(r["reasons"], " | ")) or "–"))
    if not rows:
        return Text("No document is flagged (the flags above were raised below the flag threshold).")
    return Table(f"Up to {EXAMPLES_PER_FLAG} of the highest-risk flagged documents per flag; the evidence spans are "
                 "highlighted", ("flag", "id", "risk", "severity", f"source ({src})", f"target ({tgt})", "reasons"),
                 tuple(rows), wide=True, visible=VISIBLE_ROWS)


def marks(excerpt: str, spans: list[dict]) -> tuple[tuple[int, int], ...]:
    """Where `spans` (offsets into the whole text) fall in `excerpt`, a window of that text whose start
    is not stored: the shift that places the most spans' texts exactly, each clipped to the window
    (on a tie, the window the corpus audit cuts: BEFORE characters before the first span)."""
    usable = [s for s in spans if s["end"] > s["start"]] if excerpt else []  # an empty span marks nothing
    shifts = [-max(0, min(s["start"] for s in usable) - BEFORE)] if usable else []
    for s in usable:
        text = s["text"]
        head, tail = text[:PROBE], text[-PROBE:]
        shifts += [p - s["start"] for p in _occurrences(excerpt, head)]  # the span starts in the window
        shifts += [p + len(tail) - s["end"] for p in _occurrences(excerpt, tail)]  # ... ends in it
        shifts += [-s["start"] - q for q in _occurrences(text, excerpt)]  # the window lies inside the span
        longest = range(min(len(text), len(excerpt)), 0, -1)
        into = next((n for n in longest if text[-n:] == excerpt[:n]), 0)  # the window starts inside the span
        shifts += [into - s["end"]] if into else []
        until = next((n for n in longest if text[:n] == excerpt[-n:]), 0)  # ... ends inside it
        shifts += [len(excerpt) - until - s["start"]] if until else []

    def placed(shift: int) -> list[tuple[int, int]]:
        out = []
        for s in usable:
            a, b = max(0, s["start"] + shift), min(len(excerpt), s["end"] + shift)
            part = s["text"][a - (s["start"] + shift):b - (s["start"] + shift)]
            if b > a and excerpt[a:b] == part:
                out.append((a, b))
        return out

    best = max(dict.fromkeys(shifts), key=lambda d: len(placed(d)), default=None)
    return _merge(placed(best)) if best is not None else ()


def _occurrences(text: str, probe: str) -> list[int]:
    out, at = [], text.find(probe)
    while at >= 0:
        out.append(at)
        at = text.find(probe, at + 1)
    return out


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def _questions(wd: Workdir) -> list:
    """How many questions have a flagged gold document (audit.csv's gold_* columns) and the worst of them."""
    audit = wd.table("audit.csv")
    if audit is None or "gold_flagged" not in audit.columns:
        why = "There is no audit.csv here" if audit is None else "audit.csv was made without a corpus audit"
        return [Text(f"{why}: run `bbsard-audit audit --corpus-audit {CORPUS_AUDIT}` (or with `--out` this folder) "
                     "to see which questions' gold documents are flagged.")]
    record = (wd.sidecars.get("audit.meta.json") or {}).get("corpus_audit") or {}
    blocks: list = []
    if record.get("sha256") and record["sha256"] != digest_of(wd.root / CORPUS_AUDIT):
        blocks.append(Text(f"audit.csv was made with another corpus audit ({record.get('name')}, sha256 "
                           f"{str(record['sha256'])[:12]}) than the {CORPUS_AUDIT} in this folder."))
    gold = _gold(audit)
    counts = affected(gold)
    blocks.append(Figures((("questions audited", f"{len(gold):,}"),
                           ("with a flagged gold document", pct(counts["questions_with_flagged_gold"], len(gold))),
                           ("with every gold document flagged", pct(counts["questions_all_gold_flagged"], len(gold))))))
    hit = gold[gold["gold_flagged"] > 0]
    if not len(hit):
        return blocks
    share = hit["gold_flagged"] / hit["gold_n"].clip(lower=1)
    risk = pd.to_numeric(hit["gold_max_risk"], errors="coerce")
    worst = hit.assign(_share=share, _risk=risk).sort_values(["_share", "gold_flagged", "_risk", "id"],
                                                             ascending=[False, False, False, True], kind="stable")
    source, target = [c for c in audit.columns if c.startswith("question_")][:2]  # question_<source>, _<target>
    rows = tuple((str(r["id"]), str(r.get("split", "") or ""), f"{r['gold_flagged']} of {r['gold_n']}",
                  num(float(r["_risk"])),
                  str(r[source]), str(r[target]), gold_reason(r.get("reasons")) or "–")
                 for _, r in worst.head(WORST).iterrows())
    blocks.append(Table(f"The {len(rows)} questions most affected: the largest share of flagged gold documents first",
                        ("id", "split", "gold flagged", "highest document risk", source, target, "reason"), rows,
                        wide=True, visible=VISIBLE_ROWS))
    return blocks


def _gold(audit: pd.DataFrame) -> pd.DataFrame:
    """audit.csv with its gold counts as integers (an empty cell: no gold document)."""
    return audit.assign(**{c: pd.to_numeric(audit[c], errors="coerce").fillna(0).astype(int)
                           for c in ("gold_n", "gold_flagged")})


def corpus_finding(wd: Workdir) -> str:
    """The Findings sentence: how many documents are flagged, how many questions that affects."""
    corpus = wd.table(CORPUS_AUDIT)
    if corpus is None:
        return ""
    flagged = int(corpus["flagged"].astype(bool).sum())
    text = (f"{flagged:,} of {len(corpus):,} translated documents ({100 * flagged / max(len(corpus), 1):.1f}%) are "
            "flagged by the corpus audit")
    audit = wd.table("audit.csv")
    if audit is None or "gold_flagged" not in audit.columns:
        return text + "."
    counts = affected(_gold(audit))
    return (text + f"; {counts['questions_with_flagged_gold']:,} of {len(audit):,} questions have a flagged gold "
            f"document, {counts['questions_all_gold_flagged']:,} of them with every gold document flagged "
            "(their relevance labels may be unusable).")
