"""Signal 3: Belgian legal terminology, checked against a curated French -> Belgian-Dutch glossary.

A French legal term has one right Dutch rendering in Belgian law (the word of the official Dutch
text of the code or decree); GPT-4o sometimes picks a wrong concept ('politierechter' for 'juge de
paix') or Netherlands usage ('kantonrechter'). Such a word silently moves the Dutch question away
from the articles it is labelled with. The shipped glossary is `audit/data/glossary.yaml`
(format and matching rules: docs/glossary.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal, Sequence, Union

import pandas as pd

from bbsard_audit.errors import InputError
from bbsard_audit.untrusted import load_yaml, nfc_data

from . import termmatch
from .findings import Finding, Span, spans_at
from .signal_cache import fingerprint
from .signals import Batch, Declared, SignalResult
from .termmatch import LEMMAS, TermMatcher, Tokens, lemma_key, longest_first, tokenize

SHIPPED = Path(__file__).parent / "data" / "glossary.yaml"
REJECTION_KINDS = ("wrong_concept", "netherlands")

FLAGS: dict[str, str] = {
    "term_missing": "A French glossary term is in the question but none of its accepted Belgian-Dutch "
                    "renderings is in the Dutch translation (and no known wrong rendering either).",
    "term_rejected": "A French glossary term is in the question, none of its accepted renderings is in the "
                     "Dutch, and a known wrong-concept rendering is (e.g. FR 'juge de paix' with NL "
                     "'politierechter').",
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
    id: str
    fr: tuple[str, ...]
    nl_accepted: tuple[str, ...]
    nl_rejected: tuple[Rejection, ...]
    domain: str
    source: str
    learned: bool = False
    """From a learned layer: findings name `source` (the expert review) in their reason."""


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
    path = Path(source)
    try:
        return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        raise InputError("glossary file not found", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"glossary file not readable ({exc.strerror})", file=str(path)) from None


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
        self._fr = TermMatcher(((e.id, t) for e in self.entries for t in e.fr), "fr")
        self._accepted = TermMatcher(((e.id, t) for e in self.entries for t in e.nl_accepted), "nl", "part")
        self._rejected = TermMatcher(((e.id, r.term) for e in self.entries for r in e.nl_rejected), "nl", "head")
        self._rejection = {(e.id, _plain(r.term)): r for e in self.entries for r in e.nl_rejected}

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

    def provenance(self) -> dict:
        """For sidecars: each layer by file name + sha256 (never a local path), and the entry count."""
        return {"version": self.version, "entries": len(self.entries),
                "layers": [asdict(layer) for layer in self.layers]}

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

    def check_pairs(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[list[Finding]], pd.DataFrame]:
        """One findings list per (French, Dutch) pair, plus numeric `gl_*` columns."""
        findings, rows = [], []
        for fr, nl in pairs:
            f, row = self.check_tokens(tokenize(fr, "fr"), tokenize(nl, "nl"))
            findings.append(f)
            rows.append(row)
        LEMMAS.flush()
        columns = pd.DataFrame(rows, columns=["gl_expected", "gl_matched", "gl_missing", "gl_rejected",
                                              "gl_non_belgian"])
        return findings, columns.astype("int64")

    def check_tokens(self, fr: Tokens, nl: Tokens) -> tuple[list[Finding], tuple[int, ...]]:
        expected = longest_first(self._fr.find(fr))
        expected_ids = list(dict.fromkeys(m.key for m in expected))
        fr_form = {m.key: m.term for m in reversed(expected)}
        rejected = self._rejected.find(nl)
        # a longer rejected word beats a shorter accepted part inside it: 'huurwaarborg' is not a
        # 'huur' (loyer), 'ontslagname' is not an 'ontslag' (licenciement)
        accepted_ids = {m.key for m in self._accepted.find(nl)
                        if not any(r.key == m.key and r.overlaps(m) and len(r.term) > len(m.term) for r in rejected)}
        # a rendering rejected for one entry is fine when it is the accepted rendering of another
        # entry the French also contains ('voogdij' is wrong for 'garde' but right for 'tutelle')
        legit_elsewhere = {_plain(t).lower() for i in expected_ids for t in self._by_id[i].nl_accepted}
        out: list[Finding] = []
        matched = missing = n_rejected = n_non_belgian = 0
        for entry_id in expected_ids:
            entry = self._by_id[entry_id]
            if entry_id in accepted_ids:
                matched += 1
                continue
            wrong = [m for m in rejected if m.key == entry_id
                     and self._rejection[(entry_id, m.term)].kind == "wrong_concept"
                     and m.term.lower() not in legit_elsewhere]
            expects = " / ".join(_plain(t) for t in entry.nl_accepted[:3])
            flag = "term_rejected" if wrong else "term_missing"
            spans = _spans("fr", fr, [m for m in expected if m.key == entry_id], flag) + _spans("nl", nl, wrong, flag)
            if wrong:
                n_rejected += 1
                r = self._rejection[(entry_id, wrong[0].term)]
                reason = (f"FR '{fr_form[entry_id]}' expects '{expects}'; NL has "
                          f"'{_surface(nl, wrong[0])}' ({r.reason})") + _learned(entry, r)
            else:
                missing += 1
                reason = f"FR '{fr_form[entry_id]}' expects '{expects}'; not found in NL" + _learned(entry)
            out.append(Finding(flag, reason, spans))
        reported: list = []
        for m in sorted(rejected, key=lambda m: m.start - m.end):  # longest first
            r = self._rejection[(m.key, m.term)]
            if r.kind != "netherlands" or m.term.lower() in legit_elsewhere or any(m.overlaps(o) for o in reported):
                continue
            reported.append(m)
            n_non_belgian += 1
            entry = self._by_id[m.key]
            belgian = " / ".join(_plain(t) for t in entry.nl_accepted[:2])
            out.append(Finding("non_belgian", f"NL '{_surface(nl, m)}' is Netherlands usage; Belgian law says "
                                              f"'{belgian}' ({r.reason})" + _learned(entry, r),
                               _spans("nl", nl, [m], "non_belgian")))
        return out, (len(expected_ids), matched, missing, n_rejected, n_non_belgian)


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
    reads = ("fr", "nl")

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
        g = self.glossary
        findings, columns = g.check_pairs(batch.pairs)
        return SignalResult(findings, columns, g.provenance())


def _read(path: Path) -> tuple[list[GlossaryEntry], str, Path, list[Layer]]:
    """Parse and validate a glossary file: (entries, version, path, [its layer])."""
    label = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("glossary file not found", file=label) from None
    except OSError as exc:
        raise InputError(f"not a readable YAML glossary ({exc})", file=label) from None
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
        entry = _parse_entry(item, label, row, learned)
        if entry.id in seen:
            raise InputError("duplicate entry id", file=label, row=row, id=entry.id)
        seen.add(entry.id)
        entries.append(entry)
    version = str(raw["version"])
    return entries, version, path, [Layer(path.name, hashlib.sha256(data).hexdigest(), version, len(entries))]


def _merge(entry: GlossaryEntry, learned: GlossaryEntry) -> GlossaryEntry:
    """`entry` plus the renderings of a learned entry on the same French term that it neither accepts
    nor rejects (the earlier layer wins; `audit learn` reports such conflicts). The added rejections
    keep the learned rule's name for their findings."""
    known = {lemma_key(t, "nl") for t in entry.nl_accepted} | {lemma_key(r.term, "nl") for r in entry.nl_rejected}
    accepted = tuple(t for t in learned.nl_accepted if lemma_key(t, "nl") not in known)
    rule = f"{learned.id} from {learned.source}"
    rejected = tuple(replace(r, learned_from=r.learned_from or rule)
                     for r in learned.nl_rejected if lemma_key(r.term, "nl") not in known)
    return replace(entry, nl_accepted=entry.nl_accepted + accepted, nl_rejected=entry.nl_rejected + rejected)


