"""Propose new French -> Dutch glossary entries from an aligned FR/NL article corpus, for a person to curate.

Article i in French and article i in Dutch are the same law in both official languages, so a French
legal term and its Dutch rendering occur in the same articles: terms whose article sets overlap
most (Dice coefficient over article document frequencies) are translation candidates. The scoring
is one sparse matrix product (articles x FR terms)^T (articles x NL terms), done in blocks of French
terms so memory stays bounded on the full 22k-article corpus.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from bbsard_audit.base import languages
from bbsard_audit.base.dataset import Corpus
from bbsard_audit.base.errors import InputError

from .glossary import Glossary
from .termmatch import LEMMAS, tokenize

STOPWORDS = {code: languages.get(code).folded("stopwords") for code in languages.codes()}
"""Each language pack's stopwords, folded: no mined term starts or ends with one."""
_JOINER = re.compile(r"\s*|['’-]")
COLUMNS = ["fr", "nl", "dice", "cooc", "fr_df", "nl_df", "in_glossary"]


def _ngrams(text: str, lang: str, max_n: int) -> dict[str, str]:
    """Lemma n-grams (1..max_n) of one article -> the text it was read from; no n-gram starts or ends
    with a stopword or spans punctuation."""
    toks = tokenize(text, lang)
    stop = STOPWORDS[lang]
    lemmas, surfaces, spans = toks.lemmas, toks.surfaces, toks.spans
    keep = [len(w) > 1 and len(f) > 1 and not w.isdigit() for w, f in zip(lemmas, surfaces)]
    # a term never spans punctuation: "… réglée ici. La sursis …" has no n-gram "ici la sursis"
    joined = [_JOINER.fullmatch(text[spans[i][1]:spans[i + 1][0]]) is not None for i in range(len(spans) - 1)]
    out: dict[str, str] = {}
    for i in range(len(lemmas)):
        if not keep[i] or lemmas[i] in stop:
            continue
        for n in range(1, max_n + 1):
            j = i + n
            if j > len(lemmas) or not keep[j - 1] or (n > 1 and not joined[j - 2]):
                break
            if lemmas[j - 1] in stop:
                continue
            key = " ".join(lemmas[i:j])
            if key not in out:  # shown to the curator as written (lower-cased, accents kept)
                out[key] = text[spans[i][0]:spans[j - 1][1]].lower()
    return out


def _doc_term_matrix(texts: Sequence[str], lang: str, max_n: int, min_count: int,
                     max_df: float) -> tuple[sparse.csc_matrix, list[str], list[str]]:
    """Binary articles x terms matrix, keeping terms in >= min_count and <= max_df of the articles."""
    vocab: dict[str, int] = {}
    surface: list[str] = []
    indptr, indices = [0], []
    for text in texts:
        grams = _ngrams(text, lang, max_n)
        for key, form in grams.items():
            col = vocab.get(key)
            if col is None:
                col = vocab[key] = len(surface)
                surface.append(form)
            indices.append(col)
        indptr.append(len(indices))
    matrix = sparse.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                               shape=(len(texts), len(vocab)))
    df = np.asarray(matrix.sum(axis=0)).ravel()
    keep = np.flatnonzero((df >= min_count) & (df <= max(max_df * len(texts), min_count)))
    keys = list(vocab)
    return matrix[:, keep].tocsc(), [keys[k] for k in keep], [surface[k] for k in keep]


def _glossary_keys(glossary: Glossary) -> tuple[dict[str, set[str]], set[str]]:
    """French lemma key -> accepted Dutch lemma keys, and all Dutch keys the glossary knows."""
    def key(term: str, lang: str) -> str:
        return " ".join(tokenize(term.lstrip("="), lang).lemmas)

    accepted: dict[str, set[str]] = {}
    known_nl: set[str] = set()
    for e in glossary.entries:
        nl = {key(t, "nl") for t in e.nl_accepted}
        known_nl |= nl | {key(r.term, "nl") for r in e.nl_rejected}
        for t in e.fr:
            accepted.setdefault(key(t, "fr"), set()).update(nl)
    return accepted, known_nl


