"""A bBSARD CSV folder: `questions_{fr,nl}_{train,test}.csv` (some splits are enough) and optionally
`articles_{fr,nl}.csv`, as the dataset is published and as `release` writes it."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from ..io import digest_as_read, digest_of
from ..transactions import settle
from ..languages import BBSARD
from .checker import Checker, read_csv, revision_of
from .corpus import CorpusPair, CorpusSide, Record, check_file, record, too_long
from .model import ARTICLE_COLUMNS, LANGS, REQUIRED_QUESTION_COLUMNS, SPLITS, Dataset, QuestionPair
from .registry import source


def corpus(src: str, max_doc_chars: int) -> CorpusPair:
    path = Path(src)
    if not path.is_dir():
        raise InputError("not a manifest (.yaml), 'sample' or a CSV folder with articles_{fr,nl}.csv", file=src)
    return folder_corpus(path, path.name, max_doc_chars)


@source("csv", "a folder of questions_{fr,nl}_{train,test}.csv (+ articles_{fr,nl}.csv)",
        matches=lambda src: True, order=100, corpus=corpus)
def load(src: str, with_corpus: bool) -> Dataset:
    path = Path(src)
    if not path.is_dir():
        raise InputError("not a directory, a manifest (.yaml), 'sample' or 'hf:NAME[@REVISION]'", file=src)
    settle(path, reading=None)  # a release killed or running: its whole previous or new set
    return load_dir(path, with_corpus, label=str(path))


def load_dir(root: Path, with_corpus: bool, label: str) -> Dataset:
    """The questions (and articles) of a bBSARD CSV folder."""
    checker = Checker()
    pairs: list[QuestionPair] = []
    files: dict[str, str] = {}
    split_labels: dict[str, str] = {}
    for split in SPLITS:
        paths = {lang: root / f"questions_{lang}_{split}.csv" for lang in LANGS}
        present = [lang for lang, p in paths.items() if os.path.lexists(p)]  # a symlink loop is present, and wrong
        if not present:
            continue
        if len(present) == 1:
            missing = paths["nl" if present == ["fr"] else "fr"]
            checker.error(f"{missing.name} is missing (both languages are needed)", file=str(paths[present[0]]))
            continue
        parsed = {}
        for lang, p in paths.items():
            rows = read_csv(p, checker, REQUIRED_QUESTION_COLUMNS)
            files[p.name] = digest_as_read(p) if p.is_file() else ""  # the bytes parsed, not a later version
            parsed[lang] = None if rows is None else checker.questions(str(p), rows)
        if parsed["fr"] is None or parsed["nl"] is None:
            continue
        split_labels[split] = str(paths["fr"])
        pairs += checker.pair(split, str(paths["fr"]), str(paths["nl"]), parsed["fr"], parsed["nl"], langs=BBSARD)
    if not split_labels and not checker.issues:
        checker.error("no questions_{fr,nl}_{train,test}.csv files found", file=str(root))
    corpus = None
    for lang in LANGS:  # hashed even when not read: one revision whichever stage loads the folder
        p = root / f"articles_{lang}.csv"
        if os.path.lexists(p):
            files[p.name] = digest_of(p) if p.is_file() else ""
    if with_corpus:
        arts, labels = {}, {}
        for lang in LANGS:
            p = root / f"articles_{lang}.csv"
            labels[lang] = str(p)
            if os.path.lexists(p):
                rows = read_csv(p, checker, ARTICLE_COLUMNS)
                arts[lang] = None if rows is None else checker.articles(str(p), rows)
            else:
                arts[lang] = None
        corpus = checker.corpus(arts["fr"], arts["nl"], labels, langs=BBSARD)
        if corpus is not None:
            checker.gold_in_corpus(pairs, corpus, split_labels)
    return Dataset(pair=BBSARD, source=label, revision=revision_of(files), pairs=pairs, corpus=corpus,
                   issues=checker.issues, files=files)


def folder_corpus(root: Path, source: str, max_doc_chars: int) -> CorpusPair:
    """`articles_{fr,nl}.csv` of a bBSARD CSV folder, streamed for the corpus audit."""
    sides, files = [], {}
    for lang in BBSARD:
        p = root / f"articles_{lang}.csv"
        check_file(p)
        sides.append(CorpusSide(str(p), lang, lambda p=p: _csv_records(p, max_doc_chars), p.stat().st_size))
        files[p.name] = digest_of(p)
    return CorpusPair(source, BBSARD, (sides[0], sides[1]), files)


def _csv_records(path: Path, max_doc_chars: int) -> Iterator[Record]:
    """bBSARD `articles_<lang>.csv` rows (id, article, ...): the article is the text, no title."""
    label = str(path)
    csv.field_size_limit(max(csv.field_size_limit(), max_doc_chars * 4 + 1))
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f)
        try:
            missing = [c for c in ("id", "article") if c not in (rows.fieldnames or [])]
            if missing:
                raise InputError(f"missing column(s) {', '.join(missing)}", file=label, row=1)
            for row in rows:
                yield record({"_id": (row.get("id") or "").strip(), "text": row.get("article")}, label,
                              rows.line_num, max_doc_chars)
        except csv.Error as exc:
            raise InputError(too_long("more", max_doc_chars) if "field limit" in str(exc) else f"not CSV ({exc})",
                             file=label, row=rows.line_num) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=label, row=rows.line_num + 1) from None