def _learned(entry: GlossaryEntry, rejection: Rejection | None = None) -> str:
    """A learned rule's findings name the rule and the review it was learned from: the rejection's
    rule when a learned rule merged it into this entry, else the entry's own when it is learned."""
    if rejection is not None and rejection.learned_from:
        return f" [learned rule {rejection.learned_from}]"
    return f" [learned rule {entry.id} from {entry.source}]" if entry.learned else ""


def _spans(side: Literal["fr", "nl"], tokens: Tokens, matches, flag: str) -> tuple[Span, ...]:
    return spans_at(side, tokens.original, [tokens.offsets(m.start, m.end) for m in matches], flag)


def _surface(tokens: Tokens, match) -> str:
    start, end = tokens.offsets(match.start, match.end)
    return tokens.text[start:end]


def _terms(value, label: str, row: int, entry_id, field: str, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or (required and not value) or not all(
            isinstance(v, str) and v.strip().lstrip("=") for v in value):
        raise InputError(f"`{field}` must be a {'non-empty ' if required else ''}list of terms",
                         file=label, row=row, id=entry_id)
    wordless = next((v for v in value if not has_letter(v)), None)
    if wordless is not None:
        raise InputError(f"`{field}` term {wordless!r} has no letter (a term is one or more words)",
                         file=label, row=row, id=entry_id)
    return tuple(v.strip() for v in value)


def _parse_entry(item, label: str, row: int, learned: bool = False) -> GlossaryEntry:
    if not isinstance(item, dict):
        raise InputError("an entry must be a mapping", file=label, row=row)
    entry_id = item.get("id")
    if not isinstance(entry_id, str) or not entry_id.strip():
        raise InputError("entry without an `id`", file=label, row=row)
    unknown = set(item) - {"id", "fr", "nl", "reject", "domain", "source", "note"}
    if unknown:
        raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}", file=label, row=row, id=entry_id)
    for field in ("domain", "source"):
        if not isinstance(item.get(field), str) or not item[field].strip():
            raise InputError(f"`{field}` is required", file=label, row=row, id=entry_id)
    rejections = []
    for r in item.get("reject") or []:
        if not isinstance(r, dict) or set(r) != {"term", "kind", "reason"}:
            raise InputError("each `reject` item needs exactly `term`, `kind`, `reason`",
                             file=label, row=row, id=entry_id)
        if r["kind"] not in REJECTION_KINDS:
            raise InputError(f"reject kind {r['kind']!r} is not one of {', '.join(REJECTION_KINDS)}",
                             file=label, row=row, id=entry_id)
        if not isinstance(r["term"], str) or not r["term"].strip() or not isinstance(r["reason"], str):
            raise InputError("reject `term` and `reason` must be text", file=label, row=row, id=entry_id)
        if not has_letter(r["term"]):
            raise InputError(f"reject term {r['term']!r} has no letter (a term is one or more words)",
                             file=label, row=row, id=entry_id)
        rejections.append(Rejection(r["term"].strip(), r["kind"], r["reason"].strip()))
    accepted = _terms(item.get("nl"), label, row, entry_id, "nl", True)
    clash = {_plain(a).lower() for a in accepted} & {_plain(r.term).lower() for r in rejections}
    if clash:
        raise InputError(f"term(s) both accepted and rejected: {', '.join(sorted(clash))}",
                         file=label, row=row, id=entry_id)
    return GlossaryEntry(
        id=entry_id.strip(),
        fr=_terms(item.get("fr"), label, row, entry_id, "fr", True),
        nl_accepted=accepted,
        nl_rejected=tuple(rejections),
        domain=item["domain"].strip(),
        source=item["source"].strip(),
        learned=learned,
    )
