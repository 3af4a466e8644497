"""Signal 3: Belgian legal terminology, checked against a curated glossary of legal concepts.

A French legal term has one right Dutch rendering in Belgian law (the word of the official Dutch
text of the code or decree); GPT-4o sometimes picks a wrong concept ('politierechter' for 'juge de
paix') or Netherlands usage ('kantonrechter'). Such a word silently moves the Dutch question away
from the articles it is labelled with. Each entry is a concept with its terms per language (and
the renderings wrong in a language), so the one glossary checks any pair of its languages: the
source terms trigger, the target terms are expected. A term can be accept-only in a language (a
generic or looser rendering, accepted but never a trigger), so each direction stays sound. The
shipped glossary is `audit/data/glossary.yaml` (format and matching rules: docs/glossary.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from bbsard_audit.base import languages
from bbsard_audit.base.contracts.files import read_bytes
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages.pair import LanguagePair, check_code
from bbsard_audit.base.untrusted import load_yaml, nfc_data

from . import termmatch
from .findings import Finding, Role, Span, spans_at
from .signal_cache import fingerprint
from .signals import Batch, Declared, SignalResult
from .termmatch import LEMMAS, Match, TermMatcher, Tokens, lemma_key, longest_first, tokenize

SHIPPED = Path(__file__).parent / "data" / "glossary.yaml"
REJECTION_KINDS = ("wrong_concept", "netherlands")

FLAGS: dict[str, str] = {
    "term_missing": "A French glossary term is in the question but none of its accepted Belgian-Dutch "
                    "renderings is in the Dutch translation (and no known wrong rendering either).",
    "term_rejected": "A French glossary term is in the question, none of its accepted renderings is in the "
                     "Dutch, and a known wrong-concept rendering is (e.g. FR 'juge de paix' with NL "
                     "'politierechter'); with a learned rejection, also when the accepted renderings do "
                     "not cover each occurrence of the term (once right, once wrong).",
    "non_belgian": "The Dutch uses a Netherlands-only legal word where Belgian law has its own term "
                   "(e.g. 'kantonrechter' for 'vrederechter'); fires whatever the French says.",
}


@dataclass(frozen=True)
class Rejection:
    """A Dutch rendering that is wrong for this French term, and why."""

    term: str
    kind: Literal["wrong_concept", "netherlands"]
    reason: str
    learned_from: str | None = None
    """`<rule id> from <source>` when a learned rule merged this rejection into an earlier layer's
    entry (`Glossary.layered`): its findings name that rule, as a learned entry's do."""


@dataclass(frozen=True)
class GlossaryEntry:
    """One legal concept: its accepted terms per language, the renderings wrong in a language, and
    where each language's terms come from. Any two of its languages make a checkable pair."""

    id: str
    terms: Mapping[str, tuple[str, ...]]
    """language code -> accepted terms (in the source language of a pair they are the triggers)."""
    rejects: Mapping[str, tuple[Rejection, ...]]
    """language code -> renderings wrong in that language (a pair's target-language ones count)."""
    domain: str
    sources: Mapping[str, str]
    """language code -> the text its terms come from (a Belgian law's official version, a review)."""
    concept_id: str | None = None
    """An IATE-style concept id where one is known; never guessed."""
    learned: bool = False
    """From a learned layer: findings name `source` (the expert review) in their reason."""
    accept_only: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """language code -> renderings accepted in that language that never trigger the entry when it
    is the source: generic words ('getrouwd', 'kosten') or looser phrasings ('marié') that are right
    as a translation of the concept but too common to demand the concept's term on the other side."""

    def triggers(self, lang: str) -> tuple[str, ...]:
        """The terms that, in the source language of a pair, make the entry expected."""
        quiet = {_plain(t).lower() for t in self.accept_only.get(lang, ())}
        return tuple(t for t in self.terms.get(lang, ()) if _plain(t).lower() not in quiet)

    def accepted(self, lang: str) -> tuple[str, ...]:
        """The renderings accepted in the target language of a pair: the terms (in their order, which
        findings quote), then the accept-only ones not among them."""
        terms = self.terms.get(lang, ())
        known = {_plain(t).lower() for t in terms}
        return terms + tuple(t for t in self.accept_only.get(lang, ()) if _plain(t).lower() not in known)

    @property
    def source(self) -> str:
        """The entry's citations, each once (a shipped fr/nl entry cites one bilingual Belgian text)."""
        return "; ".join(dict.fromkeys(self.sources.values()))

    # bBSARD's pair (fr -> nl), which learning, mining and the self-test work on
    @property
    def fr(self) -> tuple[str, ...]:
        return self.triggers("fr")

    @property
    def nl_accepted(self) -> tuple[str, ...]:
        return self.accepted("nl")

    @property
    def nl_rejected(self) -> tuple[Rejection, ...]:
        return self.rejects.get("nl", ())


