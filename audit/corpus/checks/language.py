"""Document checks `doc_untranslated` (the target is in the source language) and `doc_wrong_language`
(it is in neither language of the pair).

Language id on every document would cost ~70 µs each (py3langid), so the packs screen first: on the
target's first `SAMPLE` characters, the share of the target pack's common words
(`untranslated.common`) that no other pack has as a word (Dutch 'het', 'wordt', not 'de' or 'in')
and the count of source-only cue words (the source pack's `untranslated.cues` that are no word of
the target pack, as the question check `untranslated`), and the share of its words that are the
target's function words (`function_words`: the pack's and bm25s's stopword list keyed by code), so
that Spanish or Italian, which share a few ('la', 'il') with French, do not read as French. A text
written in the target language has many common words, about half function words and no cues;
only the others go to py3langid (all its languages, so that "neither" can be said). Untranslated:
P(source) >= `prob`, or a target identical to its source (>= `min_words` words, whitespace
trimmed). Wrong language: P(neither language of the pair) = 1 - P(source) - P(target) >= `prob`
on a text of >= `min_words` words, named by the top-ranked other language (py3langid spreads a
short Spanish text over Spanish, Catalan and Galician; `doc_other_lang_prob` holds P(neither)).
The spans are the source cue words (untranslated) or the start of the text. NaN probabilities:
language id was not asked (the screen passed it).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bbsard_audit.base import languages
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import fold, language_name

from .base import DocCheck, Docs, Result, row_sums, spans_in, words

SAMPLE = 1500
"""Characters of the target that the screen and language id read."""
_WORDS = re.compile(r"[^\W\d_]+")


def _forms(words) -> frozenset[str]:
    """Lower-cased and folded forms, so a lower-cased text word matches either way."""
    return frozenset(x for w in words for x in (w.lower(), fold(w)))


def _grammar_words(pack) -> frozenset[str]:
    """A pack's function words, pronouns and stopwords."""
    return _forms(w for s in ("function_words", "pronouns", "stopwords") for w in pack.data.get(s, ()))


def _own_words(pack) -> frozenset[str]:
    """Every word a pack lists for its language: its grammar words and its `untranslated` common words and cues."""
    return _grammar_words(pack) | _forms(w for s in ("common", "cues") for w in pack.data.get("untranslated", {}).get(s, ()))


