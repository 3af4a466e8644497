"""What every source loads into: question pairs, an optional corpus, provenance and the issues found."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from bbsard_audit.base.contracts.table import STRING_ID  # noqa: F401  (the one string-id rule, re-exported)
from ..errors import InputError
from ..io import is_local_path
from ..languages import BBSARD, LanguagePair

SPLITS = ("train", "test")
LANGS = tuple(BBSARD)
"""bBSARD's file codes (`questions_fr_test.csv`), from its pair."""
QUESTION_COLUMNS = ("id", "category", "subcategory", "question", "extra_description", "article_ids")
REQUIRED_QUESTION_COLUMNS = ("id", "question", "article_ids")
ARTICLE_COLUMNS = ("id", "article")
META_COLUMNS = ("category", "subcategory", "extra_description")
SAMPLE = "sample"
PLAIN_INT = re.compile(r"[0-9]+")
"""Ids are plain ASCII digits: not `7_75`, `+7`, ` 7` or `٣`, all of which int() would accept."""
Id = int | str
"""A question or article id: an int when every id of its kind in the dataset is plain digits, else a str
(`STRING_ID`); bBSARD's CSV folder and hub copies take integer ids only."""


@dataclass(frozen=True)
class Issue:
    """A problem found while loading: `error` stops the load, `warning` is reported."""

    level: str
    message: str
    file: str | None = None
    row: int | None = None
    id: object | None = None

    def one_line(self) -> str:
        return InputError(self.message, file=self.file, row=self.row, id=self.id).one_line()

    def shareable(self) -> str:
        """`one_line` with a local file named by its name only, for outputs that are shared."""
        file = Path(self.file).name if is_local_path(self.file) else self.file
        return InputError(self.message, file=file, row=self.row, id=self.id).one_line()


@dataclass(frozen=True)
class QuestionPair:
    """One source-language question (`source`), its translation (`target`) and the gold article ids
    both inherit. Files name the sides by language code (`question_fr`, `question_nl`: the `Layout`)."""

    id: Id
    split: str
    source: str
    target: str
    article_ids: tuple[Id, ...]
    category: str = ""
    subcategory: str = ""
    extra_description: str = ""
    target_meta: Mapping[str, str] = field(default_factory=dict)
    """The target file's own metadata columns, kept as found so a release writes them back."""


@dataclass(frozen=True)
class Corpus:
    """Bilingual article corpus; a language may be missing (`None`). `source_texts` holds the source
    language's texts and `target_texts` the target's (`langs` = their codes: fr, nl for bBSARD)."""

    ids: tuple[Id, ...]
    source_texts: tuple[str, ...] | None
    target_texts: tuple[str, ...] | None
    meta: Mapping[Id, Mapping[str, str]] = field(default_factory=dict)
    langs: tuple[str, str] = LANGS

    def texts(self, lang: str) -> tuple[str, ...]:
        texts = self.source_texts if lang == self.langs[0] else self.target_texts if lang == self.langs[1] else None
        if texts is None:
            raise InputError(f"the loaded corpus has no {lang} articles")
        return texts

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Dataset:
    """Question pairs (+ optional corpus), where they came from, and what was found wrong."""

    source: str
    revision: str | None
    pairs: list[QuestionPair]
    corpus: Corpus | None = None
    issues: list[Issue] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """File label -> sha256, the revision of a local source."""
    pair: LanguagePair = field(kw_only=True)
    """The pair the source gives its questions in."""
    name: str | None = None
    """The name shareable outputs use instead of `source` (a manifest's `name`)."""
    license: str | None = None
    """The licence identifier its manifest gives (`cc-by-4.0`); None: not recorded."""
    citation: str | None = None
    """The citation (BibTeX) its manifest gives; None: not recorded."""

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "warning"]

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "error"]

    @property
    def splits(self) -> list[str]:
        present = list(dict.fromkeys(p.split for p in self.pairs))
        return [s for s in SPLITS if s in present] + [s for s in present if s not in SPLITS]

    def select(self, split: str = "all") -> list[QuestionPair]:
        """Pairs of one split (`train`, `test`, a BEIR qrels file's name) or `all`."""
        if split == "all":
            return list(self.pairs)
        known = list(dict.fromkeys([*SPLITS, *self.splits]))
        if split not in known:
            raise InputError(f"unknown split {split!r}; use {', '.join(known)} or all")
        return [p for p in self.pairs if p.split == split]

    def by_id(self) -> dict[Id, QuestionPair]:
        return {p.id: p for p in self.pairs}

    @property
    def string_ids(self) -> bool:
        """The question ids are strings (a BEIR benchmark whose ids are not all plain digits)."""
        return any(isinstance(p.id, str) for p in self.pairs)

    def qrels(self, split: str = "all") -> dict[str, dict[str, int]]:
        """TREC-style qrels {qid: {docid: 1}}, ids as strings (the same for source and target)."""
        return {str(p.id): {str(a): 1 for a in p.article_ids} for p in self.select(split)}

    @property
    def source_id(self) -> str:
        """The source as shareable outputs name it: `sample` and hub ids as given, a local folder (CSV
        or `hf:` copy) by its folder name only, a manifest by its `name`; `revision` and `files_sha256`
        pin its content."""
        if self.name:
            return self.name
        prefix, path = ("hf:", self.source[3:]) if self.source.startswith("hf:") else ("", self.source)
        return prefix + Path(path).name if self.source != SAMPLE and Path(path).exists() else self.source

    def provenance(self) -> dict:
        """What to record in a sidecar so the output can be traced to this exact data (never by a local path)."""
        record = {
            "source": self.source_id,
            "revision": self.revision,
            "files_sha256": dict(self.files),
            "n_pairs": {s: len(self.select(s)) for s in self.splits},
            "corpus_articles": len(self.corpus) if self.corpus else 0,
        }
        if not self.pair.implicit:  # absent: the pair of every sidecar written before pairs existed
            record["languages"] = self.pair.record()
        return record