@dataclass(frozen=True)
class Layer:
    """One glossary file (or in-memory glossary) of a layered glossary, named by content hash."""

    name: str
    sha256: str
    version: str
    entries: int


GlossarySource = Union[str, Path, "Glossary"]


def source_digest(source: GlossarySource) -> str:
    """Content hash of a glossary file or object, without parsing a file: the glossary signal's
    cache signature, so a changed (or learned) layer recomputes only the glossary signal."""
    if isinstance(source, Glossary):
        return "glossary:" + source.digest
    return "file:" + hashlib.sha256(read_bytes(Path(source))).hexdigest()  # a FIFO is refused, never waited on


def _plain(term: str) -> str:
    return term.lstrip("=")


_LETTER = re.compile(r"[^\W\d_]")


def has_letter(text: str) -> bool:
    """A term is words: '?' or '12' would match nothing (and break the matcher's index)."""
    return _LETTER.search(text) is not None


class Glossary:
    """The curated entries plus matchers built once, so checking a batch tokenises each text once."""

    def __init__(self, entries: Sequence[GlossaryEntry], version: str, path: Path | None = None,
                 layers: Sequence[Layer] | None = None):
        self.entries = list(entries)
        self.version = version
        self.path = path
        self.digest = hashlib.sha256(json.dumps([version, [asdict(e) for e in self.entries]],
                                                ensure_ascii=False).encode()).hexdigest()
        self.layers = list(layers) if layers is not None else [
            Layer(path.name if path else "in-memory", self.digest, version, len(self.entries))]
        self._by_id = {e.id: e for e in self.entries}
        self._pairs: dict[tuple[str, str], _PairMatcher] = {}

    def coverage(self) -> dict[str, int]:
        """Language code -> how many entries have terms in it (any two make a checkable pair)."""
        counts: dict[str, int] = {}
        for e in self.entries:
            for lang in e.terms:
                counts[lang] = counts.get(lang, 0) + 1
        return dict(sorted(counts.items()))

    def unavailable(self, pair: LanguagePair) -> list[str]:
        """'not available for <lang> (...)' for each language of `pair` no entry has terms in: the
        glossary cannot check that pair, and says so instead of passing every row."""
        have = self.coverage()
        return [f"not available for {lang} (the glossary has no {lang} terms)" for lang in dict.fromkeys(pair)
                if lang not in have]

    def matcher(self, pair: LanguagePair) -> "_PairMatcher":
        """The matchers of one (source, target) pair, built once per glossary."""
        if pair not in self._pairs:
            self._pairs[pair] = _PairMatcher(self.entries, *pair)
        return self._pairs[pair]

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, path: Path | str | None = None) -> "Glossary":
        """Read a glossary YAML file (None = the shipped one); any bad entry -> InputError naming it.

        Entries of a file with a top-level `learned_from` (written by `audit learn`) are learned.
        """
        glossary = cls(*_read(Path(path) if path is not None else SHIPPED))
        LEMMAS.flush()
        return glossary


    @classmethod
    def layered(cls, sources: Sequence[GlossarySource]) -> "Glossary":
        """One glossary from layers (files or Glossary objects), e.g. the shipped one + learned files.

        Entries of every layer after the first are learned (their findings name their rule and its
        source). A learned entry whose French term an earlier layer already has is merged into that
        entry (`_merge`): two entries on the same French words would hide each other, as matching
        keeps one entry per span. Any other is appended; its id must be new (an InputError
        otherwise): layers add, never redefine.
        """
        if not sources:
            raise InputError("a layered glossary needs at least one glossary")
        if len(sources) == 1:
            return sources[0] if isinstance(sources[0], Glossary) else cls.load(sources[0])
        # parsed, not built: the matchers are built once, for the merged entries
        parsed = [(s.entries, s.version, s.path, s.layers) if isinstance(s, Glossary) else _read(Path(s))
                  for s in sources]
        entries: list[GlossaryEntry] = []
        owner: dict[str, str] = {}
        by_fr: dict[str, int] = {}  # French term (lemmas) -> the first entry that has it
        for k, (layer_entries, _, path, layers) in enumerate(parsed):
            label = str(path) if path else layers[0].name
            for row, e in enumerate(layer_entries, start=1):
                keys = {lemma_key(t, "fr") for t in e.fr}
                targets = sorted({by_fr[key] for key in keys if key in by_fr}) if k else []
                for i in targets:
                    entries[i] = _merge(entries[i], e)
                if targets:
                    continue
                if e.id in owner:
                    raise InputError(f"entry id already defined in {owner[e.id]} (a layer may add entries, "
                                     f"not redefine them)", file=label, row=row, id=e.id)
                owner[e.id] = label
                for t in e.fr:
                    by_fr.setdefault(lemma_key(t, "fr"), len(entries))
                entries.append(e if e.learned or k == 0 else replace(e, learned=True))
        glossary = cls(entries, "+".join(p[1] for p in parsed), None, [layer for p in parsed for layer in p[3]])
        LEMMAS.flush()
        return glossary

    def provenance(self, pair: LanguagePair) -> dict:
        """For sidecars: each layer by file name + sha256 (never a local path), and the entry count;
        for a pair a record names (not `implicit`), the pair and how many entries have terms in both of
        its languages (the record of the implicit pair stays as records written before pairs)."""
        out = {"version": self.version, "entries": len(self.entries),
               "layers": [asdict(layer) for layer in self.layers]}
        if not pair.implicit:
            out["pair"] = "->".join(pair)
            out["entries_for_pair"] = sum(all(e.terms.get(lang) for lang in pair) for e in self.entries)
        return out

    def domains(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for e in self.entries:
            counts[e.domain] = counts.get(e.domain, 0) + 1
        return dict(sorted(counts.items()))

    def swaps(self) -> list[tuple[str, str, str]]:
        """(entry id, accepted Dutch term, wrong-concept Dutch term) for every wrong-concept rejection:
        the 'legal term swapped for a wrong one' errors a selftest can inject into correct Dutch."""
        return [(e.id, _plain(e.nl_accepted[0]), r.term) for e in self.entries for r in e.nl_rejected
                if r.kind == "wrong_concept"]

    # ------------------------------------------------------------------ checking

    def check_pairs(self, pairs: Sequence[tuple[str, str]], pair: LanguagePair
                    ) -> tuple[list[list[Finding]], pd.DataFrame]:
        """One findings list per (source, target) text pair, plus numeric `gl_*` columns."""
        matcher = self.matcher(pair)
        findings, rows = [], []
        for src, tgt in pairs:
            f, row = matcher.check(tokenize(src, pair[0]), tokenize(tgt, pair[1]))
            findings.append(f)
            rows.append(row)
        LEMMAS.flush()
        return findings, pd.DataFrame(rows, columns=list(COLUMNS)).astype("int64")


COLUMNS = ("gl_expected", "gl_matched", "gl_missing", "gl_rejected", "gl_non_belgian")


def _mode(lang: str, compound: termmatch.Compound) -> termmatch.Compound:
    """Compound matching only in a language whose pack has compounds (Dutch, German)."""
    return compound if languages.get(lang).compounds else "exact"


class _PairMatcher:
    """One direction of the glossary: the source-language terms trigger an entry, its target-language
    accepted terms are expected there and its target-language rejections are wrong there."""

    def __init__(self, entries: Sequence[GlossaryEntry], source: str, target: str):
        self.source, self.target = source, target
        self._src, self._tgt = source.upper(), target.upper()
        usable = [e for e in entries if e.triggers(source) and e.accepted(target)]
        self._by_id = {e.id: e for e in usable}
        self._triggers = TermMatcher(((e.id, t) for e in usable for t in e.triggers(source)), source,
                                     _mode(source, "head"))
        self._accepted = TermMatcher(((e.id, t) for e in usable for t in e.accepted(target)), target,
                                     _mode(target, "part"))
        rejects = [(e.id, r) for e in usable for r in e.rejects.get(target, ())]
        self._rejected = TermMatcher(((i, r.term) for i, r in rejects), target, _mode(target, "head"))
        self._rejection = {(i, _plain(r.term)): r for i, r in rejects}
        # an entry's accept-only source words never trigger it, not even through a trigger's lemma:
        # simplemma gives 'indexed' the lemma 'index', and the noun 'index' ('indexes') is no indexation
        self._quiet = {e.id: {lemma_key(t, source) for t in e.accept_only.get(source, ())} for e in usable}

    def accepted(self, entry: GlossaryEntry) -> tuple[str, ...]:
        return entry.accepted(self.target)

    def _generic(self, source: Tokens, m: Match) -> bool:
        """The trigger matched only by its lemma, and that lemma is an accept-only (generic) word of
        the entry: 'index' and 'indexes' are not the trigger 'indexed'."""
        quiet = self._quiet[m.key]
        return bool(quiet) and " ".join(source.lemmas[m.start:m.end]) in quiet and \
            source.surfaces[m.start:m.end] != tokenize(m.term, self.source).surfaces

    def named(self, entry: GlossaryEntry) -> tuple[str, ...]:
        """The renderings a finding names: the entry's target terms (accept-only ones only when it has
        no other), so 'expects' quotes the concept's term, not a looser rendering it also accepts."""
        return entry.terms.get(self.target) or self.accepted(entry)

    def check(self, source: Tokens, target: Tokens) -> tuple[list[Finding], tuple[int, ...]]:
        """Findings and counts for one pair."""
        found = [m for m in self._triggers.find(source) if not self._generic(source, m)]
        expected = longest_first(found)
        expected_ids = list(dict.fromkeys(m.key for m in expected))
        source_form = {m.key: m.term for m in reversed(expected)}
        # a source term that several entries share (Dutch 'familierechter': the family court and its
        # judge) may render any of them: the others are its alternatives, and it is rendered when one
        # of them is. Only the same term counts: 'verhuurder' has no alternative in the 'huurder' inside it.
        chosen = {(m.start, m.end): m for m in expected}
        alternatives: dict[str, set[str]] = {}
        for m in found:
            c = chosen.get((m.start, m.end))
            if c is not None and m.key != c.key and lemma_key(m.term, self.source) == lemma_key(c.term, self.source):
                alternatives.setdefault(c.key, set()).add(m.key)
        rejected = self._rejected.find(target)
        # a longer rejected word beats a shorter accepted part inside it: 'huurwaarborg' is not a
        # 'huur' (loyer), 'ontslagname' is not an 'ontslag' (licenciement)
        accepted = [m for m in self._accepted.find(target)
                    if not any(r.key == m.key and r.overlaps(m) and len(r.term) > len(m.term) for r in rejected)]
        accepted_ids = {m.key for m in accepted}
        # a rendering rejected for one entry is fine when it is the accepted rendering of another
        # entry the source contains ('voogdij' is wrong for 'garde' but right for 'tutelle')
        readings = {i: [i, *sorted(alternatives.get(i, ()))] for i in expected_ids}
        legit_elsewhere = {_plain(t).lower() for ids in readings.values() for i in ids
                           for t in self.accepted(self._by_id[i])}
        out: list[Finding] = []
        matched = missing = n_rejected = 0
        for entry_id in expected_ids:
            entry = self._by_id[entry_id]
            wrong = [m for m in rejected if m.key == entry_id
                     and self._rejection[(entry_id, m.term)].kind == "wrong_concept"
                     and m.term.lower() not in legit_elsewhere]
            learned = [m for m in wrong if entry.learned or self._rejection[(entry_id, m.term)].learned_from]
            if accepted_ids.intersection(readings[entry_id]) and not (
                    learned and _unrendered(entry_id, readings, expected, accepted)):
                matched += 1
                continue
            expects = " / ".join(_plain(t) for t in self.named(entry)[:3]) + "".join(
                f"' or '{_plain(self.named(self._by_id[i])[0])}" for i in readings[entry_id][1:])
            flag = "term_rejected" if wrong else "term_missing"
            spans = (_spans("source", source, [m for m in expected if m.key == entry_id], flag)
                     + _spans("target", target, wrong, flag))
            if wrong:
                n_rejected += 1
                r = self._rejection[(entry_id, wrong[0].term)]
                reason = (f"{self._src} '{source_form[entry_id]}' expects '{expects}'; {self._tgt} has "
                          f"'{_surface(target, wrong[0])}' ({r.reason})") + _learned(entry, r)
            else:
                missing += 1
                reason = (f"{self._src} '{source_form[entry_id]}' expects '{expects}'; not found in {self._tgt}"
                          + _learned(entry))
            out.append(Finding(flag, reason, spans))
        non_belgian = self._non_belgian(target, rejected, legit_elsewhere)
        out += non_belgian
        return out, (len(expected_ids), matched, missing, n_rejected, len(non_belgian))

    def _non_belgian(self, target: Tokens, rejected: Sequence[Match], legit_elsewhere: set[str]) -> list[Finding]:
        """One finding per Netherlands rendering in the target (longest first, never two overlapping),
        unless it is the accepted rendering of an entry the source contains."""
        out: list[Finding] = []
        reported: list = []
        for m in sorted(rejected, key=lambda m: m.start - m.end):  # longest first
            r = self._rejection[(m.key, m.term)]
            if r.kind != "netherlands" or m.term.lower() in legit_elsewhere or any(m.overlaps(o) for o in reported):
                continue
            reported.append(m)
            entry = self._by_id[m.key]
            belgian = " / ".join(_plain(t) for t in self.named(entry)[:2])
            out.append(Finding("non_belgian", f"{self._tgt} '{_surface(target, m)}' is Netherlands usage; Belgian law "
                                              f"says '{belgian}' ({r.reason})" + _learned(entry, r),
                               _spans("target", target, [m], "non_belgian")))
        return out


def _unrendered(entry_id: str, readings: dict[str, list[str]], expected: Sequence[Match],
                accepted: Sequence[Match]) -> bool:
    """Whether some occurrence of the entry's source term has no accepted rendering of its own: fewer
    accepted target occurrences than source ones, an occurrence another term of the question also
    accepts not counted ('wettelijk samenwonend' renders 'cohabitants légaux' beside a 'cohabitation
    légale' rendered 'feitelijke samenwoning'). Asked only when a learned rejection is present (the
    rendering an expert rejected for this term in these translations): the term once right and once
    wrong is then an error, not a match. A shipped rejection keeps "any accepted rendering matches":
    its reason can hold for the term but not for a longer phrase around it ('samenlevingscontract'
    is wrong for 'cohabitation légale', right for 'convention de cohabitation légale', question 429)."""
    mine = set(readings[entry_id])
    others = {k for i in readings if i != entry_id for k in readings[i]} - mine
    own = [m for m in longest_first([m for m in accepted if m.key in mine])
           if not any(o.key in others and o.overlaps(m) for o in accepted)]
    return len(own) < sum(m.key == entry_id for m in expected)


def load_learned(path: str | Path) -> Glossary:
    """A learned glossary file (the glossary format; unlike the base, its `entries` may be empty)."""
    label = str(path)
    raw = load_yaml(path, "learned glossary", unreadable="not a glossary")
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list) or "version" not in raw:
        raise InputError("not a glossary: needs top-level `version` and an `entries` list", file=label)
    return Glossary.load(path) if raw["entries"] else Glossary([], str(raw["version"]), Path(path))


