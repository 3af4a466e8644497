"""Typed relevance judgements (base layer: read by the evaluation and by the audit's retrieval signal) (`Qrels`) and ranked lists (`Run`), read from TREC or JSON files.

Ids are strings everywhere (question 775 and article 775 are different things, and "0775" is not
"775"). A `Run` is stored already ordered by the tie-break rule of docs/metrics.md (score desc,
then rank asc, then docid asc) and deduplicated (a document keeps its best position), so every
metric downstream just reads positions.
"""

from __future__ import annotations

import math
import re
from functools import cached_property
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import write_json, write_text
from bbsard_audit.base.untrusted import text_lines

from .jsonfile import read_json
from .table import read_text


@dataclass(frozen=True)
class Qrels:
    """Binary judgements {qid: frozenset(relevant docids)}; a grade > 0 counts as relevant."""

    relevant: Mapping[str, frozenset[str]]
    source: str = "<memory>"
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, judgements: Mapping[object, Mapping[object, int] | Iterable[object]],
                  source: str = "<memory>") -> "Qrels":
        """{qid: {docid: grade}} (like `Dataset.qrels`) or {qid: [docid, ...]}; duplicates count once."""
        relevant = {}
        for qid, docs in judgements.items():
            if isinstance(docs, Mapping):
                rel = frozenset(str(d) for d, g in docs.items() if g > 0)
            else:
                rel = frozenset(str(d) for d in docs)
            relevant[str(qid)] = rel
        return cls._checked(relevant, source, [])

    @classmethod
    def read(cls, path: str | Path) -> "Qrels":
        """TREC qrels: `qid iteration docid grade` per line (whitespace-separated)."""
        path = Path(path)
        lines = _read_lines(path)
        relevant: dict[str, set[str]] = {}
        duplicates = 0
        for line_no, line in lines:
            cols = line.split()
            if len(cols) != 4:
                beir = ("; a BEIR qrels file (query-id corpus-id score) is read with its queries through a "
                        "manifest: --dataset FILE.yaml --split NAME (docs/formats.md, Manifest)" if len(cols) == 3 else "")
                raise InputError(f"expected 4 columns (qid iter docid grade), found {len(cols)}{beir}",
                                 file=str(path), row=line_no)
            qid, _, doc, grade = cols
            try:
                value = int(grade)
            except ValueError:
                raise InputError(f"relevance grade {grade!r} is not an integer", file=str(path),
                                 row=line_no, id=qid) from None
            docs = relevant.setdefault(qid, set())
            if value > 0:
                duplicates += doc in docs
                docs.add(doc)
        warnings = [f"{path}: {duplicates} duplicated relevant (qid, docid) line(s) counted once"] if duplicates else []
        return cls._checked({q: frozenset(d) for q, d in relevant.items()}, str(path), warnings)

    @classmethod
    def _checked(cls, relevant: dict[str, frozenset[str]], source: str, warnings: list[str]) -> "Qrels":
        empty = sorted((q for q, d in relevant.items() if not d), key=_natural)
        if empty:
            warnings.append(f"{source}: {len(empty)} query(ies) without any relevant document are not "
                            f"evaluated (e.g. {', '.join(empty[:5])})")
        kept = {q: d for q, d in relevant.items() if d}
        if not kept:
            raise InputError("no query has a relevant document", file=source)
        return cls(kept, source, tuple(warnings))

    @cached_property
    def qids(self) -> tuple[str, ...]:
        return tuple(sorted(self.relevant, key=_natural))

    def __len__(self) -> int:
        return len(self.relevant)

    def restrict(self, qids: Iterable[str]) -> "Qrels":
        keep = set(qids)
        return Qrels({q: d for q, d in self.relevant.items() if q in keep}, self.source, self.warnings)


