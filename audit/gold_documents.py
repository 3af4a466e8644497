"""Questions meet their documents: a question whose gold documents the corpus audit flags rests on
damaged documents (an untranslated, truncated or misaligned article cannot be found, or found for the
right reason, in the target language), which no check of the question's own text can see.

`link` reads a corpus_audit.parquet (bbsard_audit.base.contracts.corpus_audit) against the dataset's
corpus; `GoldDocumentSignal` turns it into the question audit's flags, reasons and `gold_*` columns.
The file is `--corpus-audit FILE`, or the corpus_audit.parquet already in the audit's --out folder
when its sidecar names the same dataset (`find`); the audit's sidecar says which (`Linked.record`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from bbsard_audit.base.contracts.corpus_audit import NAME as CORPUS_AUDIT, read as read_corpus_audit
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.dataset import Dataset, same_data
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import file_ref, sidecar_path
from bbsard_audit.base.sources.checker import revision_of

from .findings import Finding
from .signals import Batch, ScorerSignal, SignalResult

SOME, ALL = "gold_document_flagged", "gold_documents_all_flagged"
FLAGS = {
    SOME: "Some (not all) of the question's gold documents are flagged in the corpus audit (`--corpus-audit`, "
          "docs/audit.md): its relevance labels rest partly on damaged documents.",
    ALL: "Every gold document of the question is flagged in the corpus audit: its relevance labels may be "
         "unusable in the target language.",
}
COLUMNS = ["gold_n", "gold_flagged", "gold_max_risk"]
"""Gold documents of the question; how many the corpus audit flags; the highest corpus risk among them
(NaN when the corpus audit holds none of them)."""
REASON_MARK = "flagged in the corpus audit"
"""Every reason this signal writes holds it (the report picks them out of `reasons`)."""
LISTED = 10
"""Flagged gold documents named in a reason; the rest are counted."""


@dataclass(frozen=True)
class CorpusAuditInput:
    path: Path
    given: bool
    """True: `--corpus-audit FILE`; False: found in the audit's --out folder."""


def find(given: str | Path | None, out: str | Path | None) -> CorpusAuditInput | None:
    """The corpus audit to link: the one given, else `out`/corpus_audit.parquet when present."""
    if given is not None:
        return CorpusAuditInput(Path(given), True)
    found = Path(out) / CORPUS_AUDIT if out is not None else None
    return CorpusAuditInput(found, False) if found is not None and found.is_file() else None


@dataclass(frozen=True)
class CorpusLink:
    """What the question audit needs of a corpus audit: its rows about some question's gold documents."""

    flags: Mapping[str, str]
    """Flagged document id -> its `flags` (";"-joined), for the documents that are some question's gold."""
    risk: Mapping[str, float]
    """Audited document id -> its risk, for the documents that are some question's gold."""

    def check(self, gold: Sequence[Sequence[object]]) -> tuple[list[list[Finding]], pd.DataFrame]:
        findings, rows = [], []
        for docs in gold:
            ids = [str(d) for d in dict.fromkeys(docs)]
            bad = [d for d in ids if d in self.flags]
            risks = [self.risk[d] for d in ids if d in self.risk]
            findings.append([Finding(ALL if len(bad) == len(ids) else SOME, _reason(bad, ids, self))] if bad else [])
            rows.append((len(ids), len(bad), max(risks) if risks else np.nan))
        return findings, pd.DataFrame(rows, columns=COLUMNS).astype({"gold_n": "int64", "gold_flagged": "int64"})


def _reason(bad: list[str], ids: list[str], link: CorpusLink) -> str:
    named = ", ".join(f"{d} ({link.flags[d].replace(';', ', ') or 'flagged'})" for d in bad[:LISTED])
    more = f" and {len(bad) - LISTED} more" if len(bad) > LISTED else ""
    unaudited = sum(d not in link.risk for d in ids)
    missing = f" ({unaudited} not in the corpus audit)" if unaudited else ""
    if len(bad) == len(ids):
        every = {1: "its gold document is", 2: "both of its gold documents are"}.get(
            len(ids), f"all {len(ids)} of its gold documents are")
        head = f"{every} {REASON_MARK}"
        return f"{head}, so its relevance labels may be unusable: {named}{more}"
    verb = "is" if len(bad) == 1 else "are"
    return f"{len(bad)} of its {len(ids)} gold documents{missing} {verb} {REASON_MARK}: {named}{more}"


def _question_file(name: str) -> bool:
    """A file of the questions side of a dataset (its `files` label): what a corpus audit does not read."""
    base = name.rsplit("/", 1)[-1]
    return base.startswith("questions_") or base == "queries.jsonl" or "/qrels/" in name


def _names_dataset(ds: Dataset, meta: Mapping) -> bool:
    """The corpus audit's sidecar names this dataset: its source (id, or a manifest's file name) and its
    content, by file hashes when recorded, else by revision: the whole dataset's, or that of the files
    `audit corpus` reads (all but the questions: articles, or a manifest and its corpus files)."""
    recorded = meta.get("dataset")
    if not isinstance(recorded, Mapping) or recorded.get("source") not in (ds.source_id, Path(ds.source).name):
        return False
    if recorded.get("files_sha256"):
        return same_data(ds, recorded)
    corpus_files = {k: v for k, v in ds.files.items() if not _question_file(k)}
    return recorded.get("revision") in (ds.revision, revision_of(corpus_files))


