"""The language pair a dataset is translated across, as ISO 639-1 codes (re-exported by the package).

A benchmark is written in its `source` language and machine-translated into its `target`; bBSARD is
fr -> nl. Files keep language-coded names (`question_fr`, `corrected_nl`), so code speaks of source
and target and names files with the codes. One `LanguagePair` goes from the dataset to the last
stage: a stage that starts from files reads it back with `LanguagePair.from_sidecar`.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from ..errors import InputError

ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz
ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik
io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml
mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd
se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi
vo wa wo xh yi yo za zh zu""".split())

NAMES = {"fr": "French", "nl": "Dutch", "en": "English", "de": "German", "es": "Spanish", "it": "Italian",
         "pt": "Portuguese", "pl": "Polish", "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "ar": "Arabic"}
"""Language names for messages; any other code is named by itself."""

NLLB = {"fr": "fra_Latn", "nl": "nld_Latn", "en": "eng_Latn", "de": "deu_Latn", "es": "spa_Latn",
        "it": "ita_Latn", "pt": "por_Latn", "pl": "pol_Latn", "ru": "rus_Cyrl", "zh": "zho_Hans",
        "ja": "jpn_Jpan", "ar": "arb_Arab"}
"""FLORES-200 codes NLLB models take (`--translator-src-lang` / `--translator-tgt-lang`)."""


def language_name(code: str) -> str:
    return NAMES.get(code, code)


def check_code(code: object, *, file: str | None = None, key: str | None = None) -> str:
    """`code` when it is an ISO 639-1 code (two lowercase letters); else one InputError line."""
    if not isinstance(code, str) or code not in ISO_639_1:
        where = f"{key}: " if key else ""
        raise InputError(f"{where}unknown language {code!r} (an ISO 639-1 code such as fr, nl, en)", file=file)
    return code


class _Codes(NamedTuple):
    source: str
    target: str


class LanguagePair(_Codes):
    """The language a benchmark was written in (`source`) and the one it was translated into (`target`).
    A named tuple, so `source, target = pair` unpacks it and it keys a cache as the plain (source,
    target) tuple did."""

    __slots__ = ()

    def __new__(cls, source: str, target: str) -> "LanguagePair":
        check_code(source, key="source")
        check_code(target, key="target")
        if source == target:
            raise InputError(f"source and target are both {source!r}; a translated benchmark needs two languages")
        return super().__new__(cls, source, target)

    @classmethod
    def parse(cls, text: str) -> "LanguagePair":
        """A pair written as text: `fr->nl` (`str(pair)`) or `fr-nl` (a review task's `languages`)."""
        parts = text.split("->") if "->" in text else text.split("-")
        if len(parts) != 2:
            raise InputError(f"{text!r} is not a language pair (source->target, e.g. fr->nl)")
        source, target = (p.strip() for p in parts)
        return cls(source, target)

    @classmethod
    def from_sidecar(cls, meta: Mapping, *, file: str | None = None) -> "LanguagePair":
        """The pair a sidecar records: its `languages` {source, target}, its `pair` (`fr->nl`, the
        corpus audit's), or its `dataset` record's `languages`. None of them: a folder written before
        pairs existed, all of them bBSARD's fr -> nl."""
        dataset = meta.get("dataset")
        for recorded in (meta.get("languages"), meta.get("pair"),
                         dataset.get("languages") if isinstance(dataset, Mapping) else None):
            try:
                if isinstance(recorded, Mapping) and recorded:
                    return cls(recorded.get("source"), recorded.get("target"))
                if isinstance(recorded, str) and recorded:
                    return cls.parse(recorded)
            except InputError as exc:
                raise InputError(f"the recorded language pair: {exc.message}", file=file) from None
        return UNRECORDED

    def record(self) -> dict[str, str]:
        """{"source": code, "target": code}: the sidecar's `languages` record, and each role's code."""
        return {"source": self.source, "target": self.target}

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"

    @property
    def implicit(self) -> bool:
        """Whether a record leaves this pair out: it is `UNRECORDED`, what a reader takes a record
        without a pair for, so a file written for it stays as files written before pairs were."""
        return self == UNRECORDED

    @property
    def names(self) -> tuple[str, str]:
        return language_name(self.source), language_name(self.target)

    def back(self) -> "LanguagePair":
        """The direction a back-translation runs: target -> source."""
        return LanguagePair(self.target, self.source)

    def opus_mt(self) -> str:
        """The Helsinki-NLP opus-mt model id for this direction (it may not exist for every pair)."""
        return f"Helsinki-NLP/opus-mt-{self.source}-{self.target}"

    def nllb(self) -> tuple[str, str]:
        """(source, target) FLORES-200 codes for NLLB models; InputError for a language without one here."""
        missing = [c for c in (self.source, self.target) if c not in NLLB]
        if missing:
            raise InputError(f"no NLLB code known for {', '.join(missing)}; give --translator-src-lang and --translator-tgt-lang")
        return NLLB[self.source], NLLB[self.target]


BBSARD = LanguagePair("fr", "nl")
"""bBSARD's pair: what its sources load."""
UNRECORDED = BBSARD
"""The pair of a file that records none (a sidecar, a dataset record, a pushed task): every file
written before pairs existed was bBSARD's. The one place a record format's default pair is set."""
