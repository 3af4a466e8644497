"""Load bBSARD from any source (`sample`, a CSV directory, `hf:NAME[@REV]`) into typed objects.

Every source goes through the same row checks (`_Checker`), so a bad CSV row and a bad hub row get
the same one-line error naming the file, the row and the question id.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .errors import InputError
from .io import digest_of, file_problem, is_local_path
from .untrusted import nfc
from .transactions import settle

SPLITS = ("train", "test")
LANGS = ("fr", "nl")
QUESTION_COLUMNS = ("id", "category", "subcategory", "question", "extra_description", "article_ids")
REQUIRED_QUESTION_COLUMNS = ("id", "question", "article_ids")
ARTICLE_COLUMNS = ("id", "article")
META_COLUMNS = ("category", "subcategory", "extra_description")
SAMPLE = "sample"
PLAIN_INT = re.compile(r"[0-9]+")
"""Ids are plain ASCII digits: not `7_75`, `+7`, ` 7` or `٣`, all of which int() would accept."""


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
    """One French question, its Dutch translation and the gold article ids both inherit."""

    id: int
    split: str
    question_fr: str
    question_nl: str
    article_ids: tuple[int, ...]
    category: str = ""
    subcategory: str = ""
    extra_description: str = ""
    meta_nl: Mapping[str, str] = field(default_factory=dict)
    """The Dutch file's own metadata columns, kept as found so a release writes them back."""


@dataclass(frozen=True)
class Corpus:
    """Bilingual article corpus; a language may be missing (`None`)."""

    ids: tuple[int, ...]
    text_fr: tuple[str, ...] | None
    text_nl: tuple[str, ...] | None
    meta: Mapping[int, Mapping[str, str]] = field(default_factory=dict)

    def texts(self, lang: str) -> tuple[str, ...]:
        texts = self.text_fr if lang == "fr" else self.text_nl
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

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "warning"]

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.level == "error"]

    @property
    def splits(self) -> list[str]:
        return [s for s in SPLITS if any(p.split == s for p in self.pairs)]

    def select(self, split: str = "all") -> list[QuestionPair]:
        """Pairs of one split (`train`, `test`) or `all`."""
        if split == "all":
            return list(self.pairs)
        if split not in SPLITS:
            raise InputError(f"unknown split {split!r}; use train, test or all")
        return [p for p in self.pairs if p.split == split]

    def by_id(self) -> dict[int, QuestionPair]:
        return {p.id: p for p in self.pairs}

    def qrels(self, split: str = "all") -> dict[str, dict[str, int]]:
        """TREC-style qrels {qid: {docid: 1}}, ids as strings (the same for French and Dutch)."""
        return {str(p.id): {str(a): 1 for a in p.article_ids} for p in self.select(split)}

    @property
    def source_id(self) -> str:
        """The source as shareable outputs name it: `sample` and hub ids as given, a local folder (CSV
        or `hf:` copy) by its folder name only; `revision` and `files_sha256` pin its content."""
        prefix, path = ("hf:", self.source[3:]) if self.source.startswith("hf:") else ("", self.source)
        return prefix + Path(path).name if self.source != SAMPLE and Path(path).exists() else self.source

    def provenance(self) -> dict:
        """What to record in a sidecar so the output can be traced to this exact data (never by a local path)."""
        return {
            "source": self.source_id,
            "revision": self.revision,
            "files_sha256": dict(self.files),
            "n_pairs": {s: len(self.select(s)) for s in self.splits},
            "corpus_articles": len(self.corpus) if self.corpus else 0,
        }


# ---------------------------------------------------------------- row checks (all sources)

