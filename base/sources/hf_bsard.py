"""`hf:clips/bBSARD[@REV]`: bBSARD on the Hugging Face hub, or a local copy laid out the same way (a
folder with the card's `configs`, or `save_to_disk` folders such as a release's `hf/`), in either
layout the card has had: configs corpus/train/test with splits fr/nl, or configs fr/nl with splits
corpus/train/test."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..languages import BBSARD
from .checker import Checker
from .hub import check_hub_reachable, pin
from .model import ARTICLE_COLUMNS, LANGS, REQUIRED_QUESTION_COLUMNS, SPLITS, Dataset, QuestionPair
from .registry import source

BY_SPLIT, BY_LANG = "configs corpus/train/test, splits fr/nl", "configs fr/nl, splits corpus/train/test"


def hf_load(name: str, config: str, revision: str | None):
    """One config of a hub dataset or of a local copy (`save_to_disk` folder or a folder with a card)."""
    import datasets

    local = Path(name) / config
    if (local / "dataset_dict.json").exists():
        return datasets.load_from_disk(str(local))
    if Path(name).is_dir() and any(Path(name).glob("*/dataset_dict.json")):  # never guess from its arrow files
        raise ValueError(f"BuilderConfig {config!r} not found (no {config}/dataset_dict.json in this save_to_disk copy)")
    return datasets.load_dataset(name, config, revision=revision)


def hf_configs(name: str, revision: str | None) -> set[str] | None:
    """The configs a dataset declares; None when they cannot be listed (the loads then say why)."""
    import datasets

    local = Path(name)
    saved = {p.parent.name for p in local.glob("*/dataset_dict.json")} if local.is_dir() else set()
    if saved:
        return saved
    try:
        return set(datasets.get_dataset_config_names(name, revision=revision))
    except Exception:  # unreachable or unreadable: each config's load reports it in one line
        return None


def layout(name: str, revision: str | None, label: str) -> str:
    configs = hf_configs(name, revision)
    if configs is None or configs & set(SPLITS):
        return BY_SPLIT
    if set(LANGS) <= configs:
        return BY_LANG
    raise InputError(f"the dataset's layout matches no bBSARD layout (configs found: {', '.join(sorted(configs)) or 'none'}; "
                     f"expected {BY_SPLIT}, or {BY_LANG})", file=label)


def corpus(src: str, max_doc_chars: int):
    """Not streamed from this layout: a manifest side (format beir) reads an HF corpus."""
    raise InputError("the corpus audit reads an HF dataset through a manifest (format: beir); "
                     "bBSARD's own corpus: give its CSV folder", file=src)


class _Hub:
    """One `hf:` dataset being read: its configs loaded once each, a failure one line in `checker`."""

    def __init__(self, name: str, revision: str | None, spec: str, checker: Checker) -> None:
        self.name, self.revision, self.spec, self.checker = name, revision, spec, checker
        self.by_lang = layout(name, revision, f"hf:{spec}") == BY_LANG
        self.loaded: dict[str, object] = {}

    def config(self, conf: str):
        if conf not in self.loaded:
            try:
                self.loaded[conf] = hf_load(self.name, conf, self.revision)
            except Exception as exc:  # network, missing config, bad files: one clear line
                self.loaded[conf] = None
                if not (conf == "corpus" or "BuilderConfig" in str(exc)):  # optional corpus, or some splits only
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    self.checker.error(f"cannot load config {conf!r}: {type(exc).__name__}: {first}",
                                       file=f"hf:{self.spec}")
        return self.loaded[conf]

    def table(self, part: str, lang: str):
        """(label, table) of one split (or the corpus) in one language; table None when absent."""
        conf, key = (lang, part) if self.by_lang else (part, lang)
        dd = self.config(conf)
        label = f"hf:{self.name}/{conf}/{key}"
        if dd is None:
            return label, None
        if key not in dd:
            if not (self.by_lang and part in (*SPLITS, "corpus")):  # by language, a split may be absent
                self.checker.error(f"split {key!r} missing", file=label)
            return label, None
        return label, dd[key]

    def split(self, split: str) -> tuple[str, list[QuestionPair]] | None:
        """(label, pairs) of one split, or None when it is absent or unreadable (said in `checker`)."""
        checker = self.checker
        if not self.by_lang and self.config(split) is None:
            return None
        parsed, labels = {}, {}
        for lang in LANGS:
            labels[lang], rows = self.table(split, lang)
            if rows is None or not checker.columns(labels[lang], rows.column_names, REQUIRED_QUESTION_COLUMNS):
                parsed[lang] = None
                continue
            parsed[lang] = checker.questions(labels[lang], ((i + 1, r) for i, r in enumerate(rows)))
        if self.by_lang and parsed["fr"] is None and parsed["nl"] is None:
            return None
        if self.by_lang and (parsed["fr"] is None) != (parsed["nl"] is None):
            missing = labels["fr" if parsed["fr"] is None else "nl"]
            checker.error(f"{missing} is missing (both languages are needed)",
                          file=labels["nl" if parsed["fr"] is None else "fr"])
            return None
        if parsed["fr"] is None or parsed["nl"] is None:
            return None
        return labels["fr"], checker.pair(split, labels["fr"], labels["nl"], parsed["fr"], parsed["nl"], langs=BBSARD)

    def corpus(self):
        arts, labels = {}, {}
        for lang in LANGS:
            labels[lang], rows = self.table("corpus", lang)
            if rows is not None and self.checker.columns(labels[lang], rows.column_names, ARTICLE_COLUMNS):
                arts[lang] = self.checker.articles(labels[lang], ((i + 1, r) for i, r in enumerate(rows)))
            else:
                arts[lang] = None
        return self.checker.corpus(arts["fr"], arts["nl"], labels, langs=BBSARD)


@source("hf", "hf:NAME[@REV]: bBSARD on the hub or a local copy in its layout (either of the card's two)",
        matches=lambda src: src.startswith("hf:"), order=10, corpus=corpus)
def load(src: str, with_corpus: bool) -> Dataset:
    spec = src[3:]
    try:
        import datasets  # noqa: F401
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise InputError("the `datasets` package is needed for hf: sources") from exc
    name, _, revision = spec.partition("@")
    revision = revision or None
    if not Path(name).exists():
        check_hub_reachable(spec)
    checker = Checker()
    hub = _Hub(name, revision, spec, checker)
    pairs: list[QuestionPair] = []
    split_labels = {}
    for split in SPLITS:
        read = hub.split(split)
        if read is not None:
            split_labels[split], split_pairs = read
            pairs += split_pairs
    if not split_labels and not checker.issues:
        checker.error("no train or test config found" if not hub.by_lang else "no train or test split found",
                      file=f"hf:{spec}")
    corpus = None
    if with_corpus and (hub.by_lang or hub.config("corpus") is not None):
        corpus = hub.corpus()
        if corpus is not None:
            checker.gold_in_corpus(pairs, corpus, split_labels)
    return Dataset(pair=BBSARD, source=f"hf:{name}", revision=pin(name, revision),
                   pairs=pairs, corpus=corpus, issues=checker.issues)