def glossary_sources(glossary: GlossarySource | Sequence[GlossarySource] | None) -> list[GlossarySource]:
    """None -> [the shipped glossary]; one file or Glossary -> [it]; a list stays the list of layers."""
    if glossary is None:
        return [SHIPPED]
    if isinstance(glossary, (str, Path, Glossary)):
        return [glossary]
    sources = list(glossary)
    if not sources:
        raise InputError("a layered glossary needs at least one glossary")
    return sources


class GlossarySignal(Declared):
    """The glossary as an audit signal. Its cache signature hashes the content of every layer, so
    a re-audit with a changed or newly learned layer recomputes this signal only; the glossary
    itself is parsed only when its result is not cached."""

    name = "glossary"
    flags = FLAGS
    categories = {"term_missing": "terminology", "term_rejected": "terminology", "non_belgian": "terminology"}
    weights = {"term_rejected": 0.85, "non_belgian": 0.6, "term_missing": 0.5}
    reads = ("source", "target")
    context = ("gl_expected", "gl_matched")

    def __init__(self, glossary: GlossarySource | Sequence[GlossarySource] | None = None) -> None:
        self.sources = glossary_sources(glossary)
        self._glossary: Glossary | None = None

    @property
    def glossary(self) -> Glossary:
        if self._glossary is None:
            self._glossary = Glossary.layered(self.sources)
        return self._glossary

    def signature(self) -> str:
        return fingerprint([Path(__file__), Path(termmatch.__file__)], ("simplemma",),
                           [source_digest(s) for s in self.sources])

    def score(self, batch: Batch) -> SignalResult:
        g, pair = self.glossary, batch.pair
        meta = g.provenance(pair)
        unavailable = g.unavailable(pair)
        if unavailable:  # never a silent pass: the sidecar says the glossary did not run
            n = len(batch)
            meta["checks_unavailable"] = [f"{self.name}: {note}" for note in unavailable]
            return SignalResult([[] for _ in range(n)], pd.DataFrame(np.nan, index=range(n), columns=list(COLUMNS)), meta)
        findings, columns = g.check_pairs(batch.pairs, pair)
        return SignalResult(findings, columns, meta)