class _Checker:
    """Collects errors and warnings while rows from any source are turned into objects."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

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

    def questions(self, label: str, rows: Iterable[tuple[int, Mapping[str, object]]]) -> dict[int, dict]:
        """Check one question file; return {id: row} for the rows that passed."""
        out: dict[int, dict] = {}
        for line, row in rows:
            raw_id = _cell(row.get("id"))
            if not PLAIN_INT.fullmatch(raw_id):
                self.error(f"question id {raw_id!r} is not an integer (ASCII digits only)", label, line)
                continue
            qid = int(raw_id)
            if qid in out:
                self.error("duplicate question id", label, line, qid)
                continue
            question = _cell(row.get("question"))
            if not question.strip():
                self.error("empty question text", label, line, qid)
                continue
            ids = self.article_ids(label, line, qid, row.get("article_ids"))
            if ids is None:
                continue
            clean = {k: _cell(v) for k, v in row.items() if k is not None}
            clean.update(question=question.strip(), article_ids=ids, _line=line)
            out[qid] = clean
        return out

    def article_ids(self, label, line, qid, value) -> tuple[int, ...] | None:
        if isinstance(value, (list, tuple)):
            parts = [str(v).strip() for v in value]
        else:
            parts = [p.strip() for p in _cell(value).replace(";", ",").split(",")]
        parts = [p for p in parts if p]
        if not parts:
            self.error("article_ids is empty", label, line, qid)
            return None
        bad = [p for p in parts if not PLAIN_INT.fullmatch(p)]
        if bad:
            self.error(f"article_ids has non-integer value(s) {', '.join(map(repr, bad))}", label, line, qid)
            return None
        ints = [int(p) for p in parts]
        dupes = sorted({a for a in ints if ints.count(a) > 1})
        if dupes:
            self.warn(f"article id(s) {', '.join(map(str, dupes))} listed twice; counted once",
                      label, line, qid)
        return tuple(dict.fromkeys(ints))

    def pair(self, split: str, fr_label: str, nl_label: str, fr: dict[int, dict],
             nl: dict[int, dict]) -> list[QuestionPair]:
        """Join French and Dutch rows of one split; they must agree on ids and gold labels."""
        for qid in sorted(set(fr) - set(nl)):
            self.error(f"question id present in French but missing from {nl_label}", fr_label,
                       fr[qid]["_line"], qid)
        for qid in sorted(set(nl) - set(fr)):
            self.error(f"question id present in Dutch but missing from {fr_label}", nl_label,
                       nl[qid]["_line"], qid)
        pairs, same_meta, n_meta = [], 0, 0
        for qid in sorted(set(fr) & set(nl), key=lambda q: fr[q]["_line"]):
            f, n = fr[qid], nl[qid]
            if f["article_ids"] != n["article_ids"]:
                self.error(f"article_ids differ between French ({_ids(f)}) and Dutch ({_ids(n)})",
                           nl_label, n["_line"], qid)
                continue
            if _norm(f["question"]) == _norm(n["question"]):
                self.warn("Dutch question is identical to the French one", nl_label, n["_line"], qid)
            meta_nl = {k: v for k, v in n.items() if k not in ("id", "question", "article_ids", "_line")}
            shared = [c for c in META_COLUMNS if f.get(c, "").strip() and c in meta_nl]
            if shared:
                n_meta += 1
                same_meta += all(meta_nl[c] == f[c] for c in shared)
            pairs.append(QuestionPair(
                id=qid, split=split, question_fr=f["question"], question_nl=n["question"],
                article_ids=f["article_ids"], category=f.get("category", ""),
                subcategory=f.get("subcategory", ""), extra_description=f.get("extra_description", ""),
                meta_nl=meta_nl))
        if n_meta and same_meta == n_meta:
            self.warn(f"Dutch metadata columns ({', '.join(META_COLUMNS)}) are still in French "
                      f"in all {n_meta} rows", nl_label)
        elif same_meta:
            self.warn(f"Dutch metadata columns identical to French in {same_meta} of {n_meta} rows",
                      nl_label)
        return pairs

    def articles(self, label: str, rows: Iterable[tuple[int, Mapping[str, object]]]) -> dict[int, dict]:
        out: dict[int, dict] = {}
        for line, row in rows:
            raw = _cell(row.get("id"))
            if not PLAIN_INT.fullmatch(raw):
                self.error(f"article id {raw!r} is not an integer (ASCII digits only)", label, line)
                continue
            aid = int(raw)
            if aid in out:
                self.error("duplicate article id", label, line, aid)
                continue
            text = _cell(row.get("article"))
            if not text.strip():
                self.warn("empty article text", label, line, aid)
            out[aid] = {k: _cell(v) for k, v in row.items() if k is not None} | {"_line": line}
        return out

    def corpus(self, fr: dict[int, dict] | None, nl: dict[int, dict] | None, labels) -> Corpus | None:
        if fr is None and nl is None:
            return None
        if fr is not None and nl is not None:
            for aid in sorted(set(fr) ^ set(nl)):
                src, other = (labels["fr"], labels["nl"]) if aid in fr else (labels["nl"], labels["fr"])
                row = (fr if aid in fr else nl)[aid]["_line"]
                self.error(f"article id missing from {other}", src, row, aid)
        ids = tuple(sorted(set(fr or {}) | set(nl or {})))
        meta = {a: {k: v for k, v in (fr or nl).get(a, {}).items()
                    if k not in ("id", "article", "_line")} for a in ids}
        texts = lambda rows: None if rows is None else tuple(rows.get(a, {}).get("article", "") for a in ids)
        return Corpus(ids=ids, text_fr=texts(fr), text_nl=texts(nl), meta=meta)

    def gold_in_corpus(self, pairs: list[QuestionPair], corpus: Corpus, labels: Mapping[str, str]) -> None:
        known = set(corpus.ids)
        for p in pairs:
            missing = [a for a in p.article_ids if a not in known]
            if missing:
                self.error(f"gold article id(s) {', '.join(map(str, missing))} not in the corpus",
                           labels[p.split], None, p.id)


def _cell(value) -> str:
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


# ---------------------------------------------------------------- sources

def load_dataset(src: str = SAMPLE, *, strict: bool = True, with_corpus: bool = True) -> Dataset:
    """Load `sample`, a CSV directory or `hf:NAME[@REV]`.

    With `strict`, the first error raises `InputError`; otherwise all issues are returned on the
    Dataset (what `validate` prints).
    """
    if src == SAMPLE:
        ds = _load_dir(sample_dir(), with_corpus, label=SAMPLE)
    elif src.startswith("hf:"):
        ds = _load_hf(src[3:], with_corpus)
    else:
        path = Path(src)
        if not path.is_dir():
            raise InputError("not a directory, 'sample' or 'hf:NAME[@REVISION]'", file=src)
        settle(path, reading=None)  # a release killed or running: its whole previous or new set
        ds = _load_dir(path, with_corpus, label=str(path))
    if strict and ds.errors:
        first = ds.errors[0]
        more = len(ds.errors) - 1
        raise InputError(first.message + (f" (and {more} more error(s); run `bbsard-audit validate`)"
                                          if more else ""), file=first.file, row=first.row, id=first.id)
    return ds


def sample_dir() -> Path:
    return Path(str(resources.files("bbsard_audit") / "sample"))


def _read_csv(path: Path, checker: _Checker, required: Sequence[str]) -> list[tuple[int, dict]] | None:
    """Rows of a CSV with their 1-based line numbers (header = line 1); None if unusable."""
    problem = file_problem(path)
    if problem:
        checker.error(f"cannot read file: {problem}", file=str(path))
        return None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        checker.error(f"cannot read file ({exc.strerror})", file=str(path))
        return None
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
        checker.error(f"malformed CSV ({exc})", file=str(path), row=reader.line_num)
        return None
    return rows




def _load_dir(root: Path, with_corpus: bool, label: str) -> Dataset:
    checker = _Checker()
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
            files[p.name] = digest_of(p) if p.is_file() else ""
            rows = _read_csv(p, checker, REQUIRED_QUESTION_COLUMNS)
            parsed[lang] = None if rows is None else checker.questions(str(p), rows)
        if parsed["fr"] is None or parsed["nl"] is None:
            continue
        split_labels[split] = str(paths["fr"])
        pairs += checker.pair(split, str(paths["fr"]), str(paths["nl"]), parsed["fr"], parsed["nl"])
    if not split_labels and not checker.issues:
        checker.error("no questions_{fr,nl}_{train,test}.csv files found", file=str(root))
    corpus = None
    if with_corpus:
        arts, labels = {}, {}
        for lang in LANGS:
            p = root / f"articles_{lang}.csv"
            labels[lang] = str(p)
            if os.path.lexists(p):
                files[p.name] = digest_of(p) if p.is_file() else ""
                rows = _read_csv(p, checker, ARTICLE_COLUMNS)
                arts[lang] = None if rows is None else checker.articles(str(p), rows)
            else:
                arts[lang] = None
        corpus = checker.corpus(arts["fr"], arts["nl"], labels)
        if corpus is not None:
            checker.gold_in_corpus(pairs, corpus, split_labels)
    revision = hashlib.sha256("".join(f"{k}={v}" for k, v in sorted(files.items())).encode()).hexdigest()[:12]
    return Dataset(source=label, revision=f"sha256:{revision}", pairs=pairs, corpus=corpus,
                   issues=checker.issues, files=files)


def _load_hf(spec: str, with_corpus: bool) -> Dataset:
    """`clips/bBSARD[@rev]` from the hub, or a local path laid out the same way (configs corpus,
    train, test with splits fr and nl), or a `save_to_disk` folder of such configs."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise InputError("the `datasets` package is needed for hf: sources") from exc
    name, _, revision = spec.partition("@")
    revision = revision or None
    if not Path(name).exists():
        _check_hub_reachable(spec)
    checker = _Checker()

    def load(config: str):
        local = Path(name) / config
        try:
            if (local / "dataset_dict.json").exists():
                return datasets.load_from_disk(str(local))
            return datasets.load_dataset(name, config, revision=revision)
        except Exception as exc:  # network, missing config, bad files: one clear line
            if config == "corpus" or "BuilderConfig" in str(exc):
                return None  # optional corpus, or a copy holding only some splits
            checker.error(f"cannot load config {config!r}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                          file=f"hf:{spec}")
            return None

    pairs: list[QuestionPair] = []
    split_labels = {}
    for split in SPLITS:
        dd = load(split)
        if dd is None:
            continue
        parsed = {}
        for lang in LANGS:
            label = f"hf:{name}/{split}/{lang}"
            if lang not in dd:
                checker.error(f"split {lang!r} missing", file=label)
                parsed[lang] = None
                continue
            table = dd[lang]
            if not checker.columns(label, table.column_names, REQUIRED_QUESTION_COLUMNS):
                parsed[lang] = None
                continue
            parsed[lang] = checker.questions(label, ((i + 1, r) for i, r in enumerate(table)))
        if parsed["fr"] is None or parsed["nl"] is None:
            continue
        split_labels[split] = f"hf:{name}/{split}/fr"
        pairs += checker.pair(split, f"hf:{name}/{split}/fr", f"hf:{name}/{split}/nl",
                              parsed["fr"], parsed["nl"])
    if not split_labels and not checker.issues:
        checker.error("no train or test config found", file=f"hf:{spec}")
    corpus = None
    if with_corpus:
        dd = load("corpus")
        if dd is not None:
            arts, labels = {}, {}
            for lang in LANGS:
                labels[lang] = f"hf:{name}/corpus/{lang}"
                if lang in dd and checker.columns(labels[lang], dd[lang].column_names, ARTICLE_COLUMNS):
                    arts[lang] = checker.articles(labels[lang], ((i + 1, r) for i, r in enumerate(dd[lang])))
                else:
                    arts[lang] = None
            corpus = checker.corpus(arts["fr"], arts["nl"], labels)
            if corpus is not None:
                checker.gold_in_corpus(pairs, corpus, split_labels)
    return Dataset(source=f"hf:{name}", revision=revision or _resolve_revision(name),
                   pairs=pairs, corpus=corpus, issues=checker.issues)


HUB_PROBE_TIMEOUT_S = 3.0


def _check_hub_reachable(spec: str) -> None:
    """Fail at once, in one line, when the hub cannot be reached: `datasets` would retry for about a
    minute before saying so. Skipped in offline mode (`datasets` then reads its local cache, fast) and
    behind a proxy (only the library knows how to reach the hub through it); a copy in the local
    Hugging Face cache is left to `datasets`, which falls back to it after its retries, as before."""
    import socket
    from urllib.parse import urlsplit

    from datasets import config
    from huggingface_hub import constants

    env = os.environ
    if constants.HF_HUB_OFFLINE or config.HF_HUB_OFFLINE or any(  # read at import; the variables may come later
            env.get(k, "").strip().lower() in ("1", "true", "yes", "on") for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")):
        return
    if any(env.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    endpoint = urlsplit(env.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = endpoint.hostname or "huggingface.co", endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        if _in_hf_cache(spec.partition("@")[0]):
            return
        raise InputError(f"the Hugging Face hub ({host}) is not reachable ({exc.strerror or type(exc).__name__}); "
                         "offline, set HF_HUB_OFFLINE=1 to read a copy in the local Hugging Face cache, or give "
                         "a local folder (--dataset DIR or hf:PATH)", file=f"hf:{spec}") from None


def _in_hf_cache(name: str) -> bool:
    """A download of hub dataset `name` in the Hugging Face caches (the hub's files or `datasets`' build)."""
    from datasets import config, naming
    from huggingface_hub import constants

    owner, _, repo = name.rpartition("/")
    built = f"{owner}___{naming.camelcase_to_snakecase(repo)}" if owner else naming.camelcase_to_snakecase(repo)
    return ((Path(constants.HF_HUB_CACHE) / f"datasets--{name.replace('/', '--')}").is_dir()
            or (Path(config.HF_DATASETS_CACHE) / built).is_dir())


def _resolve_revision(name: str) -> str:
    """The commit a hub dataset resolved to, when the hub can be asked; else say it was unpinned. A local
    copy is pinned by its content (outputs name it by folder name, never by its path)."""
    if Path(name).exists():
        return f"sha256:{digest_of(Path(name))[:12]}"
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(name).sha or "main"
    except Exception:
        return "main (unpinned; hub not reachable to resolve the commit)"


# ---------------------------------------------------------------- finding a recorded dataset again

def _known_sources_file() -> Path:
    from .embeddings import default_cache_dir

    return default_cache_dir().parent / "local_datasets.json"


def _source_key(provenance: Mapping) -> str:
    return f"{provenance.get('source')}@{provenance.get('revision')}"


def remember_source(src: str, provenance: Mapping) -> None:
    """Note on this machine where a local source (a CSV folder or `hf:PATH`) lies, keyed by what outputs
    record of it (source id + revision), in the user's cache (`local_datasets.json`): shareable outputs
    stay path-free and `recorded_source` still finds the data they name. Hub ids and `sample` need no note."""
    prefix, path = ("hf:", src[3:]) if src.startswith("hf:") else ("", src)
    if src == SAMPLE or not Path(path).exists():
        return
    from .io import write_json

    known = _known_sources()
    known[_source_key(provenance)] = prefix + os.path.abspath(path)
    try:
        write_json(_known_sources_file(), known)
    except OSError:  # a read-only cache only loses the convenience
        pass


def _known_sources() -> dict[str, str]:
    import json

    try:
        known = json.loads(_known_sources_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in known.items() if isinstance(v, str)} if isinstance(known, dict) else {}


def recorded_source(provenance: Mapping) -> str | None:
    """The `--dataset` that loads the data a sidecar's `dataset` record names: `sample`, a local folder
    noted by `remember_source` on this machine, or the hub id at its recorded commit; None if unknown here."""
    source, revision = str(provenance.get("source") or ""), str(provenance.get("revision") or "")
    local = _known_sources().get(_source_key(provenance))
    if local is not None or source == SAMPLE:  # a folder of the user's may be named `sample` too
        return local or SAMPLE
    if source.startswith("hf:") and "/" in source:  # a hub id (a local copy is named by its folder only)
        pinned = revision and not revision.startswith(("sha256:", "main"))
        return f"{source}@{revision}" if pinned else source
    return None


def same_data(ds: Dataset, provenance: Mapping) -> bool:
    """`ds` holds the files a sidecar recorded (same sha256), or the same revision when none were recorded."""
    files = provenance.get("files_sha256") or {}
    if files:
        return all(ds.files.get(name) == digest for name, digest in files.items())
    recorded = str(provenance.get("revision") or "")
    return ds.revision == recorded or recorded.startswith("main")  # an unpinned hub load: any commit