def mine(corpus: Corpus, min_count: int = 3, top: int = 200, *, max_n: int = 3, max_df: float = 0.25,
         per_term: int = 1, glossary: Glossary | None = None, block: int = 2048) -> pd.DataFrame:
    """Rank FR -> NL term pairs by Dice over aligned articles; drop pairs the glossary already has.

    `in_glossary` is true when the French term is a glossary term but the proposed Dutch is not one of
    its accepted renderings: a synonym to add, or a wrong rendering to reject.
    """
    fr_texts, nl_texts = corpus.texts("fr"), corpus.texts("nl")
    if len(fr_texts) != len(nl_texts):
        raise InputError(f"the corpus is not aligned: {len(fr_texts)} French vs {len(nl_texts)} Dutch articles")
    if min_count < 1 or top < 1:
        raise InputError("min_count and top must be at least 1")
    x_fr, fr_keys, fr_forms = _doc_term_matrix(fr_texts, "fr", max_n, min_count, max_df)
    x_nl, nl_keys, nl_forms = _doc_term_matrix(nl_texts, "nl", max_n, min_count, max_df)
    LEMMAS.flush()
    if not fr_keys or not nl_keys:
        return pd.DataFrame(columns=COLUMNS)
    df_fr = np.asarray(x_fr.sum(axis=0)).ravel()
    df_nl = np.asarray(x_nl.sum(axis=0)).ravel()
    x_nl_csr = x_nl.tocsr()
    fr_len = np.array([len(k) for k in fr_keys])
    nl_len = np.array([len(k) for k in nl_keys])
    parts = []
    for start in range(0, x_fr.shape[1], block):
        stop = min(start + block, x_fr.shape[1])
        cooc = (x_fr[:, start:stop].T.tocsr() @ x_nl_csr).tocoo()  # (block FR terms) x (NL terms)
        ok = cooc.data >= min_count
        r, c, n = cooc.row[ok] + start, cooc.col[ok], cooc.data[ok]
        dice = 2.0 * n / (df_fr[r] + df_nl[c])
        # best `per_term` Dutch candidates per French term: by Dice, then co-occurrence, then the
        # candidate closest in length to the French term ("verjaringstermijn", not "verjaringstermijn
        # wordt geregeld", for "délai de prescription" when both always co-occur)
        length_gap = np.abs(nl_len[c] - fr_len[r])
        order = np.lexsort((length_gap, -n, -dice, r))
        r, c, n, dice = r[order], c[order], n[order], dice[order]
        first = np.r_[0, np.flatnonzero(np.diff(r)) + 1]
        rank = np.arange(len(r)) - np.repeat(first, np.diff(np.r_[first, len(r)]))
        keep = rank < per_term
        parts.append((r[keep], c[keep], n[keep], dice[keep]))
    r, c, n, dice = (np.concatenate(a) for a in zip(*parts))
    accepted, _ = _glossary_keys(glossary or Glossary.load())
    fr_key = np.array(fr_keys, dtype=object)[r]
    nl_key = np.array(nl_keys, dtype=object)[c]
    known_pair = np.array([nk in accepted.get(fk, ()) for fk, nk in zip(fr_key, nl_key)], dtype=bool)
    in_glossary = np.array([fk in accepted for fk in fr_key], dtype=bool)
    frame = pd.DataFrame({
        "fr": np.array(fr_forms, dtype=object)[r], "nl": np.array(nl_forms, dtype=object)[c],
        "dice": dice.round(4), "cooc": n.astype(int), "fr_df": df_fr[r].astype(int), "nl_df": df_nl[c].astype(int),
        "in_glossary": in_glossary,
    })[~known_pair]
    frame = frame.sort_values(["dice", "cooc", "fr"], ascending=[False, False, True], kind="mergesort")
    return frame.head(top).reset_index(drop=True)