def _read(path: Path) -> tuple[list[GlossaryEntry], str, Path, list[Layer]]:
    """Parse and validate a glossary file: (entries, version, path, [its layer])."""
    label = str(path)
    data = read_bytes(path)
    raw = nfc_data(load_yaml(path, "glossary", data=data))  # terms match NFC questions
    if not isinstance(raw, dict) or "entries" not in raw or "version" not in raw:
        raise InputError("a glossary needs top-level `version` and `entries`", file=label)
    unknown = set(raw) - {"version", "entries", "learned_from"}
    if unknown:
        raise InputError(f"unknown top-level key(s) {', '.join(sorted(map(str, unknown)))}", file=label)
    if not isinstance(raw["entries"], list) or not raw["entries"]:
        raise InputError("`entries` must be a non-empty list", file=label)
    learned = "learned_from" in raw
    entries, seen = [], set()
    for row, item in enumerate(raw["entries"], start=1):
        entry = parse_entry(item, label, row, learned)
        if entry.id.casefold() in seen:  # `Bail` and `bail` would be one concept checked (and flagged) twice
            raise InputError("duplicate entry id (ids differing only in case are one id)", file=label, row=row,
                             id=entry.id)
        seen.add(entry.id.casefold())
        entries.append(entry)
    version = str(raw["version"])
    return entries, version, path, [Layer(path.name, hashlib.sha256(data).hexdigest(), version, len(entries))]