@cache
def screen_words(source: str, target: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the target's common words that no other pack has, the source's cue words that are no word of
    the target pack)."""
    src, tgt = languages.get(source), languages.get(target)
    common = _forms(tgt.section("untranslated")["common"])
    others = frozenset().union(*(_grammar_words(p) | _forms(p.data.get("untranslated", {}).get("common", ()))
                                 for p in map(languages.get, languages.codes()) if p.code != target))
    return common - others, _forms(src.section("untranslated")["cues"]) - _own_words(tgt)


@cache
def function_words(target: str) -> frozenset[str]:
    """The target's function words (its pack's and bm25s's list): a text in the target language is
    about half these (bBSARD's questions: 0.30-0.80, articles 0.36-0.70 in Dutch and French); a text in
    another language that shares a few ('la' in Spanish, 'il' in Italian) holds far fewer."""
    pack = languages.get(target)
    listed = pack.data.get("bm25s_stopwords")  # a pack without one uses its own words
    if not listed:
        return _own_words(pack)
    stopwords = getattr(_bm25s_lists(), f"STOPWORDS_{listed}", None)
    if stopwords is None:
        raise InputError(f"`bm25s_stopwords`: bm25s has no stopword list {listed!r} (STOPWORDS_{listed})",
                         file=str(pack.path))
    return _own_words(pack) | _forms(stopwords)


@cache
def _bm25s_lists():
    """bm25s's stopwords module alone: importing the package loads numba and scipy (~1 s a process)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "_bm25s_stopwords", Path(importlib.util.find_spec("bm25s").origin).with_name("stopwords.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=1)
def identifier():
    """py3langid over all its languages (loaded once per process), probabilities normalised."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


class LanguageCheck(DocCheck):
    name = "doc_language"
    order = 30
    flags = {
        "doc_untranslated": "The translation is in the source language (language id, after a screen by the "
                            "packs' `untranslated` cue words), or identical to its source.",
        "doc_wrong_language": "The translation is in neither language of the pair (language id).",
    }
    categories = {"doc_untranslated": "untranslated", "doc_wrong_language": "mistranslation"}
    weights = {"doc_untranslated": 0.85, "doc_wrong_language": 0.85}
    needs = ("untranslated",)
    columns = {"doc_target_common_share": pa.float64(), "doc_source_cues": pa.float64(),
               "doc_source_lang_prob": pa.float64(), "doc_target_lang_prob": pa.float64(),
               "doc_other_lang_prob": pa.float64()}
    params = {"prob": 0.9, "min_words": 5.0, "common_share": 0.05, "cue_share": 0.03, "coverage": 0.35}

    def map(self, docs: Docs, ctx) -> Result:
        src, tgt = docs.pair.source, docs.pair.target
        common, cues = screen_words(src, tgt)
        n = len(docs)
        probs = {k: np.full(n, np.nan) for k in ("source", "target", "other")}
        findings = [[] for _ in range(n)]
        prob, min_words = self.param(ctx, "prob"), self.param(ctx, "min_words")
        target = docs.arrow("target_text")
        lists = words(target, SAMPLE)
        flat = lists.flatten()
        count = row_sums(lists, np.asarray(pc.greater(pc.utf8_length(flat), 0), dtype=np.int64))
        hits = {name: row_sums(lists, np.asarray(pc.is_in(flat, value_set=pa.array(sorted(vocabulary))), dtype=np.int64))
                for name, vocabulary in (("common", common), ("cues", cues), ("function", function_words(tgt)))}
        share = np.where(count > 0, hits["common"] / np.maximum(count, 1), np.nan)
        identical = np.asarray(pc.equal(pc.utf8_trim_whitespace(docs.arrow("source_text")),
                                        pc.utf8_trim_whitespace(target)).fill_null(False)) & (count >= min_words)
        target_like = (share >= self.param(ctx, "common_share")) & (
            hits["cues"] < np.maximum(2.0, self.param(ctx, "cue_share") * count)) & (
            hits["function"] >= self.param(ctx, "coverage") * count)
        for i in np.flatnonzero((count > 0) & (identical | ~target_like)):  # the others read as the target language
            text = docs.target[i]
            ranked = dict(identifier().rank(text[:SAMPLE]))
            probs["source"][i], probs["target"][i] = ranked.get(src, 0.0), ranked.get(tgt, 0.0)
            other = max((k for k in ranked if k not in (src, tgt)), key=ranked.get)
            p_other = probs["other"][i] = max(0.0, 1.0 - probs["source"][i] - probs["target"][i])
            if identical[i] or probs["source"][i] >= prob:
                detail = ("identical to its source" if identical[i]
                          else f"language id: {language_name(src)} {probs['source'][i]:.2f}")
                cue_spans = [m.span() for m in _WORDS.finditer(text[:SAMPLE]) if m.group().lower() in cues]
                findings[i] = [self.finding(f"{tgt.upper()} is {language_name(src)}, not {language_name(tgt)} ({detail})",
                                            spans_in(tgt, text, cue_spans or [(0, min(len(text), 200))], "doc_untranslated"),
                                            "doc_untranslated")]
            elif p_other >= prob and count[i] >= min_words:
                findings[i] = [self.finding(f"{tgt.upper()} is in {language_name(other)} (language id {ranked[other]:.2f}; "
                                            f"neither language of the pair {p_other:.2f}), "
                                            f"neither {language_name(src)} nor {language_name(tgt)}",
                                            spans_in(tgt, text, [(0, min(len(text), 200))], "doc_wrong_language"),
                                            "doc_wrong_language")]
        return Result({"doc_target_common_share": share, "doc_source_cues": hits["cues"].astype(float),
                       "doc_source_lang_prob": probs["source"], "doc_target_lang_prob": probs["target"],
                       "doc_other_lang_prob": probs["other"]}, findings)