@dataclass(frozen=True)
class Linked:
    """The outcome of `link`: the link (None: no corpus audit, or one found that is not this dataset's)
    and the audit sidecar's record of the choice."""

    link: CorpusLink | None = None
    record: dict | None = None

    @property
    def signals(self) -> list["GoldDocumentSignal"]:
        """What to add to the AuditEngine's signals."""
        return [GoldDocumentSignal(self.link)] if self.link is not None else []

    def summary(self, frame: pd.DataFrame) -> dict | None:
        """The sidecar's `corpus_audit` entry, with the questions of the audit `frame` it affects."""
        return {**self.record, **affected(frame)} if self.link is not None else self.record


def link(source: CorpusAuditInput | None, ds: Dataset) -> Linked:
    """The link to a corpus audit, and the sidecar record of the choice.

    A file found in --out whose sidecar does not name `ds` is not used (the record says why); a given
    one naming another dataset, or holding an id the dataset's corpus lacks, is an InputError."""
    if source is None:
        return Linked()
    path = source.path
    how = "--corpus-audit" if source.given else "found in --out"
    meta_path = sidecar_path(path)
    meta = read_sidecar(meta_path) if meta_path.is_file() else {}
    if not _names_dataset(ds, meta):
        recorded = meta.get("dataset") if isinstance(meta.get("dataset"), Mapping) else {}
        what = (f"names dataset {recorded.get('source')} (revision {recorded.get('revision')})" if recorded
                else f"has no sidecar naming its dataset ({meta_path.name})")
        why = f"{what}, not {ds.source_id} (revision {ds.revision})"
        if not source.given:
            return Linked(None, {**file_ref(path), "how": how, "used": False, "why": why})
        if recorded:  # a given file whose sidecar names no dataset is taken on trust: its ids are still checked
            raise InputError(f"this corpus audit {why}", file=str(path))
    if ds.corpus is None:
        raise InputError(f"dataset {ds.source_id} has no corpus to check the corpus audit's ids against",
                         file=str(path))
    frame = read_corpus_audit(path, columns=("id", "risk", "flagged", "flags"))  # not its texts
    ids = frame["id"].astype(str)
    outside = ~ids.isin(pd.Index([str(i) for i in ds.corpus.ids]))
    if outside.any():
        first = int(np.flatnonzero(outside.to_numpy())[0])
        more = int(outside.sum()) - 1
        raise InputError(f"not in the corpus of {ds.source_id}" + (f" (and {more} more id(s))" if more else ""),
                         file=str(path), row=first + 1, id=ids.iloc[first])  # rows as the contract's reader numbers them
    gold = pd.Index({str(a) for p in ds.pairs for a in p.article_ids})
    rows = frame[ids.isin(gold).to_numpy()]
    flagged = rows[rows["flagged"].to_numpy(dtype=bool)]
    named = meta.get("dataset") or {}
    record = {**file_ref(path), "how": how, "used": True,
              "dataset": {k: named[k] for k in ("source", "revision") if k in named} or None,
              "documents": len(frame), "flagged_documents": int(frame["flagged"].sum()),
              "corpus_documents": len(ds.corpus), "gold_documents_audited": len(rows),
              "gold_documents_flagged": len(flagged)}
    return Linked(CorpusLink(dict(zip(flagged["id"].astype(str), flagged["flags"].fillna("").astype(str))),
                             dict(zip(rows["id"].astype(str), rows["risk"].astype(float)))), record)


def affected(frame: pd.DataFrame) -> dict[str, int]:
    """How many questions of an audit have a flagged gold document, and how many have all of them flagged."""
    n, bad = frame["gold_n"].to_numpy(), frame["gold_flagged"].to_numpy()
    return {"questions_with_flagged_gold": int((bad > 0).sum()),
            "questions_all_gold_flagged": int(((bad == n) & (n > 0)).sum())}


def gold_reason(reasons: object) -> str:
    """This signal's reason among a row's " | "-joined `reasons` ("" when it has none)."""
    parts = str(reasons).split(" | ") if isinstance(reasons, str) else []
    return " | ".join(p for p in parts if REASON_MARK in p)


class GoldDocumentSignal(ScorerSignal[CorpusLink]):
    """The corpus audit's verdict on each question's gold documents, as question-audit evidence. Soft
    weights: a damaged document says the labels are suspect, not that the question's translation is."""

    name = "gold_documents"
    flags = FLAGS
    categories = {SOME: "other", ALL: "other"}
    weights = {SOME: 0.1, ALL: 0.2}
    reads = ("gold",)

    def score(self, batch: Batch) -> SignalResult:
        if batch.gold is None:
            raise ValueError("the gold-document signal needs the batch's gold documents")
        return SignalResult(*self.scorer.check(batch.gold))


def said(record: Mapping) -> str:
    """The terminal's line about the corpus audit an audit linked (or found and left out)."""
    if not record["used"]:
        return f"corpus audit {record['name']} in --out not used: it {record['why']}"
    return (f"corpus audit {record['name']} ({record['how']}): {record['questions_with_flagged_gold']} question(s) "
            f"with a flagged gold document, {record['questions_all_gold_flagged']} with all of them flagged")