@dataclass(frozen=True)
class RunIndex:
    """The run as integer arrays, built once when the run is loaded: the per-document Python work
    happens here, so scoring is pure numpy (a query's docs are codes[start:start+length])."""

    vocab: Mapping[str, int]
    spans: Mapping[str, tuple[int, int]]
    codes: np.ndarray

    @classmethod
    def build(cls, ranking: Mapping[str, Sequence[str]]) -> "RunIndex":
        vocab: dict[str, int] = {}
        code = vocab.setdefault
        spans, start = {}, 0
        for qid, docs in ranking.items():
            spans[qid] = (start, len(docs))
            start += len(docs)
        codes = np.fromiter((code(d, len(vocab)) for docs in ranking.values() for d in docs),
                            dtype=np.int64, count=start)
        return cls(vocab, spans, codes)


@dataclass(frozen=True)
class Run:
    """A system's ranked lists {qid: (docid, ...)}, best first, each docid once.

    `scores` (same shape) is kept when the input had scores, so a written run can be re-read
    with the same order.
    """

    name: str
    ranking: Mapping[str, tuple[str, ...]]
    scores: Mapping[str, tuple[float, ...]] | None = None
    source: str = "<memory>"
    warnings: tuple[str, ...] = field(default=(), compare=False)
    index: "RunIndex" = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", RunIndex.build(self.ranking))

    @classmethod
    def from_lists(cls, name: str, lists: Mapping[object, Sequence[object]], source: str = "<memory>") -> "Run":
        """Ranked lists as given (position = rank); later duplicates of a docid are dropped."""
        ranking, dropped = {}, 0
        for qid, docs in lists.items():
            unique = tuple(dict.fromkeys(str(d) for d in docs))
            dropped += len(docs) - len(unique)
            ranking[str(qid)] = unique
        return cls._checked(name, ranking, None, source, dropped)

    @classmethod
    def from_scored(cls, name: str, rows: Mapping[str, Sequence[tuple[str, float, int]]],
                    source: str = "<memory>") -> "Run":
        """{qid: [(docid, score, rank), ...]} ordered by score desc, rank asc, docid asc."""
        ranking, scores, dropped = {}, {}, 0
        for qid, entries in rows.items():
            ordered = sorted(entries, key=lambda e: (-e[1], e[2], e[0]))
            seen: dict[str, float] = {}
            for doc, score, _ in ordered:
                if doc in seen:
                    dropped += 1
                else:
                    seen[doc] = score
            ranking[qid] = tuple(seen)
            scores[qid] = tuple(seen.values())
        return cls._checked(name, ranking, scores, source, dropped)

    @classmethod
    def _checked(cls, name, ranking, scores, source, dropped) -> "Run":
        if not any(ranking.values()):
            raise InputError(f"run {name!r} is empty (no ranked document)", file=source)
        warnings = (f"run {name}: {dropped} duplicated document(s) kept at their best rank",) if dropped else ()
        return cls(name, ranking, scores, source, warnings)

    @classmethod
    def read(cls, path: str | Path, name: str | None = None) -> "Run":
        """A TREC run (`qid Q0 docid rank score tag`), a JSON {qid: [docid, ...]} file, or MTEB's retrieval
        predictions (`save_predictions`): {qid: {docid: score}}, or MTEB 2's {"mteb_model_meta": ..., SUBSET:
        {SPLIT: {qid: {docid: score}}}}, one subset and split chosen with `FILE.json#SUBSET/SPLIT` when it
        holds several (a path that exists as given is never split at `#`)."""
        path, part = Path(path), None
        if not path.exists() and "#" in str(path):
            base, _, part = str(path).rpartition("#")
            path = Path(base)
        name = name or path.stem
        if path.suffix.lower() == ".json":
            return cls._read_json(path, name, part)
        rows: dict[str, list[tuple[str, float, int]]] = {}
        for line_no, line in _read_lines(path):
            cols = line.split()
            if len(cols) != 6:
                raise InputError(f"expected 6 columns (qid Q0 docid rank score tag), found {len(cols)}",
                                 file=str(path), row=line_no)
            qid, _, doc, rank, score, _ = cols
            try:
                rank_value = int(rank)
            except ValueError:
                raise InputError(f"rank {rank!r} is not an integer", file=str(path), row=line_no, id=qid) from None
            if rank_value < 0:  # ranks start at 1 (0 in some tools); a negative one is a corrupt line
                raise InputError(f"rank {rank!r} is negative", file=str(path), row=line_no, id=qid)
            try:
                score_value = float(score)
            except ValueError:
                raise InputError(f"score {score!r} is not a number", file=str(path), row=line_no, id=qid) from None
            if not math.isfinite(score_value):
                raise InputError(f"score {score!r} is not finite", file=str(path), row=line_no, id=qid)
            rows.setdefault(qid, []).append((doc, score_value, rank_value))
        return cls.from_scored(name, rows, source=str(path))

    @classmethod
    def _read_json(cls, path: Path, name: str, part: str | None = None) -> "Run":
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError("a JSON run must be an object {qid: [docid, ...]} or {qid: {docid: score}}", file=str(path))
        if isinstance(data.get("scores"), dict) and MTEB_RESULT_KEYS & set(data):
            raise InputError("an MTEB results file (the scores of each split, no ranking): a run is the ranking, "
                             "MTEB's retrieval predictions saved with save_predictions ({task}_predictions.json, "
                             "{qid: {docid: score}}; docs/metrics.md, Inputs)", file=str(path))
        if MTEB_META in data:
            data = _mteb_part(data, path, part)
        elif part is not None:
            raise InputError(f"#{part}: only an MTEB 2 predictions file (with {MTEB_META}) has subsets and splits",
                             file=str(path))
        if data and all(isinstance(docs, dict) for docs in data.values()):
            return cls._read_scored(path, name, data)
        for qid, docs in data.items():
            if not isinstance(docs, list) or not all(isinstance(d, (str, int)) and not isinstance(d, bool)
                                                      for d in docs):
                raise InputError("value must be a list of docids (strings or integers) or an object {docid: score}",
                                 file=str(path), id=qid)
        return cls.from_lists(name, data, source=str(path))

    @classmethod
    def _read_scored(cls, path: Path, name: str, data: dict) -> "Run":
        """MTEB's {qid: {docid: score}}: ranked by score (ties by docid, docs/metrics.md)."""
        rows: dict[str, list[tuple[str, float, int]]] = {}
        for qid, docs in data.items():
            for doc, score in docs.items():
                if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                    raise InputError(f"score of document {doc!r} is {score!r}, not a finite number", file=str(path),
                                     id=qid)
            rows[str(qid)] = [(str(doc), float(score), 0) for doc, score in docs.items()]
        return cls.from_scored(name, rows, source=str(path))

    @property
    def qids(self) -> tuple[str, ...]:
        return tuple(sorted(self.ranking, key=_natural))

    def depth(self) -> int:
        return max((len(d) for d in self.ranking.values()), default=0)

    def check_ids(self, qrels: Qrels) -> None:
        """Refuse (one line naming file, row and id) a run whose ids match the qrels only once read back
        from a mangled copy: `775.0` for `775` (a spreadsheet or pandas float column), `" 775"` (JSON
        keys with spaces), or a query id in another case. Scored as they are, such a run loses every
        query or every gold document and scores 0 with a mere warning."""
        known = {id_key(q, case=True): q for q in qrels.relevant}
        for qid, docs in self.ranking.items():
            gold = qrels.relevant.get(qid)
            if gold is None:
                match = known.get(id_key(qid, case=True))
                if match is not None:
                    raise InputError(f"query id {qid!r} is written {match!r} in the qrels: {_MANGLED}",
                                     file=self.source, row=_row_of(self.source, qid), id=qid)
                continue
            gold_keys = {id_key(d): d for d in gold}
            for doc in docs:
                if doc not in gold and id_key(doc) in gold_keys:
                    raise InputError(f"document id {doc!r} is written {gold_keys[id_key(doc)]!r} in the qrels: "
                                     f"{_MANGLED}", file=self.source,
                                     row=_row_of(self.source, qid, doc), id=qid)

    def replace(self, other: "Run", name: str | None = None) -> "Run":
        """This run with the queries of `other` swapped in (re-retrieved corrected questions)."""
        ranking = {**self.ranking, **other.ranking}
        scores = None
        if self.scores is not None and other.scores is not None:
            scores = {**self.scores, **other.scores}
        return Run(name or self.name, ranking, scores, f"{self.source} + {other.source}",
                   self.warnings + other.warnings)

    def to_trec(self, tag: str | None = None) -> str:
        """TREC 6-column text; without scores, score = depth - position (order-preserving)."""
        tag = tag or self.name
        out = []
        for qid in self.qids:
            docs = self.ranking[qid]
            scores = self.scores[qid] if self.scores is not None else [len(docs) - i for i in range(len(docs))]
            out += [f"{qid} Q0 {d} {i + 1} {s:.6f} {tag}" for i, (d, s) in enumerate(zip(docs, scores))]
        return "\n".join(out) + "\n"

    def write_trec(self, path: str | Path) -> Path:
        return write_text(path, self.to_trec())

    def write_json(self, path: str | Path) -> Path:
        """The JSON ranked-list form {qid: [docid, ...]} (scores are dropped)."""
        return write_json(path, {q: list(self.ranking[q]) for q in self.qids})


