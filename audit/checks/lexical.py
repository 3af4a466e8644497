"""QA check `lexical`: per content word, is there lexical evidence that it was translated?

Each source content word (not a stopword, function word, pronoun or number) is looked up in
bilingual dictionaries of the pair, both directions (FreeDict's dictd files, as Debian's
`dict-freedict-<src>-<tgt>` and `dict-freedict-<tgt>-<src>` packages install them; read by
base/contracts/dictionary.py): it is *rendered* when one of its translations is a word of the target
(surface or lemma, or the head or first part of a compound: 'Galaxienhaufen'), or the same word or a
cognate is there ('Galaxie'). A word the dictionaries do not know is no evidence either way. Likewise
each target content word the dictionaries know must render some source word.

The evidence that a meaning was lost or replaced is both at once: a source word the dictionaries know
that nothing in the target renders, *and* a target word the dictionaries know that renders nothing in
the source ("a fluke" -> "einem Fluch": 'fluke' is Zufall/Glücksfall, 'Fluch' is curse). Its column,
`qa_lex_mistranslated` = min(unrendered source words, unexplained target words), feeds p_error through
the `lexical_mismatch` rule; the spans are those words on both sides. A pair whose dictionaries are not
installed is listed as "not available: install ..." in the sidecar, never passed silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from bbsard_audit.base import languages
from bbsard_audit.base.contracts.dictionary import read_dictionary
from bbsard_audit.base.contracts.files import read_bytes
from bbsard_audit.base.embeddings import default_cache_dir
from bbsard_audit.base.io import write_json
from bbsard_audit.base.languages import Unavailable, fold

from ..findings import Finding
from ..signals import Rule
from ..termmatch import Tokens
from .base import Check, Pair, Side

DICTIONARY_DIRS = ("/usr/share/dictd",)
"""Where dictd dictionaries are looked for; BBSARD_AUDIT_DICTIONARIES (a folder list, os.pathsep)
goes first."""
ISO3 = {"en": "eng", "de": "deu", "fr": "fra", "nl": "nld"}
"""FreeDict names languages by ISO 639-3."""
MIN_WORD = 3
"""Shorter words (and anything with a digit) are never content words."""
MIN_COGNATE = 5
"""Two words sharing their first MIN_COGNATE letters (and most of the shorter one) count as one
rendering the other: 'Galaxie' / 'galaxy', 'Mikroskop' / 'microscope'."""
MIN_PART = 4
"""A translation found as the first part or the head of a compound ('Galaxien|haufen') counts when it
has at least MIN_PART letters."""
THRESHOLD = 3.5
"""`qa_lex_mistranslated` above it raises `lexical_mismatch` (4 words lost and 4 unexplained). On real
correct text the dictionaries miss common links (FreeDict's French-Dutch has no 'parent' = 'ouder'):
2 and 2 fired on 27 % of the bBSARD pairs and 8.7 % of the clean MQM pairs, 3 and 3 on 8.6 % and
1.9 % (and on 9 of the sample's 32 correct pairs), 4 and 4 on 2.0 % and 0.7 %."""
WEIGHT = 0.05
"""The rule's weight: far below the flag threshold, so this evidence alone never flags a pair. It
separates nothing on the MQM TED en-de dev set (benchmarks/bench_mqm.md: 0.9 % of major-accuracy
pairs and 0.7 % of clean ones reach the threshold; at 0.3 with 2 and 2 words the flag took 2.5 points
more of each) and 0.1 cost the fr-nl oracle of bench_calibration 0.001 of AUC: it explains with spans,
and a refit (`audit calibrate`) weighs its column and flag from verdicts."""
SCALE = 0.2
"""The rule's width: a pair just below the threshold adds almost nothing (at 0.5, 2 and 2 words tipped
a correct bBSARD pair sitting at p_error 0.495 over the flag without the flag being raised)."""
FORMAT = 2
"""Version of the cached word tables (bump when `_table` changes)."""

FLAGS = {
    "lexical_mismatch": "Words of the source that no dictionary translation in the target renders, together with "
                        "target words that render nothing in the source ('a fluke' -> 'einem Fluch'): a meaning "
                        "lost or replaced (bilingual FreeDict dictionaries of the pair, both directions).",
}
SCHEMA = {"needs": "words", "placeholders": "words"}


def dictionary_dirs() -> list[Path]:
    extra = [p for p in os.environ.get("BBSARD_AUDIT_DICTIONARIES", "").split(os.pathsep) if p]
    return [Path(p) for p in (*extra, *DICTIONARY_DIRS)]


def dictionary_file(src: str, tgt: str) -> Path | None:
    """The `freedict-<src3>-<tgt3>.index` of the first folder holding it."""
    name = f"freedict-{ISO3.get(src, src)}-{ISO3.get(tgt, tgt)}.index"
    return next((d / name for d in dictionary_dirs() if (d / name).exists()), None)


def package(src: str, tgt: str) -> str:
    return f"dict-freedict-{ISO3.get(src, src)}-{ISO3.get(tgt, tgt)}"


class MissingDictionary(Unavailable):
    """The pair's dictionaries are not installed: the check is listed as not available, naming them."""

    def __init__(self, packages: list[str]):
        Exception.__init__(self, f"not available: install {' '.join(packages)} (apt-get install; FreeDict, "
                                 f"the pair's bilingual dictionaries)")
        self.lang, self.section = None, "dictionary"


@dataclass(frozen=True, eq=False)
class Lexicon:
    """Word-level translations of one pair, both directions merged: folded source word -> folded
    target words, and folded target word -> folded source words."""

    forward: dict[str, frozenset[str]]
    backward: dict[str, frozenset[str]]
    names: tuple[str, ...]
    """The dictionaries' shareable names + sha256 (for the sidecar)."""


def _words(phrase: str) -> list[str]:
    return [fold(w) for w in phrase.replace("-", " ").replace(".", " ").split()
            if w.isalpha() and len(w) >= MIN_WORD and fold(w) not in _placeholders()]


@cache
def _placeholders() -> frozenset[str]:
    return frozenset(fold(w) for w in LexicalCheck()._own()["placeholders"])


def _headword(head: str) -> str | None:
    """The one word of a headword besides its placeholders ('know sth.' -> 'know'), or None."""
    words = [w for w in head.replace(".", " ").replace("'s", " ").split() if fold(w) not in _placeholders()]
    return fold(words[0]) if len(words) == 1 and words[0].replace("-", "").isalpha() else None


def _table(index: Path) -> tuple[dict[str, list[str]], str]:
    """One dictionary as word -> translation words (one-word headwords, placeholders aside), cached on
    disk by the sha256 of its index (parsing the English-German one takes seconds)."""
    digest = hashlib.sha256(read_bytes(index)).hexdigest()
    cached = default_cache_dir().parent / "lexicon" / f"{index.name.removesuffix('.index')}-{digest[:16]}-v{FORMAT}.json"
    if cached.exists():
        try:
            return json.loads(cached.read_text(encoding="utf-8")), digest
        except (OSError, ValueError):
            pass  # a damaged cache is rebuilt, never trusted
    d = read_dictionary(index)
    table: dict[str, set[str]] = {}
    for head, phrases in d.entries.items():
        word = _headword(head)
        if word is None:
            continue
        words = table.setdefault(word, set())
        for phrase in phrases:
            words.update(_words(phrase))
    out = {k: sorted(v) for k, v in table.items() if v}
    try:
        write_json(cached, out)
    except OSError:
        pass  # a read-only cache folder only costs time
    return out, digest


def missing_dictionaries(pair: Pair) -> list[str]:
    """The packages of the pair's two dictionaries (both directions) that no dictionary folder holds."""
    src, tgt = pair
    return [package(a, b) for a, b in ((src, tgt), (tgt, src)) if dictionary_file(a, b) is None]


def lexicon_or_none(pair: Pair) -> Lexicon | None:
    """`lexicon`, or None when the pair's dictionaries are not installed (the caller's sidecar says so)."""
    try:
        return lexicon(pair)
    except Unavailable:
        return None


@cache
def lexicon(pair: Pair) -> Lexicon:
    """Both dictionaries of the pair merged; `Unavailable` names the package(s) to install."""
    src, tgt = pair
    missing = missing_dictionaries(pair)
    if missing:
        raise MissingDictionary(missing)
    files = {(a, b): dictionary_file(a, b) for a, b in ((src, tgt), (tgt, src))}
    forward: dict[str, set[str]] = {}
    backward: dict[str, set[str]] = {}
    names = []
    for (a, b), path in files.items():
        table, digest = _table(path)
        names.append(f"{path.name.removesuffix('.index')} sha256:{digest[:16]}")
        there, back = (forward, backward) if a == src else (backward, forward)
        for word, translated in table.items():
            there.setdefault(word, set()).update(translated)
            for t in translated:
                back.setdefault(t, set()).add(word)
    return Lexicon({k: frozenset(v) for k, v in forward.items()}, {k: frozenset(v) for k, v in backward.items()},
                   tuple(names))


@cache
def _ignored(lang: str) -> frozenset[str]:
    pack = languages.get(lang)
    return frozenset().union(*(pack.folded(s) for s in ("stopwords", "function_words", "pronouns") if pack.has(s)))


def content_words(tokens: Tokens) -> list[int]:
    """Token positions of content words: letters only, at least MIN_WORD long, no stopword."""
    ignored = _ignored(tokens.lang)
    return [i for i, (s, l) in enumerate(zip(tokens.surfaces, tokens.lemmas))
            if len(s) >= MIN_WORD and s.isalpha() and s not in ignored and l not in ignored]


def _cognate(a: str, b: str) -> bool:
    if a == b:
        return True
    short = min(len(a), len(b))
    if short < MIN_COGNATE:
        return False
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    return common >= MIN_COGNATE and common >= 0.7 * short


@cache
def _endings(lang: str) -> tuple[str, ...]:
    return tuple(e for e in languages.get(lang).plural_endings if e)


def _renders(candidates: frozenset[str], word: str, lemma: str, compounds: bool, endings: tuple[str, ...] = ()) -> bool:
    """Does a word (surface, lemma) render one of `candidates` (translations of a word of the other
    side)? Also with a plural ending the lemmatiser left ('Arten' = 'Art' + 'en')."""
    if word in candidates or lemma in candidates:
        return True
    if any(word.endswith(e) and word[:-len(e)] in candidates for e in endings):
        return True
    if compounds and len(word) > MIN_PART + 2:
        return any(len(c) >= MIN_PART and (word.startswith(c) or word.endswith(c) or lemma.endswith(c))
                   for c in candidates)
    return False


@dataclass(frozen=True)
class Evidence:
    """A pair's lexical evidence: token positions of each side's content words the dictionaries know
    and the other side does not render."""

    unrendered: tuple[int, ...]
    """Source words, known to the dictionaries, that no target word renders."""
    unexplained: tuple[int, ...]
    """Target words, known to the dictionaries, that render no source word."""
    known_source: int
    known_target: int
    rendered_source: frozenset[int] = frozenset()
    """Source content words with a rendering (a translation or a cognate) in the target."""
    rendered_target: frozenset[int] = frozenset()
    """Target content words rendering a source word."""


def letter_tokens(tokens: Tokens) -> list[int]:
    """Positions of the tokens made of letters only (words, not numbers or marks)."""
    return [i for i, s in enumerate(tokens.surfaces) if s.isalpha()]


def evidence(source: Tokens, target: Tokens, lex: Lexicon) -> Evidence:
    """Which content words of each side find a translation on the other (any word of the other side
    may render one: 'only' -> 'nur', a German stopword)."""
    src_words, tgt_words = content_words(source), content_words(target)
    tgt_compounds = languages.get(target.lang).compounds
    src_compounds = languages.get(source.lang).compounds
    tgt_endings, src_endings = _endings(target.lang), _endings(source.lang)
    tgt_all = [(j, target.surfaces[j], target.lemmas[j]) for j in letter_tokens(target)]
    src_all = [(i, source.surfaces[i], source.lemmas[i]) for i in letter_tokens(source)]
    rendered_tgt: set[int] = set()
    rendered_src: set[int] = set()
    unrendered, known_s = [], 0
    for i in src_words:
        s, l = source.surfaces[i], source.lemmas[i]
        candidates = lex.forward.get(s, frozenset()) | lex.forward.get(l, frozenset())
        hit = [j for j, t, tl in tgt_all
               if _cognate(s, t) or _cognate(l, tl) or (candidates and _renders(candidates, t, tl, tgt_compounds, tgt_endings))]
        rendered_tgt.update(hit)
        if hit:
            rendered_src.add(i)
        if candidates:
            known_s += 1
            if not hit:
                unrendered.append(i)
    unexplained, known_t, unknown_t = [], 0, set()
    for j in tgt_words:
        t, tl = target.surfaces[j], target.lemmas[j]
        candidates = lex.backward.get(t, frozenset()) | lex.backward.get(tl, frozenset()) | next(
            (lex.backward[t[:-len(e)]] for e in tgt_endings if t.endswith(e) and t[:-len(e)] in lex.backward), frozenset())
        if not candidates:
            unknown_t.add(j)
            continue
        known_t += 1
        if j in rendered_tgt or any(_cognate(s, t) or _cognate(l, tl) or _renders(candidates, s, l, src_compounds, src_endings)
                                    for _, s, l in src_all):
            continue
        unexplained.append(j)
    return Evidence(tuple(unrendered), tuple(unexplained), known_s, known_t, frozenset(rendered_src),
                    frozenset(rendered_tgt | (set(tgt_words) - set(unexplained) - unknown_t)))


@lru_cache(maxsize=32768)
def pair_evidence(source: Tokens, target: Tokens, lex: Lexicon) -> Evidence:
    """`evidence`, once per pair of texts and lexicon (a lexicon is keyed by identity: one read later is
    another key): the alignment check reads it too (on the MQM dev set's German compounds it costs ~18 ms
    a pair)."""
    return evidence(source, target, lex)


class LexicalCheck(Check):
    name = "lexical"
    order = 100
    flags = FLAGS
    rules = (
        Rule("qa_lex_mistranslated", "lexical_mismatch", threshold=THRESHOLD, scale=SCALE, weight=WEIGHT, order=55,
             direction="above", category="mistranslation",
             reason="{value:.0f} {source} word(s) without a dictionary translation in the {target}, and as many "
                    "{target} words that translate nothing in the {source}"),
    )
    columns = ("qa_lex_known_{source}", "qa_lex_known_{target}", "qa_lex_unrendered", "qa_lex_unexplained",
               "qa_lex_mistranslated")
    context = ("qa_lex_known_{source}", "qa_lex_known_{target}")
    data = "lexical"

    def signature(self) -> str:
        """The code's, plus which dictionaries are installed (path, size, mtime): one installed or updated
        later is a new result."""
        found = [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" if p else "-"
                 for p in (dictionary_file(a, b) for a in languages.codes() for b in languages.codes() if a != b)]
        return super().signature() + hashlib.sha256("|".join(found).encode()).hexdigest()[:8]

    def packs(self, pair: Pair):
        packs = super().packs(pair)
        lexicon(pair)  # Unavailable when a dictionary is not installed
        return packs

    def compare(self, source: Side, target: Side, stats: object = None) -> tuple[list[Finding], tuple]:
        ev = pair_evidence(source.tokens, target.tokens, lexicon((source.lang, target.lang)))
        score = min(len(ev.unrendered), len(ev.unexplained))
        out = []
        if score > THRESHOLD:
            words = lambda side, idx: ", ".join(f"'{side.tokens.original[slice(*side.tokens.spans[k])]}'" for k in idx)
            out.append(Finding("lexical_mismatch",
                               f"{source.code} {words(source, ev.unrendered)} not rendered in {target.code}; "
                               f"{target.code} {words(target, ev.unexplained)} translate nothing in {source.code}",
                               source.spans([source.tokens.spans[k] for k in ev.unrendered], "lexical_mismatch")
                               + target.spans([target.tokens.spans[k] for k in ev.unexplained], "lexical_mismatch")))
        return out, (ev.known_source, ev.known_target, len(ev.unrendered), len(ev.unexplained), score)