def _merge(entry: GlossaryEntry, learned: GlossaryEntry) -> GlossaryEntry:
    """`entry` plus the terms and rejections of a learned entry on the same French term that it
    neither accepts nor rejects in their language (the earlier layer wins; `audit learn` reports such
    conflicts). The added rejections keep the learned rule's name for their findings."""
    rule = f"{learned.id} from {learned.source}"
    terms, rejects = dict(entry.terms), dict(entry.rejects)
    for lang in dict.fromkeys([*learned.terms, *learned.rejects]):
        known = {lemma_key(t, lang) for t in terms.get(lang, ())} | {lemma_key(r.term, lang) for r in rejects.get(lang, ())}
        added = tuple(t for t in learned.terms.get(lang, ()) if lemma_key(t, lang) not in known)
        if added:
            terms[lang] = terms.get(lang, ()) + added
        wrong = tuple(replace(r, learned_from=r.learned_from or rule)
                      for r in learned.rejects.get(lang, ()) if lemma_key(r.term, lang) not in known)
        if wrong:
            rejects[lang] = rejects.get(lang, ()) + wrong
    return replace(entry, terms=terms, rejects=rejects)


def _learned(entry: GlossaryEntry, rejection: Rejection | None = None) -> str:
    """A learned rule's findings name the rule and the review it was learned from: the rejection's
    rule when a learned rule merged it into this entry, else the entry's own when it is learned."""
    if rejection is not None and rejection.learned_from:
        return f" [learned rule {rejection.learned_from}]"
    return f" [learned rule {entry.id} from {entry.source}]" if entry.learned else ""