MTEB_META = "mteb_model_meta"
"""The key that marks an MTEB 2 predictions file ({task}_predictions.json): {meta, SUBSET: {SPLIT: predictions}}."""
MTEB_RESULT_KEYS = {"task_name", "mteb_version", "mteb_dataset_name"}
"""Keys beside `scores` that mark an MTEB results file ({task}.json: metrics only), often given for a run."""


def _mteb_part(data: dict, path: Path, part: str | None) -> dict:
    """The predictions of one subset and split of an MTEB 2 file: `part` (SUBSET/SPLIT), or the only one."""
    parts = {f"{subset}/{split}": preds for subset, splits in data.items() if subset != MTEB_META
             and isinstance(splits, dict) for split, preds in splits.items() if isinstance(preds, dict)}
    if part is None and len(parts) == 1:
        return next(iter(parts.values()))
    if part in parts:
        return parts[part]
    if not parts:
        raise InputError(f"an MTEB predictions file without predictions (no {{SUBSET: {{SPLIT: {{qid: {{docid: score}}}}}}}} "
                         "beside its model meta)", file=str(path))
    listed = ", ".join(sorted(parts)) or "none"
    raise InputError((f"#{part} is not a subset/split of this MTEB predictions file" if part else
                      "an MTEB predictions file with several subsets/splits: choose one as FILE.json#SUBSET/SPLIT")
                     + f" (it holds: {listed})", file=str(path))


