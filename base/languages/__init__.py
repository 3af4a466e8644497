"""Language packs: everything the audit knows about one language, one pack per ISO 639-1 code.

A pack is `<code>.yaml` (word lists: stopwords, pronouns, negation cues, interrogatives, number words,
regions, institutions, roles, untranslated-text cues, ...) plus `<code>.py` (the grammar hooks the
data cannot express: French 'ne ... pas', English "n't", Dutch/German compound numbers). A check asks
the packs of its language pair; a section a pack lacks raises `Unavailable`, which the check records
as "not available for <code>" instead of passing silently. Adding a language = one module + one
YAML in this folder. What each pack covers: docs/languages.md.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

from ..errors import InputError
from ..untrusted import load_yaml, nfc_data
from .pair import BBSARD, ISO_639_1, NLLB, UNRECORDED, LanguagePair, check_code, language_name  # noqa: F401

PACK_DIR = Path(__file__).resolve().parent
SECTIONS: dict[str, str] = {
    "stopwords": "words", "pronouns": "words", "function_words": "words", "negation": "mapping",
    "interrogatives": "words", "inversion_pronouns": "words", "numbers": "mapping", "abbreviations": "words",
    "compounds": "bool", "plural_endings": "strings", "regions": "concepts", "capitalised_only": "words",
    "institutions": "concepts", "determiners_before_commune": "words", "roles": "concepts",
    "untranslated": "mapping", "selftest": "mapping", "meta_text": "mapping", "references": "mapping",
    "term_gaps": "mapping", "backtranslation": "rules", "stage_directions": "concepts", "bm25s_stopwords": "name",
}
"""Every section a pack may have, and its kind; `name` (the language's English name) is required."""


def fold(text: str) -> str:
    """Lower-case and strip accents: 'Wallonië' -> 'wallonie', 'Été' -> 'ete'."""
    lower = text.lower()
    if lower.isascii():
        return lower
    decomposed = unicodedata.normalize("NFKD", lower)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class Unavailable(Exception):
    """A check needs a section the pack of `lang` lacks."""

    def __init__(self, lang: str, section: str):
        super().__init__(f"not available for {lang} (its language pack has no `{section}`)")
        self.lang, self.section = lang, section


@dataclass(frozen=True)
class Negations:
    clause: int
    lexical: int
    tokens: tuple[int, ...]
    """Token positions of the clause negators."""


COORDINATION_WINDOW = 6
"""A 'ni' / 'noch' / 'nor' this close after another negator continues it ('sans préavis ni indemnité')."""


def hyphenated(tokens, i: int) -> bool:
    """Token i is followed by a hyphen ('niet-begeleid', 'non-resident'): a lexical negation."""
    end = tokens.spans[i][1]
    return tokens.text[end:end + 1] == "-"


def standalone(tokens, i: int) -> bool:
    """Token i ends its clause ("... ou non ?") rather than modifying a word ("bail non officiel")."""
    return i + 1 == len(tokens.surfaces) or not re.match(r"\s*\w", tokens.text[tokens.spans[i][1]:])


def continues(surfaces: Sequence[str], i: int, negators) -> bool:
    """A coordinating negator continues an earlier one ('noch ik noch de moeder')."""
    return any(w in negators for w in surfaces[max(0, i - COORDINATION_WINDOW):i])


def word_list(value, key: str, label: str) -> tuple[str, ...]:
    """A non-empty list of non-blank texts, stripped; else a one-line InputError naming `key`."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"`{key}` must be a non-empty list of words", file=label)
    return tuple(v.strip() for v in value)


def cue_negations(tokens, data: Mapping[str, Any], *, lexical_before_hyphen: Sequence[str] = (),
                  coordinator: str | None = None, contracted: Callable[[Any, int], bool] | None = None,
                  no_negation: Callable[[Any, int], bool] | None = None) -> Negations:
    """Negation by cue words (Dutch, English, German): a `negators` word negates its clause unless
    the next word makes a `not_negation` pair ('nothing but'); an `additive` pair ('not only') and a
    `lexical_before_hyphen` word before a hyphen ('niet-begeleid') are lexical; a `coordinator`
    right after another negator continues it ('noch', 'nor'); an `implicit` word negates lexically
    ('undocumented', 'withhold': a translation may say it with 'zonder' / 'niet'); `contracted(tokens, i)`: token i is a
    clitic negation ("n't"); `no_negation(tokens, i)`: the cue at i is another word here ('No. 5')."""
    negators = set(data["negators"])
    implicit = set(data.get("implicit", ()))
    not_negation = {tuple(p) for p in data.get("not_negation", ())}
    additive = {tuple(p) for p in data.get("additive", ())}
    s = tokens.surfaces
    clause: list[int] = []
    lexical = 0
    for i, w in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if w in lexical_before_hyphen and hyphenated(tokens, i):
            lexical += 1
        elif contracted is not None and contracted(tokens, i):
            clause.append(i)
        elif (w, nxt) in additive or w in implicit:
            lexical += 1
        elif w in negators and (w, nxt) not in not_negation and not (no_negation and no_negation(tokens, i)):
            if not (w == coordinator and continues(s, i, negators)):
                clause.append(i)
    return Negations(len(clause), lexical, tuple(clause))


def _scalar(value) -> bool:
    return isinstance(value, str) and bool(value.strip()) or isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_item(item, key: str, label: str) -> None:
    """An entry of a mapping section: a text, a list of words or of [text, text] pairs, or a mapping
    of words to numbers or words."""
    if isinstance(item, list):
        if not item or not (all(isinstance(v, str) and v.strip() for v in item) or all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) and x.strip() for x in v) for v in item)):
            raise InputError(f"`{key}` must be a non-empty list of words or of [text, text] pairs", file=label)
    elif isinstance(item, dict):
        if not item or not all(isinstance(k, str) and _scalar(v) for k, v in item.items()):
            raise InputError(f"`{key}` must map words to numbers or words", file=label)
    elif not _scalar(item):
        raise InputError(f"`{key}` must be a text, a list or a mapping", file=label)


RULE_KEYS = ("threshold", "scale")
"""What a pack's `rules` section may set of a [signals.COLUMN] rule: the rest is the signal's."""


def _rules(value, key: str, label: str) -> dict[str, dict[str, float]]:
    """Per-rule thresholds and scales: `{column: {threshold: number, scale: number > 0}}`."""
    if not isinstance(value, dict) or not value:
        raise InputError(f"`{key}` must map each rule column to its threshold and scale", file=label)
    out = {}
    for column, rule in value.items():
        if not isinstance(rule, dict) or not rule or set(rule) - set(RULE_KEYS):
            raise InputError(f"`{key}.{column}` must set only {' and '.join(RULE_KEYS)}", file=label)
        for name, number in rule.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                    or (name == "scale" and number <= 0):
                raise InputError(f"`{key}.{column}.{name}` must be a finite number"
                                 + (" above 0" if name == "scale" else "") + f", got {number!r}", file=label)
        out[str(column)] = {name: float(number) for name, number in rule.items()}
    return out


def _validate(raw: Any, label: str) -> dict:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputError("a language pack must be a mapping with a `name`", file=label)
    unknown = set(raw) - set(SECTIONS) - {"name"}
    if unknown:
        raise InputError(f"unknown section(s) {', '.join(sorted(map(str, unknown)))}", file=label)
    out: dict = {"name": raw["name"]}
    for key, value in raw.items():
        kind = SECTIONS.get(key)
        if kind == "words":
            out[key] = word_list(value, key, label)
        elif kind == "strings":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"`{key}` must be a list of strings", file=label)
            out[key] = tuple(value)
        elif kind == "name":
            if not isinstance(value, str) or not value:
                raise InputError(f"`{key}` must be a name", file=label)
            out[key] = value
        elif kind == "bool":
            if not isinstance(value, bool):
                raise InputError(f"`{key}` must be true or false", file=label)
            out[key] = value
        elif kind == "concepts":
            if not isinstance(value, dict) or not value:
                raise InputError(f"`{key}` must map each concept to a list of words", file=label)
            out[key] = {str(name): word_list(forms, f"{key}.{name}", label) for name, forms in value.items()}
        elif kind == "rules":
            out[key] = _rules(value, key, label)
        elif kind == "mapping":
            if not isinstance(value, dict) or not value:
                raise InputError(f"`{key}` must be a mapping", file=label)
            for sub, item in value.items():
                _check_item(item, f"{key}.{sub}", label)
            out[key] = value
    return out


@dataclass(frozen=True)
class Pack:
    """One language: its validated data and its grammar hooks."""

    code: str
    name: str
    data: Mapping[str, Any] = field(repr=False)
    hooks: ModuleType = field(repr=False)
    path: Path = field(repr=False)

    def has(self, section: str) -> bool:
        return section in self.data

    def section(self, section: str) -> Any:
        """A section's data; `Unavailable` when this pack lacks it."""
        if section not in self.data:
            raise Unavailable(self.code, section)
        return self.data[section]

    def folded(self, section: str) -> frozenset[str]:
        """A word-list section, folded (empty when the pack lacks it)."""
        return frozenset(fold(w) for w in self.data.get(section, ()))

    def lemma(self, word: str) -> str:
        """simplemma's lemma of `word` (not folded)."""
        import simplemma

        return simplemma.lemmatize(word, lang=self.code)

    @property
    def compounds(self) -> bool:
        """Whether a one-word term also matches as the head of a compound word (Dutch, German)."""
        return bool(self.data.get("compounds"))

    @property
    def plural_endings(self) -> tuple[str, ...]:
        """Endings a compound head may carry ('huurcontract' + 'en')."""
        return tuple(self.data.get("plural_endings", ("",)))

    @cached_property
    def term_gaps(self) -> tuple[frozenset[str], int] | None:
        """(skippable words, at most this many between two words of a term), or None: the pack's
        `term_gaps` (articles and possessives a multi-word term may have or lack, termmatch.py)."""
        gaps = self.data.get("term_gaps")
        if not gaps:
            return None
        try:
            limit = int(gaps["max"])
        except (KeyError, TypeError, ValueError):
            raise InputError("`term_gaps.max` must be a whole number", file=str(self.path)) from None
        return frozenset(fold(w) for w in gaps.get("skip", ())), limit

    def negations(self, tokens) -> Negations:
        """Clause and lexical negations of tokenised text (the pack's grammar hook)."""
        return self.hooks.negations(tokens, self.section("negation"))

    @cached_property
    def number_words(self) -> dict[str, float]:
        """Folded number phrase (words joined by spaces) -> value."""
        return self.hooks.number_words(self.section("numbers"))

    @cached_property
    def compound_number(self) -> Callable[[str], float | None]:
        """A one-word number compound's value ('negenjarige' = 9, 'vierenhalf' = 4.5), else None."""
        return compound_numbers(self.number_words, self.section("numbers"))

    def fingerprint(self, sections: Sequence[str]) -> str:
        """Hash of the given sections and of the hook module: a check's signature includes it."""
        data = {s: self.data.get(s) for s in sections}
        if "term_gaps" in self.data:  # how every concept term matches in this language (termmatch)
            data["term_gaps"] = self.data["term_gaps"]
        blob = json.dumps(data, sort_keys=True, ensure_ascii=False, default=list).encode()
        hooks = Path(self.hooks.__file__).read_bytes()
        return hashlib.sha256(blob + hooks).hexdigest()


def compound_numbers(words: Mapping[str, float], data: Mapping[str, Any]) -> Callable[[str], float | None]:
    """The value of a number written as one word with a suffix ('negenjarige' = 9) or a half
    ('vierenhalf' = 4.5), for packs whose `numbers` give `compound_suffixes` / `half_suffix`."""
    suffixes, half = data.get("compound_suffixes"), data.get("half_suffix")
    single = {w: v for w, v in words.items() if " " not in w}
    pattern = (re.compile("(" + "|".join(sorted(map(re.escape, single), key=len, reverse=True)) + ")"
                          "(" + "|".join(map(re.escape, (fold(s) for s in suffixes))) + ")") if suffixes else None)

    def value(word: str) -> float | None:
        if pattern is not None and (m := pattern.fullmatch(word)):
            return single[m.group(1)]
        if half and word.endswith(half) and word[:-len(half)] in single:
            return single[word[:-len(half)]] + 0.5
        return None
    return value


def units_and_tens(units: Sequence[str], tens: Mapping[str, float],
                   compound: Callable[[str, int], str]) -> dict[str, float]:
    """Units, tens, and each ten with a unit 1-9 written as `compound(ten word, unit)`."""
    words: dict[str, float] = {w: i for i, w in enumerate(units)}
    for word, ten in tens.items():
        words[word] = ten
        for unit in range(1, 10):
            words[compound(word, unit)] = ten + unit
    return words


def codes() -> tuple[str, ...]:
    """Every language with a pack (a YAML and its module), French and Dutch first."""
    found = sorted(p.stem for p in PACK_DIR.glob("*.yaml") if (PACK_DIR / f"{p.stem}.py").is_file())
    first = [c for c in ("fr", "nl", "en", "de") if c in found]
    return tuple(first + [c for c in found if c not in first])


def read_pack(path: Path, hooks: ModuleType) -> Pack:
    """Read and validate one pack file (uncached: see `get`)."""
    data = _validate(nfc_data(load_yaml(path, "language pack", unreadable="not a readable YAML language pack")),
                     str(path))
    return Pack(path.stem, data["name"], data, hooks, path)


@cache
def get(code: str) -> Pack:
    """The pack of an ISO 639-1 code, read once per process; InputError for an unknown language."""
    if code not in codes():
        raise InputError(f"no language pack for {code!r} (known: {', '.join(codes())}); "
                         "see docs/languages.md to add one")
    return read_pack(PACK_DIR / f"{code}.yaml", importlib.import_module(f"{__name__}.{code}"))
