"""Row checks every source shares, and the readers of raw files.

Every source goes through the same checks (`Checker`), so a bad CSV row, a bad JSONL line and a bad
hub row get the same one-line error naming the file, the row and the question id.

Not `contracts.table`, on purpose: that is the strict reader of the files bbsard-audit itself writes
and exchanges (the first violation is the error; a missing final line end or a ragged record means
a truncated file). These readers take a dataset as its publisher made it (no sidecar, no column rules of
ours: a last line without a line end is accepted), and `bbsard-audit validate` must list every problem
of every file at once, with warnings beside errors, so they collect `Issue`s instead of raising the first.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..io import file_problem, remember_read
from ..languages import LanguagePair
from ..untrusted import load_json, nfc, text_lines, text_problem
from .model import META_COLUMNS, PLAIN_INT, STRING_ID, Corpus, Id, Issue, QuestionPair

SCORE = re.compile(r"-?[0-9]+")


class Ids:
    """How one kind of id (questions, or articles) of a dataset reads: ints when every raw id is an
    integer in its canonical form (plain ASCII digits, no leading zero), else every id is kept as its
    string (BEIR's `PLAIN-2`, and `001`: as an int it would no longer match the `001` of a run or a
    release), so one dataset never mixes the two. `strings=False` (bBSARD's CSV and hub layouts):
    integers only (`007` is 7, as ever)."""

    def __init__(self, raws: Iterable[str] = (), strings: bool = True) -> None:
        self.strings = strings and any(not _canonical_int(cell(r).strip()) for r in raws)

    def __call__(self, raw: str) -> Id | None:
        """The id of `raw` (stripped text), or None when it is not a valid one (see `rule`)."""
        if self.strings:
            return raw if STRING_ID.fullmatch(raw) else None
        return int(raw) if PLAIN_INT.fullmatch(raw) else None

    @property
    def rule(self) -> str:
        return ("is not a valid id (no white space, comma, semicolon or quote)" if self.strings
                else "is not an integer (ASCII digits only)")


INT_IDS = Ids(strings=False)


def _canonical_int(text: str) -> bool:
    """`text` is what str(int(text)) gives back: plain digits without a leading zero."""
    return bool(PLAIN_INT.fullmatch(text)) and (text == "0" or not text.startswith("0"))


class Checker:
    """Collects errors and warnings while rows from any source are turned into objects."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []
        self._meta: dict[str, dict] = {}  # target file -> its metadata comparison so far

    def error(self, message: str, file=None, row=None, id=None) -> None:
        self.issues.append(Issue("error", message, file, row, id))

    def warn(self, message: str, file=None, row=None, id=None) -> None:
        self.issues.append(Issue("warning", message, file, row, id))

    def columns(self, label: str, columns: Sequence[str], required: Sequence[str]) -> bool:
        missing = [c for c in required if c not in columns]
        if missing:
            self.error(f"missing column(s) {', '.join(missing)} (found: {', '.join(columns) or 'none'})",
                       file=label)
        return not missing

    def _new_id(self, kind: str, row: Mapping[str, object], seen: Mapping[Id, object], label: str,
                line: int, ids: Ids = INT_IDS) -> Id | None:
        """The row's id, or None (reported) when `ids` refuses it or it was `seen` already."""
        raw = cell(row.get("id"))
        rid = ids(raw)
        if rid is None:
            self.error(f"{kind} id {raw!r} {ids.rule}", label, line)
            return None
        if rid in seen:
            self.error(f"duplicate {kind} id", label, line, rid)
            return None
        return rid

    def questions(self, label: str, rows: Iterable[tuple[int, Mapping[str, object]]], ids: Ids = INT_IDS,
                  article_ids: Ids = INT_IDS) -> dict[Id, dict]:
        """Check one question file; return {id: row} for the rows that passed."""
        out: dict[Id, dict] = {}
        for line, row in rows:
            qid = self._new_id("question", row, out, label, line, ids)
            if qid is None:
                continue
            question = cell(row.get("question"))
            if not question.strip():
                self.error("empty question text", label, line, qid)
                continue
            if self._unwritable(row, label, line, qid):
                continue
            gold = self.article_ids(label, line, qid, row.get("article_ids"), article_ids)
            if gold is None:
                continue
            clean = {k: cell(v) for k, v in row.items() if k is not None}
            clean.update(question=question.strip(), article_ids=gold, _line=line)
            out[qid] = clean
        return out

    def _unwritable(self, row: Mapping[str, object], label: str, line: int, rid: Id) -> bool:
        """A text cell of the row no output could hold (`text_problem`): the row is refused, named."""
        for column, value in row.items():
            problem = text_problem(value) if isinstance(value, str) else None
            if problem:
                self.error(f"{column} {problem}", label, line, rid)
                return True
        return False

    def article_ids(self, label, line, qid, value, ids: Ids = INT_IDS) -> tuple[Id, ...] | None:
        if isinstance(value, (list, tuple)):
            parts = [str(v).strip() for v in value]
        else:
            parts = [p.strip() for p in cell(value).replace(";", ",").split(",")]
        parts = [p for p in parts if p]
        if not parts:
            self.error("article_ids is empty", label, line, qid)
            return None
        bad = [p for p in parts if ids(p) is None]
        if bad:
            what = "invalid id" if ids.strings else "non-integer value"
            self.error(f"article_ids has {what}(s) {', '.join(map(repr, bad))}", label, line, qid)
            return None
        ints = [ids(p) for p in parts]
        dupes = sorted({a for a in ints if ints.count(a) > 1})
        if dupes:
            self.warn(f"article id(s) {', '.join(map(str, dupes))} listed twice; counted once",
                      label, line, qid)
        return tuple(dict.fromkeys(ints))

    def pair(self, split: str, source_label: str, target_label: str, source_rows: dict[Id, dict],
             target_rows: dict[Id, dict], langs: LanguagePair) -> list[QuestionPair]:
        """Join the source and target rows of one split; they must agree on ids and gold labels."""
        src, tgt = langs.names
        for qid in sorted(set(source_rows) - set(target_rows)):
            self.error(f"question id present in {src} but missing from {target_label}", source_label,
                       source_rows[qid]["_line"], qid)
        for qid in sorted(set(target_rows) - set(source_rows)):
            self.error(f"question id present in {tgt} but missing from {source_label}", target_label,
                       target_rows[qid]["_line"], qid)
        pairs, same_meta, n_meta, compared = [], 0, 0, set()
        for qid in sorted(set(source_rows) & set(target_rows), key=lambda q: source_rows[q]["_line"]):
            f, n = source_rows[qid], target_rows[qid]
            if f["article_ids"] != n["article_ids"]:
                self.error(f"article_ids differ between {src} ({_ids(f)}) and {tgt} ({_ids(n)})",
                           target_label, n["_line"], qid)
                continue
            if _norm(f["question"]) == _norm(n["question"]):
                self.warn(f"{tgt} question is identical to the {src} one", target_label, n["_line"], qid)
            target_meta = {k: v for k, v in n.items() if k not in ("id", "question", "article_ids", "_line")}
            shared = [c for c in META_COLUMNS if f.get(c, "").strip() and c in target_meta]
            if shared:
                n_meta += 1
                same_meta += all(target_meta[c] == f[c] for c in shared)
                compared.update(shared)
            pairs.append(QuestionPair(
                id=qid, split=split, source=f["question"], target=n["question"],
                article_ids=f["article_ids"], category=f.get("category", ""),
                subcategory=f.get("subcategory", ""), extra_description=f.get("extra_description", ""),
                target_meta=target_meta))
        if n_meta:
            self._untranslated_meta(target_label, split, same_meta, n_meta, compared, langs)
        return pairs

    def _untranslated_meta(self, label: str, split: str, same: int, n: int, compared: set[str],
                           langs: LanguagePair) -> None:
        """One warning per target file, naming the columns compared and each split: a BEIR queries.jsonl
        serves every split, so its later splits update the warning of the first."""
        seen = self._meta.setdefault(label, {"splits": {}, "columns": set(), "issue": None})
        seen["splits"][split] = (same, n)
        seen["columns"] |= compared
        same, n = (sum(v[i] for v in seen["splits"].values()) for i in (0, 1))
        src, tgt = langs.names
        kind = "fields" if label.endswith(".jsonl") else "columns"
        names = ", ".join(c for c in META_COLUMNS if c in seen["columns"])
        splits = seen["splits"]
        if len(splits) == 1:
            per = f"split {split}"
        else:
            per = ", ".join(f"{s} {k}" if same == n else f"{s} {d} of {k}" for s, (d, k) in splits.items())
        what = f"are still in {src} in all {n} rows" if same == n else f"identical to {src} in {same} of {n} rows"
        message = f"{tgt} metadata {kind} ({names}) {what} ({per})"
        if seen["issue"] is not None:
            self.issues.remove(seen["issue"])
            seen["issue"] = None
        if same:
            self.warn(message, label)
            seen["issue"] = self.issues[-1]

    def articles(self, label: str, rows: Iterable[tuple[int, Mapping[str, object]]],
                 ids: Ids = INT_IDS) -> dict[Id, dict]:
        out: dict[Id, dict] = {}
        for line, row in rows:
            aid = self._new_id("article", row, out, label, line, ids)
            if aid is None:
                continue
            if self._unwritable(row, label, line, aid):
                continue
            text = cell(row.get("article"))
            if not text.strip():
                self.warn("empty article text", label, line, aid)
            out[aid] = {k: cell(v) for k, v in row.items() if k is not None} | {"_line": line}
        return out

    def corpus(self, source_rows: dict[Id, dict] | None, target_rows: dict[Id, dict] | None, labels,
               langs: LanguagePair) -> Corpus | None:
        """Source and target articles (rows by id); `labels` names their files by language code."""
        if source_rows is None and target_rows is None:
            return None
        if source_rows is not None and target_rows is not None:
            for aid in sorted(set(source_rows) ^ set(target_rows)):
                src, other = ((labels[langs[0]], labels[langs[1]]) if aid in source_rows
                              else (labels[langs[1]], labels[langs[0]]))
                row = (source_rows if aid in source_rows else target_rows)[aid]["_line"]
                self.error(f"article id missing from {other}", src, row, aid)
        ids = tuple(sorted(set(source_rows or {}) | set(target_rows or {})))
        meta = {a: {k: v for k, v in (source_rows or target_rows).get(a, {}).items()
                    if k not in ("id", "article", "_line")} for a in ids}
        texts = lambda rows: None if rows is None else tuple(rows.get(a, {}).get("article", "") for a in ids)
        return Corpus(ids=ids, source_texts=texts(source_rows), target_texts=texts(target_rows), meta=meta,
                      langs=langs)

    def qrels(self, label: str, rows: Iterable[tuple[int, str, str, str]], qids: Ids = INT_IDS,
              dids: Ids = INT_IDS) -> tuple[dict[Id, dict[Id, int]], dict[Id, int]]:
        """{query id: {corpus id: score}} of one qrels file and the line each query first appears on. Ids
        read by `qids` / `dids`, scores integers as `beir` reads them; a pair listed twice keeps the last
        score, as `beir` does, with a warning."""
        qrels: dict[Id, dict[Id, int]] = {}
        lines: dict[Id, int] = {}
        for line, raw_q, raw_d, raw_score in rows:
            raw_q, raw_d, raw_score = cell(raw_q).strip(), cell(raw_d).strip(), cell(raw_score).strip()
            qid, did = qids(raw_q), dids(raw_d)
            bad = [(what, v, ids) for what, v, ids, got in (("query-id", raw_q, qids, qid), ("corpus-id", raw_d, dids, did))
                   if got is None]
            if bad:
                self.error(f"{bad[0][0]} {bad[0][1]!r} {bad[0][2].rule}", label, line)
                continue
            if not SCORE.fullmatch(raw_score):
                self.error(f"score {raw_score!r} is not an integer", label, line, qid)
                continue
            lines.setdefault(qid, line)
            if did in qrels.setdefault(qid, {}):
                self.warn(f"corpus id {did} listed twice; the last score is kept", label, line, qid)
            qrels[qid][did] = int(raw_score)
        return qrels, lines

    def gold_in_corpus(self, pairs: list[QuestionPair], corpus: Corpus, labels: Mapping[str, str]) -> None:
        known = set(corpus.ids)
        for p in pairs:
            missing = [a for a in p.article_ids if a not in known]
            if missing:
                self.error(f"gold article id(s) {', '.join(map(str, missing))} not in the corpus",
                           labels[p.split], None, p.id)


def cell(value) -> str:
    """Every value the loader takes, as NFC text: NFC and NFD copies of a dataset are the same data."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from pandas/datasets
        return ""
    return nfc(str(value))


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _ids(row: dict) -> str:
    return ",".join(map(str, row["article_ids"]))


def read_text(path: Path, checker: Checker) -> str | None:
    """A text file's content (UTF-8, BOM dropped, no NUL byte); None, with the error noted, if unusable."""
    problem = file_problem(path)
    if problem:
        checker.error(f"cannot read file: {problem}", file=str(path))
        return None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        checker.error(f"cannot read file ({exc.strerror})", file=str(path))
        return None
    remember_read(path, raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        checker.error(f"not valid UTF-8 (byte {raw[exc.start]:#04x})", file=str(path), row=line)
        return None
    if "\x00" in text:
        checker.error("NUL byte in the file (binary or corrupt?)", file=str(path),
                      row=text[: text.index("\x00")].count("\n") + 1)
        return None
    return text


def read_csv(path: Path, checker: Checker, required: Sequence[str]) -> list[tuple[int, dict]] | None:
    """Rows of a CSV with their 1-based line numbers (header = line 1); None if unusable."""
    text = read_text(path, checker)
    if text is None:
        return None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    names = reader.fieldnames or []
    duplicated = sorted({c for c in names if names.count(c) > 1})
    if duplicated:
        checker.error(f"duplicated column name(s) {', '.join(map(repr, duplicated))}", file=str(path), row=1)
        return None
    if not checker.columns(str(path), names, required):
        return None
    rows = []
    try:
        start = 2
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as exc:
        checker.error(f"malformed CSV ({exc})", file=str(path), row=start)  # where the bad record begins
        return None
    return rows


def read_jsonl(path: Path, checker: Checker, required: Sequence[str]) -> list[tuple[int, dict]] | None:
    """The objects of a JSON Lines file with their line numbers (blank lines skipped); a line that is
    not a JSON object holding the `required` keys is an error naming the line (and its `_id` if any)."""
    text = read_text(path, checker)
    if text is None:
        return None
    rows = []
    for line, raw in enumerate(text_lines(text), 1):
        if not raw.strip():
            continue
        try:
            obj = load_json(raw)
        except ValueError as exc:
            checker.error(f"not a JSON line ({getattr(exc, 'msg', exc)})", file=str(path), row=line)
            continue
        if not isinstance(obj, dict):
            checker.error(f"a line must be a JSON object, not {type(obj).__name__}", file=str(path), row=line)
            continue
        missing = [k for k in required if k not in obj]
        if missing:
            checker.error(f"missing key(s) {', '.join(missing)}", file=str(path), row=line,
                          id=obj.get("_id") if isinstance(obj.get("_id"), (str, int)) else None)
            continue
        rows.append((line, obj))
    return rows


def read_qrels(path: Path, checker: Checker) -> list[tuple[int, str, str, str]] | None:
    """(line, query-id, corpus-id, score) of a BEIR qrels TSV: three tab-separated fields; `Checker.qrels`
    types them. The first line is a header (as `beir`'s GenericDataLoader has it) only when it reads
    as one (`_is_header`): `beir` skips it whatever it holds, losing a headerless file's first judgment."""
    text = read_text(path, checker)
    if text is None:
        return None
    rows = []
    for line, fields in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter="\t"), 1):
        if (line == 1 and _is_header(fields)) or not fields:
            continue
        if len(fields) < 3:
            checker.error(f"a qrels line needs query-id, corpus-id and score ({len(fields)} field(s) found)",
                          file=str(path), row=line)
            continue
        rows.append((line, *fields[:3]))
    return rows


QRELS_HEADER = re.compile(r"(query|q)[-_ ]?id|qid|topic", re.IGNORECASE)
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?")


def _is_header(fields: Sequence[str]) -> bool:
    """A qrels first line that names its columns (`query-id`, `qid`...) or whose score is no number."""
    return bool(fields) and (bool(QRELS_HEADER.fullmatch(fields[0].strip()))
                             or (len(fields) >= 3 and not NUMBER.fullmatch(fields[2].strip())))


def revision_of(files: Mapping[str, str]) -> str:
    """A local source's revision: a hash of its files' hashes."""
    return "sha256:" + hashlib.sha256("".join(f"{k}={v}" for k, v in sorted(files.items())).encode()).hexdigest()[:12]
