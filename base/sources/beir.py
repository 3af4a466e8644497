"""One language side of a BEIR-layout benchmark (queries, qrels per split, optional corpus), and the
join of a source side with its translation into a `Dataset` (`join`).

A side's readers (a folder: `beir_folder`, an HF dataset: `hf_beir`) only fetch raw rows; every check
is here, so both name a bad line the same way. Query ids (and, apart, corpus ids) are integers when
every one of them, on both sides, is plain digits, else strings (`checker.Ids`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..languages import LanguagePair
from .checker import Checker, Ids, cell
from .model import SPLITS, Dataset, Id, QuestionPair

QUERY_KEYS = ("_id", "text")
CORPUS_KEYS = ("_id", "text")


@dataclass(eq=False)  # a side is itself: hashed by identity
class Side:
    """What a side reader fetched: raw rows with their line numbers, labelled as messages name them."""

    label: str
    queries_label: str
    queries: list[tuple[int, Mapping]] | None
    qrels: dict[str, tuple[str, list[tuple[int, str, str, str]]]]
    """split -> (label, rows (line, query-id, corpus-id, score))"""
    corpus_label: str = ""
    corpus: list[tuple[int, Mapping]] | None = None
    files: dict[str, str] = field(default_factory=dict)


def _queries(checker: Checker, side: Side, ids: Ids) -> dict[Id, tuple[int, Mapping]]:
    """id -> (line, object): ids valid, once each."""
    out: dict[Id, tuple[int, Mapping]] = {}
    for line, obj in side.queries or []:
        raw = cell(obj.get("_id")).strip()
        qid = ids(raw)
        if qid is None:
            checker.error(f"query id {raw!r} {ids.rule}", side.queries_label, line)
        elif qid in out:
            checker.error("duplicate query id", side.queries_label, line, qid)
        else:
            out[qid] = (line, obj)
    return out


def _split_qrels(checker: Checker, side: Side, queries: Mapping[Id, tuple], qids: Ids,
                 dids: Ids) -> dict[str, tuple[str, dict, dict]]:
    """split -> (label, {qid: {docid: score}}, {qid: line}); a query judged in two splits, or unknown to
    the queries file, is an error."""
    out, seen = {}, {}
    for split, (label, rows) in side.qrels.items():
        qrels, lines = checker.qrels(label, rows, qids, dids)
        for qid in list(qrels):
            if qid not in queries:
                checker.error(f"query id not in {side.queries_label}", label, lines[qid], qid)
            elif qid in seen:
                checker.error(f"query id already judged in {seen[qid]}", label, lines[qid], qid)
            else:
                seen[qid] = label
                continue
            del qrels[qid]
        out[split] = (label, qrels, lines)
    return out


def _rows(queries: Mapping[Id, tuple[int, Mapping]], qrels: Mapping[Id, Mapping[Id, int]]):
    """Question rows (`Checker.questions`' shape) of the judged queries, in the queries file's order; the
    gold ids are the corpus ids with a positive score, and `metadata` keys become columns."""
    for qid in sorted(qrels, key=lambda q: queries[q][0]):
        line, obj = queries[qid]
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        gold = [d for d, score in qrels[qid].items() if score > 0]
        yield line, {**{k: v for k, v in meta.items() if k not in ("id", "question", "article_ids")},
                     "id": qid, "question": obj.get("text"), "article_ids": gold}


def _articles(checker: Checker, side: Side, ids: Ids) -> dict[Id, dict] | None:
    if side.corpus is None:
        return None
    rows = ((line, {"id": obj.get("_id"), "title": cell(obj.get("title")),
                    "article": document_text(cell(obj.get("title")), cell(obj.get("text")))})
            for line, obj in side.corpus)
    return checker.articles(side.corpus_label, rows, ids)


def document_text(title: str, text: str) -> str:
    """A BEIR document as every stage reads it: its title (stripped), a space, its text; the text alone
    when there is no title. Offsets into a document (corpus audit spans) index this string."""
    title = title.strip()
    return f"{title} {text}" if title and text else title or text


def _id_readers(sides: tuple[Side, Side]) -> tuple[Ids, Ids]:
    """(query ids, corpus ids) of both sides: strings when any raw id of that kind is not plain digits."""
    qrels = [row for s in sides for _, rows in s.qrels.values() for row in rows]
    queries = [obj.get("_id") for s in sides for _, obj in s.queries or []]
    corpus = [obj.get("_id") for s in sides for _, obj in s.corpus or []]
    return Ids([*queries, *(r[1] for r in qrels)]), Ids([*corpus, *(r[2] for r in qrels)])


def join(checker: Checker, pair: LanguagePair, src: Side, tgt: Side, *, source: str, revision: str,
         files: dict[str, str], name: str | None) -> Dataset:
    """Source and target joined by query id and checked as bBSARD's French and Dutch are: ids on one
    side only, qrels that differ, a split judged on one side only: one line each."""
    qids, dids = _id_readers((src, tgt))
    queries = {s: _queries(checker, s, qids) for s in (src, tgt)}
    qrels = {s: _split_qrels(checker, s, queries[s], qids, dids) for s in (src, tgt)}
    splits = [s for s in SPLITS if s in qrels[src]] + sorted(set(qrels[src]) - set(SPLITS))
    one_sided = bool(qrels[src]) and bool(qrels[tgt])  # a side with no qrels at all was reported already
    for split in sorted(set(qrels[tgt]) - set(qrels[src])) if one_sided else ():
        checker.error(f"split {split!r} has no qrels on the source side ({src.label})", qrels[tgt][split][0])
    pairs: list[QuestionPair] = []
    split_labels = {}
    for split in splits:
        s_label, s_qrels, s_lines = qrels[src][split]
        if split not in qrels[tgt]:
            if one_sided:
                checker.error(f"split {split!r} has no qrels on the target side ({tgt.label})", s_label)
            continue
        t_label, t_qrels, t_lines = qrels[tgt][split]
        for qid in sorted(set(s_qrels) | set(t_qrels)):
            if qid not in t_qrels:
                checker.error(f"query id judged on the source side but not in {t_label}", s_label, s_lines[qid], qid)
            elif qid not in s_qrels:
                checker.error(f"query id judged on the target side but not in {s_label}", t_label, t_lines[qid], qid)
            elif s_qrels[qid] != t_qrels[qid]:
                checker.error(f"qrels differ between source ({_judged(s_qrels[qid])}) and target "
                              f"({_judged(t_qrels[qid])})", t_label, t_lines[qid], qid)
            elif not any(score > 0 for score in s_qrels[qid].values()):
                checker.error("no relevant corpus id (every score is 0)", s_label, s_lines[qid], qid)
            else:
                continue
            s_qrels.pop(qid, None), t_qrels.pop(qid, None)
        rows = {s: checker.questions(s.queries_label, _rows(queries[s], q), qids, dids)
                for s, q in ((src, s_qrels), (tgt, t_qrels))}
        split_labels[split] = s_label
        pairs += checker.pair(split, src.queries_label, tgt.queries_label, rows[src], rows[tgt], langs=pair)
    if not split_labels and not checker.issues:
        checker.error("no qrels found (qrels/<split>.tsv)", src.label)
    corpus = None
    if src.corpus is not None or tgt.corpus is not None:
        labels = {pair.source: src.corpus_label, pair.target: tgt.corpus_label}
        corpus = checker.corpus(_articles(checker, src, dids), _articles(checker, tgt, dids), labels,
                                langs=pair)
        if corpus is not None:
            checker.gold_in_corpus(pairs, corpus, split_labels)
    return Dataset(source=source, revision=revision, pairs=pairs, corpus=corpus, issues=checker.issues,
                   files=files, pair=pair, name=name)


def _judged(qrels: Mapping[Id, int]) -> str:
    return ",".join(f"{d}:{s}" for d, s in sorted(qrels.items()))


def numbered(rows: Iterable[Mapping]) -> list[tuple[int, Mapping]]:
    """Rows of an HF table numbered from 1, as the messages name them."""
    return [(i + 1, r) for i, r in enumerate(rows)]