def _spans(side: Role, tokens: Tokens, matches, flag: str) -> tuple[Span, ...]:
    return spans_at(side, tokens.original, [tokens.offsets(m.start, m.end) for m in matches], flag)


def _surface(tokens: Tokens, match) -> str:
    start, end = tokens.offsets(match.start, match.end)
    return tokens.text[start:end]


def _terms(value, fail, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip().lstrip("=") for v in value):
        raise fail(f"`{field}` must be a non-empty list of terms")
    wordless = next((v for v in value if not has_letter(v)), None)
    if wordless is not None:
        raise fail(f"`{field}` term {wordless!r} has no letter (a term is one or more words)")
    return tuple(v.strip() for v in value)


LEGACY_FIELDS = {"id", "fr", "nl", "reject", "domain", "source", "note"}
"""A French -> Dutch entry of the first format (still read: every file that worked keeps working)."""
FIELDS = {"id", "domain", "concept_id", "sources", "terms", "accept_only", "reject", "note"}


def parse_entry(item, label: str, row: int, learned: bool = False) -> GlossaryEntry:
    """One entry of either format: a concept (`terms`, `accept_only`, `reject` and `sources` per
    language) or a French -> Dutch entry (`fr`, `nl`, a `reject` list of Dutch renderings, one
    `source`), converted."""
    if not isinstance(item, dict):
        raise InputError("an entry must be a mapping", file=label, row=row)
    entry_id = item.get("id")
    if not isinstance(entry_id, str) or not entry_id.strip():
        raise InputError("entry without an `id`", file=label, row=row)
    legacy = "terms" not in item
    unknown = set(item) - (LEGACY_FIELDS if legacy else FIELDS)
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}", file=label, row=row, id=entry_id)
    fail = lambda message: InputError(message, file=label, row=row, id=entry_id)  # noqa: E731
    if not isinstance(item.get("domain"), str) or not item["domain"].strip():
        raise fail("`domain` is required")
    if legacy:
        if not isinstance(item.get("source"), str) or not item["source"].strip():
            raise fail("`source` is required")
        terms = {"fr": _terms(item.get("fr"), fail, "fr"), "nl": _terms(item.get("nl"), fail, "nl")}
        rejects = {"nl": _rejections(item.get("reject"), fail, "reject", "nl")}
        sources = {"fr": item["source"].strip(), "nl": item["source"].strip()}
        concept_id, accept_only = None, {}
    else:
        raw_terms = item["terms"]
        if not isinstance(raw_terms, dict) or len(raw_terms) < 2:
            raise fail("`terms` must map two or more language codes to their terms")
        terms = {_code(lang, fail, "terms"): _terms(v, fail, f"terms.{lang}") for lang, v in raw_terms.items()}
        raw_reject = item.get("reject") or {}
        if not isinstance(raw_reject, dict):
            raise fail("`reject` must map language codes to lists of {term, kind, reason}")
        rejects = {_code(lang, fail, "reject"): _rejections(v, fail, f"reject.{lang}", lang)
                   for lang, v in raw_reject.items()}
        sources = item.get("sources")
        if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
            raise fail("`sources` must map each language of `terms` to the text its terms come from")
        sources = {_code(lang, fail, "sources"): v.strip() for lang, v in sources.items()}
        raw_quiet = item.get("accept_only") or {}
        if not isinstance(raw_quiet, dict):
            raise fail("`accept_only` must map language codes to lists of terms")
        accept_only = {_code(lang, fail, "accept_only"): _terms(v, fail, f"accept_only.{lang}")
                       for lang, v in raw_quiet.items()}
        for field, langs in (("reject", rejects), ("accept_only", accept_only), ("sources", sources)):
            stray = [lang for lang in langs if lang not in terms]
            if stray:
                raise fail(f"`{field}` has {', '.join(stray)}, which `terms` has no terms in")
        unsourced = [lang for lang in terms if lang not in sources]
        if unsourced:
            raise fail(f"`sources` has no source for the {', '.join(unsourced)} terms")
        concept_id = item.get("concept_id")
        if concept_id is not None and (not isinstance(concept_id, str) or not concept_id.strip()):
            raise fail("`concept_id` must be text (leave it out when no id is known)")
    for lang, wrong in rejects.items():
        clash = ({_plain(a).lower() for a in terms[lang] + accept_only.get(lang, ())}
                 & {_plain(r.term).lower() for r in wrong})
        if clash:
            raise fail(f"term(s) both accepted and rejected: {', '.join(sorted(clash))}")
    return GlossaryEntry(id=entry_id.strip(), terms=terms, rejects={k: v for k, v in rejects.items() if v},
                         domain=item["domain"].strip(), sources=sources,
                         concept_id=concept_id.strip() if concept_id else None, learned=learned,
                         accept_only=accept_only)