def _read_lines(path: Path) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; a missing, binary or non-regular file is an InputError."""
    text = read_text(path)
    lines = [(i, line) for i, line in enumerate(text_lines(text), start=1) if line.strip()]
    if not lines:
        raise InputError("file is empty", file=str(path))
    return lines


_FLOAT_ID = re.compile(r"([0-9]+)\.0*")
_MANGLED = ("one of the two files changed its ids on the way (a number written as a float, spaces, case); "
            "write them the same way in both")


def id_key(value: str, case: bool = False) -> str:
    """An id as a mangled copy may have turned it: spaces stripped, `775.0` read as `775`, and with
    `case` case-folded. Never equates `0775` and `775` (distinct ids, see the module docstring)."""
    key = value.strip().casefold() if case else value.strip()
    float_form = _FLOAT_ID.fullmatch(key)
    return float_form[1] if float_form else key


def _row_of(source: str, qid: str, doc: str | None = None) -> int | None:
    """The first line of a TREC run holding `qid` (and `doc`), for an error message; None for JSON."""
    path = Path(source)
    if path.suffix.lower() == ".json" or not path.is_file():
        return None
    for line_no, line in _read_lines(path):
        cols = line.split()
        if cols[:1] == [qid] and (doc is None or cols[2:3] == [doc]):
            return line_no
    return None


def _natural(qid: str) -> tuple[int, int | str]:
    """Numeric ids in numeric order, then the others alphabetically (stable output order)."""
    return (0, int(qid)) if qid.isdigit() else (1, qid)