def _code(lang, fail, field: str) -> str:
    """A language code with a language pack: its terms are tokenised and lemmatised by that pack."""
    try:
        languages.get(check_code(lang))
    except InputError as exc:
        raise fail(f"`{field}`: {exc.message}") from None
    return lang


def _rejections(value, fail, field: str, lang: str) -> tuple[Rejection, ...]:
    out = []
    if value is not None and not isinstance(value, list):
        raise fail(f"`{field}` must be a list of {{term, kind, reason}}")
    for r in value or []:
        if not isinstance(r, dict) or set(r) != {"term", "kind", "reason"}:
            raise fail(f"each `{field}` item needs exactly `term`, `kind`, `reason`")
        if r["kind"] not in REJECTION_KINDS:
            raise fail(f"reject kind {r['kind']!r} is not one of {', '.join(REJECTION_KINDS)}")
        if r["kind"] == "netherlands" and lang != "nl":
            raise fail(f"reject kind netherlands is a Dutch rejection (under `reject.nl`), not {lang}")
        if not isinstance(r["term"], str) or not r["term"].strip() or not isinstance(r["reason"], str):
            raise fail("reject `term` and `reason` must be text")
        if not has_letter(r["term"]):
            raise fail(f"reject term {r['term']!r} has no letter (a term is one or more words)")
        out.append(Rejection(r["term"].strip(), r["kind"], r["reason"].strip()))
    return tuple(out)
