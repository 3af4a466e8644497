"""Learn glossary rules from expert reviews, so one correction makes the audit flag every other
question with the same term error (docs/audit.md, "Learning from the experts").

From each non-correct verdict with a `corrected_nl`:

1. **What changed in the Dutch.** A token diff (difflib on simplemma lemmas, the tokenisation of
   audit/termmatch.py) of the translation against the expert's correction; each replaced run of at
   most `MAX_SPAN_TOKENS` content words gives the rejected rendering (the translation's) and the
   accepted one (the expert's). With the expert's error spans (error_spans.csv), only replaced runs
   that overlap a Dutch span are kept, and a French span names the French term directly. A run
   inside an accepted rendering of a glossary term of the question is widened to that rendering.
2. **Which French term it renders.** First the glossary: a glossary term of the French whose
   accepted or rejected renderings include either Dutch side. Otherwise co-occurrence alignment
   learned from the dataset's own FR-NL question pairs: the French lemma n-gram of this question
   with the highest Dice coefficient (over question pairs) with the rejected or accepted rendering —
   a translation system renders a term the same way across questions, so the term and its
   rendering co-occur — ties broken by co-occurrence count and then by relative position in the
   sentence (word order is close in French and Dutch).

Each rule becomes a glossary entry (the glossary's French -> Dutch entry format, which its reader
converts to a concept) whose rejection names its source review; rules that contradict the base glossary or another expert are reported, never merged.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd
import yaml

from bbsard_audit.base.contracts.audit import Layout
from bbsard_audit.base.contracts.error_spans import error_spans_spec
from bbsard_audit.base.contracts.learned import LEARNED_CONFIRMING, LEARNED_CONFLICTS, RankingModel
from bbsard_audit.base.contracts.verdicts import Verdicts
from bbsard_audit.base.errors import InputError
from bbsard_audit.base import languages
from bbsard_audit.base.languages import BBSARD
from bbsard_audit.base.contracts.table import FileRecord
from bbsard_audit.base.io import digest_of, write_sidecar, write_text
from bbsard_audit.base.untrusted import load_yaml

from . import ranking as review_ranking
from .calibration import calibrate, write_calibration
from .glossary import Glossary, GlossaryEntry, has_letter, parse_entry
from .glossary_mining import STOPWORDS, _ngrams
from .perror import MIN_POSITIVES, MIN_VERDICTS, enough
from .risk import RiskConfig
from .termmatch import LEMMAS, TermMatcher, Tokens, fold, lemma_key, longest_first, tokenize

PAIR = BBSARD
"""The one pair learning works on: its aligner and rules pair French terms with Dutch renderings
(the fr -> nl literals below are this pair's)."""
MAX_SPAN_TOKENS = 4
MAX_FR_NGRAM = 3
MIN_DICE = 0.1
# refit the risk weights, the ranking and p_error only with this many verdicts (and positives): fewer give
# noise, not weights; one threshold, p_error's (perror.enough), which the campaign simulator asks too
MIN_VERDICTS_FOR_WEIGHTS, MIN_POSITIVES_FOR_WEIGHTS = MIN_VERDICTS, MIN_POSITIVES
SHRINK = 5.0  # pseudo-reviews of the configured weight a flag's observed precision is shrunk towards
CONFLICT_COLUMNS = LEARNED_CONFLICTS.names
RULE_COLUMNS = ["fr", "accepted", "rejected", "id", "annotator", "source", "method", "score"]


@dataclass(frozen=True)
class TermRule:
    """French term -> the expert's Dutch rendering (accepted) instead of the translation's (rejected)."""

    fr: str
    accepted: str
    rejected: str
    id: int
    annotator: str
    method: str
    """How the French term was found: span, glossary or dice."""
    score: float

    @property
    def source(self) -> str:
        who = f" ({self.annotator})" if self.annotator else ""
        return f"expert review of question {self.id}{who}"


@dataclass(frozen=True)
class Conflict:
    rule: TermRule
    conflicts_with: str
    why: str

    def row(self) -> dict:
        return {"fr": self.rule.fr, "accepted": self.rule.accepted, "rejected": self.rule.rejected,
                "source": self.rule.source, "conflicts_with": self.conflicts_with, "why": self.why}


@dataclass
class LearnResult:
    rules: list[TermRule]
    """New rules kept (no conflict, not already in the base glossary), in question order."""
    conflicts: list[Conflict]
    unaligned: list[dict]
    """Corrections whose change could not be tied to a French term, or is grammar (for the sidecar)."""
    confirmations: list["Confirmation"] = field(default_factory=list)
    """Rules the base glossary already holds."""
    entries: list[dict] = field(default_factory=list)
    """The learned glossary's entries (YAML-ready)."""
    meta: dict = field(default_factory=dict)
    calibration: object | None = None
    weights: dict[str, float] | None = None
    ranking: RankingModel | None = None
    """The review ranking refitted from the verdicts (enough verdicts only)."""


@dataclass(frozen=True)
class Confirmation:
    """A learned rule the base glossary already holds: it confirms that entry, it adds nothing."""

    rule: TermRule
    entry: str

    def row(self) -> dict:
        return {"fr": self.rule.fr, "accepted": self.rule.accepted, "rejected": self.rule.rejected,
                "source": self.rule.source, "confirms": self.entry}


def _grammar(lang: str) -> tuple[frozenset[str], frozenset[str]]:
    """(pronouns, function words) of `lang`'s language pack, folded."""
    pack = languages.get(lang)
    return pack.folded("pronouns"), pack.folded("function_words")


def _grammar_only(tokens: Tokens, keep: Sequence[int], words: frozenset[str]) -> bool:
    return all(tokens.lemmas[i] in words or fold(tokens.surfaces[i]) in words for i in keep)


def not_a_term(rejected: str, accepted: str, translation: Tokens, correction: Tokens) -> str | None:
    """Why replacing `rejected` by `accepted` is a grammar or style edit, not a term rule (None when
    it may be one): punctuation only, a pronoun (person) change, function words only, or word order."""
    if not (has_letter(rejected) and has_letter(accepted)):
        return "punctuation or digits only"
    r, a = tokenize(rejected, "nl"), tokenize(accepted, "nl")
    if sorted(r.lemmas) == sorted(a.lemmas) or (set(r.lemmas) <= set(correction.lemmas)
                                                and set(a.lemmas) <= set(translation.lemmas)):
        return "word order (words moved, none replaced)"
    pronouns, function = _grammar("nl")
    diff_r = [i for i in range(len(r)) if r.lemmas[i] not in a.lemmas]
    diff_a = [i for i in range(len(a)) if a.lemmas[i] not in r.lemmas]
    if _grammar_only(r, diff_r, pronouns | function) and _grammar_only(a, diff_a, pronouns | function):
        if any(_grammar_only(t, [i], pronouns) for t, d in ((r, diff_r), (a, diff_a)) for i in d):
            return "pronoun or person change"
        return "function words only"
    return None


def not_a_french_term(term: str) -> str | None:
    """Why `term` cannot be a glossary term: no letter, or only pronouns and function words."""
    if not has_letter(term):
        return "the French term has no letter"
    toks = tokenize(term, "fr")
    pronouns, function = _grammar("fr")
    if _grammar_only(toks, range(len(toks)), pronouns | function | STOPWORDS["fr"]):
        return "the French term is a function word or pronoun"
    return None


def _content(tokens: Tokens, i: int) -> bool:
    return tokens.lemmas[i] not in STOPWORDS[tokens.lang] and len(tokens.surfaces[i]) > 1


class Aligner:
    """Dice alignment between French lemma n-grams and Dutch lemma n-grams over question pairs."""

    def __init__(self, pairs: Iterable[tuple[str, str]]):
        self._fr: dict[str, set[int]] = {}
        self._nl: dict[str, set[int]] = {}
        for i, (fr, nl) in enumerate(pairs):
            for key in _ngrams(fr, "fr", MAX_FR_NGRAM):
                self._fr.setdefault(key, set()).add(i)
            for key in _ngrams(nl, "nl", MAX_SPAN_TOKENS):
                self._nl.setdefault(key, set()).add(i)
        LEMMAS.flush()

    def dice(self, fr_key: str, nl_key: str) -> tuple[float, int]:
        a, b = self._fr.get(fr_key, set()), self._nl.get(nl_key, set())
        both = len(a & b)
        return (2.0 * both / (len(a) + len(b)) if a or b else 0.0), both

    def align(self, fr: str, nl_keys: Sequence[str], position: float) -> tuple[str, float] | None:
        """The French n-gram of `fr` best aligned with any of `nl_keys` (surface form, Dice)."""
        toks = tokenize(fr, "fr")
        grams = _ngrams(fr, "fr", MAX_FR_NGRAM)
        best, best_rank = None, None
        for key, surface in grams.items():
            scores = [self.dice(key, k) for k in nl_keys if k]
            if not scores:
                continue
            d, n = max(scores)
            where = _relative_position(toks, surface)
            rank = (d, n, -abs(where - position), -len(key))
            if best_rank is None or rank > best_rank:
                best, best_rank = (surface, d), rank
        if best is None or best[1] < MIN_DICE:
            return None
        return best


def _relative_position(tokens: Tokens, surface: str) -> float:
    first = tokenize(surface, tokens.lang).surfaces[:1]
    idx = tokens.surfaces.index(first[0]) if first and first[0] in tokens.surfaces else 0
    return idx / max(1, len(tokens) - 1)


def _trim(tokens: Tokens, start: int, end: int) -> tuple[int, int]:
    while start < end and not _content(tokens, start):
        start += 1
    while end > start and not _content(tokens, end - 1):
        end -= 1
    return start, end


def _text(tokens: Tokens, start: int, end: int) -> str:
    return tokens.text[tokens.spans[start][0]:tokens.spans[end - 1][1]].lower()


def _change_blocks(t: Tokens, c: Tokens) -> list[list[int]]:
    """Token ranges [i1, i2, j1, j2] that differ; changes separated only by function words are one
    change ('hof van beroep' -> 'rechtbank van eerste aanleg' is one rendering, not two)."""
    blocks: list[list[int]] = []
    gap_ok = False
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, t.lemmas, c.lemmas, autojunk=False).get_opcodes():
        if op == "equal":
            gap_ok = not any(_content(t, i) for i in range(i1, i2))
            continue
        if blocks and gap_ok:
            blocks[-1][1], blocks[-1][3] = i2, j2
        else:
            blocks.append([i1, i2, j1, j2])
        gap_ok = False
    return blocks


def _widen(t: Tokens, c: Tokens, block: tuple[int, int, int, int], terms: TermMatcher | None) -> tuple[int, int, int, int]:
    """The change widened to the whole term when it replaces part of one: an occurrence of `terms`
    in the correction strictly around the changed words, whose other words the translation shares
    ('feitelijke samenwoning' -> 'wettelijke samenwoning', not 'feitelijke' -> 'wettelijke': a rule on
    one word of a term is hidden by the term's longer glossary match, and the word alone recurs in
    the term's other renderings)."""
    i1, i2, j1, j2 = block
    if terms is None:
        return block
    for m in longest_first(terms.find(c)):
        left, right = j1 - m.start, m.end - j2
        if left < 0 or right < 0 or not left + right or i1 - left < 0 or i2 + right > len(t):
            continue
        if (t.lemmas[i1 - left:i1] == c.lemmas[m.start:j1] and t.lemmas[i2:i2 + right] == c.lemmas[j2:m.end]):
            return i1 - left, i2 + right, m.start, m.end
    return block


def changed_renderings(translation: str, correction: str, nl_spans: Sequence[tuple[int, int]] = (),
                       terms: TermMatcher | None = None) -> list[tuple[str, str, float]]:
    """(rejected, accepted, relative position) for each replaced run of content words; with
    `nl_spans` (character ranges in the translation) only the runs overlapping one of them; with
    `terms` (Dutch renderings of the question's glossary terms) a run inside one of them is widened
    to it (`_widen`)."""
    t, c = tokenize(translation, "nl"), tokenize(correction, "nl")
    out = []
    for i1, i2, j1, j2 in _change_blocks(t, c):
        i1, i2 = _trim(t, i1, i2)
        j1, j2 = _trim(c, j1, j2)
        i1, i2, j1, j2 = _widen(t, c, (i1, i2, j1, j2), terms)
        if not (0 < i2 - i1 <= MAX_SPAN_TOKENS and 0 < j2 - j1 <= MAX_SPAN_TOKENS):
            continue
        start, end = t.spans[i1][0], t.spans[i2 - 1][1]
        if nl_spans and not any(s < end and start < e for s, e in nl_spans):
            continue
        out.append((_text(t, i1, i2), _text(c, j1, j2), i1 / max(1, len(t) - 1)))
    return out


class _GlossaryIndex:
    """French glossary terms found in a question, with their entries' Dutch renderings by lemma key."""

    def __init__(self, glossary: Glossary):
        self.entries = {e.id: e for e in glossary.entries}
        self.fr = TermMatcher(((e.id, t) for e in glossary.entries for t in e.fr), "fr")
        self.accepted = {e.id: {lemma_key(t, "nl") for t in e.nl_accepted} for e in glossary.entries}
        self.rejected = {e.id: {lemma_key(r.term, "nl") for r in e.nl_rejected} for e in glossary.entries}
        self.by_fr_key: dict[str, list[str]] = {}
        for e in glossary.entries:
            for t in e.fr:
                self.by_fr_key.setdefault(lemma_key(t, "fr"), []).append(e.id)

    def align(self, fr: str, rejected: str, accepted: str) -> str | None:
        """The glossary term of `fr` whose renderings agree best with the change: the expert's
        rendering accepted (+2), the translation's rejected (+1), the translation's accepted (-2)
        — so 'bewindvoerder' -> 'schuldbemiddelaar' goes to 'médiateur de dettes', not to an
        'administrateur de biens' in the same question."""
        toks = tokenize(fr, "fr")
        acc, rej = lemma_key(accepted, "nl"), lemma_key(rejected, "nl")
        best, best_score = None, 0
        for m in self.fr.find(toks):
            a, r = self.accepted[m.key], self.rejected[m.key]
            score = 2 * (acc in a) + (rej in r) - 2 * (rej in a) - (acc in r)
            if {acc, rej} & (a | r) and (best is None or score > best_score):
                best, best_score = toks.text[toks.spans[m.start][0]:toks.spans[m.end - 1][1]].lower(), score
        return best

    def renderings(self, fr: str) -> TermMatcher:
        """The accepted Dutch renderings of the glossary terms found in the French `fr`."""
        found = {m.key for m in self.fr.find(tokenize(fr, "fr"))}
        return TermMatcher(((i, t) for i in sorted(found) for t in self.entries[i].nl_accepted), "nl")

    def entries_for(self, fr_term: str) -> list[GlossaryEntry]:
        return [self.entries[i] for i in self.by_fr_key.get(lemma_key(fr_term, "fr"), [])]


def read_spans(path: str | Path, questions: Mapping[int, tuple[str, str]], layout: Layout) -> pd.DataFrame:
    """error_spans.csv (its contract), every span checked against the audited (source, target) texts."""
    label = str(path)
    frame = error_spans_spec(layout).read(path)
    for row_no, row in zip(range(2, len(frame) + 2), frame.to_dict("records")):
        qid, start, end = int(row["id"]), int(row["start"]), int(row["end"])
        if qid not in questions:
            raise InputError("span for a question that is not in the audit", file=label, row=row_no, id=qid)
        text = questions[qid][layout.pair.index(row["side"])]
        if not 0 <= start < end <= len(text):
            raise InputError(f"span {start}:{end} is outside the {row['side']} question ({len(text)} characters)",
                             file=label, row=row_no, id=qid)
        if text[start:end] != row["text"]:
            raise InputError(f"span text {row['text']!r} does not match the question ({text[start:end]!r})",
                             file=label, row=row_no, id=qid)
    return frame


def derive_rules(questions: Mapping[int, tuple[str, str]], verdicts: pd.DataFrame,
                 spans: pd.DataFrame | None, glossary: Glossary, aligner: Aligner) -> tuple[list[TermRule], list[dict]]:
    """Candidate rules from every non-correct verdict with a correction (no conflict check yet)."""
    index = _GlossaryIndex(glossary)
    rules, unaligned = [], []
    for row in verdicts.itertuples(index=False):
        if row.verdict == "correct" or not row.corrected_target:
            continue
        fr, nl = questions[row.id]
        mine = spans[spans["id"] == row.id] if spans is not None and len(spans) else None
        nl_spans = [] if mine is None else [(s, e) for s, e in mine.loc[mine["side"] == "nl", ["start", "end"]].itertuples(index=False)]
        fr_spans = [] if mine is None else [str(t).lower() for t in mine.loc[mine["side"] == "fr", "text"]]
        changes = changed_renderings(nl, row.corrected_target, nl_spans, index.renderings(fr))
        if not changes:
            unaligned.append({"id": row.id, "why": "no replaced term in the correction"})
        translation, correction = tokenize(nl, "nl"), tokenize(row.corrected_target, "nl")
        for rejected, accepted, position in changes:
            note = {"id": row.id, "rejected": rejected, "accepted": accepted}
            why = not_a_term(rejected, accepted, translation, correction)
            found = None if why else _pick_fr(fr, rejected, accepted, position, fr_spans, index, aligner)
            if found is None:
                unaligned.append({**note, "why": why or "no French term aligns"})
                continue
            term, method, score = found
            why = not_a_french_term(term)
            if why:
                unaligned.append({**note, "fr": term, "why": why})
                continue
            rules.append(TermRule(term, accepted, rejected, row.id, row.annotator, method, round(score, 4)))
    return rules, unaligned


def _pick_fr(fr: str, rejected: str, accepted: str, position: float, fr_spans: Sequence[str],
             index: _GlossaryIndex, aligner: Aligner) -> tuple[str, str, float] | None:
    nl_keys = [lemma_key(rejected, "nl"), lemma_key(accepted, "nl")]
    if fr_spans:  # the expert marked the French term: take the marked span that aligns best
        scored = [(max(aligner.dice(lemma_key(s, "fr"), k)[0] for k in nl_keys), s) for s in fr_spans]
        score, span = max(scored)
        return span, "span", score
    term = index.align(fr, rejected, accepted)
    if term is not None:
        return term, "glossary", 1.0
    found = aligner.align(fr, nl_keys, position)
    return (found[0], "dice", found[1]) if found else None


def find_conflicts(rules: Sequence[TermRule], glossary: Glossary) -> tuple[list[TermRule], list[Conflict]]:
    """Split rules into kept ones and conflicts with the base glossary or between experts."""
    index = _GlossaryIndex(glossary)
    conflicts: list[Conflict] = []
    bad: set[int] = set()
    for i, r in enumerate(rules):
        acc, rej = lemma_key(r.accepted, "nl"), lemma_key(r.rejected, "nl")
        for e in index.entries_for(r.fr):
            if acc in index.rejected[e.id]:
                conflicts.append(Conflict(r, f"glossary entry {e.id}", f"accepts '{r.accepted}', which the glossary rejects"))
                bad.add(i)
            if rej in index.accepted[e.id]:
                conflicts.append(Conflict(r, f"glossary entry {e.id}", f"rejects '{r.rejected}', which the glossary accepts"))
                bad.add(i)
        for j, other in enumerate(rules):
            if j == i or lemma_key(other.fr, "fr") != lemma_key(r.fr, "fr"):
                continue
            if acc == lemma_key(other.rejected, "nl") or rej == lemma_key(other.accepted, "nl"):
                conflicts.append(Conflict(r, other.source, f"'{r.accepted}' vs '{other.accepted}' for '{r.fr}'"))
                bad.add(i)
    unique = list({(c.rule, c.conflicts_with, c.why): c for c in conflicts}.values())
    return [r for i, r in enumerate(rules) if i not in bad], unique


def split_confirming(rules: Sequence[TermRule], glossary: Glossary) -> tuple[list[TermRule], list[Confirmation]]:
    """New rules, and rules whose French term, accepted and rejected renderings a base entry already
    holds (they confirm that entry; reporting them as learned would claim a gain that is not there)."""
    index = _GlossaryIndex(glossary)
    new, confirming = [], []
    for r in rules:
        acc, rej = lemma_key(r.accepted, "nl"), lemma_key(r.rejected, "nl")
        entry = next((e.id for e in index.entries_for(r.fr)
                      if acc in index.accepted[e.id] and rej in index.rejected[e.id]), None)
        if entry is None:
            new.append(r)
        else:
            confirming.append(Confirmation(r, entry))
    return new, confirming


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", lemma_key(text, "fr")).strip("_") or "term"


def learned_entries(rules: Sequence[TermRule], glossary: Glossary) -> list[dict]:
    """One glossary entry per French term (YAML-ready dicts). The base glossary's accepted
    renderings of the same term are accepted too, so a correct synonym is never `term_missing`."""
    index = _GlossaryIndex(glossary)
    by_term: dict[str, list[TermRule]] = {}
    for r in rules:
        by_term.setdefault(lemma_key(r.fr, "fr"), []).append(r)
    entries = []
    for rs in by_term.values():
        base = [t for e in index.entries_for(rs[0].fr) for t in e.nl_accepted]
        accepted = list(dict.fromkeys([r.accepted for r in rs] + base))
        rejects, seen = [], set()
        for r in rs:
            if lemma_key(r.rejected, "nl") not in seen:
                seen.add(lemma_key(r.rejected, "nl"))
                # its findings name the rule and its review ("[learned rule ...]", Glossary.layered)
                rejects.append({"term": r.rejected, "kind": "wrong_concept",
                                "reason": f"the expert wrote '{r.accepted}'"})
        sources = list(dict.fromkeys(r.source for r in rs))
        entries.append({"id": f"learned_{_slug(rs[0].fr)}", "domain": "learned", "fr": [rs[0].fr],
                        "nl": accepted, "reject": rejects, "source": "; ".join(sources)})
    return entries


def to_glossary(entries: Sequence[dict], version: str, path: Path | None = None) -> Glossary:
    """The learned entries as a Glossary object (no file needed), read by the glossary file's reader."""
    label = str(path) if path else "learned glossary"
    return Glossary([parse_entry(e, label, row, learned=True) for row, e in enumerate(entries, start=1)],
                    version, path)


def entry_dict(entry: GlossaryEntry) -> dict:
    """A glossary entry in the YAML file's shape."""
    return {"id": entry.id, "domain": entry.domain, "fr": list(entry.fr), "nl": list(entry.nl_accepted),
            "reject": [{"term": r.term, "kind": r.kind, "reason": r.reason} for r in entry.nl_rejected],
            "source": entry.source}


LEARNED_HEADER = ("# Learned from expert reviews by `bbsard-audit audit learn` (docs/audit.md). Layer it on the\n"
                  "# shipped glossary with `bbsard-audit audit --learned FILE`.\n")


def glossary_yaml(entries: Sequence[dict], learned_from: Mapping[str, str] | None = None,
                  version: str | None = None, header: str = LEARNED_HEADER) -> str:
    """The glossary file format (audit/data/glossary.yaml), plus `learned_from` when given."""
    version = version or f"learned-{_dt.date.today().isoformat()}"
    top = {"version": version, **({"learned_from": dict(learned_from)} if learned_from is not None else {}),
           "entries": list(entries)}
    return header + yaml.safe_dump(top, allow_unicode=True, sort_keys=False, width=120)


def refit_weights(audit_csv: Path, verdicts_csv: Path, config: RiskConfig, n_verdicts: int):
    """audit calibrate's per-flag precision, shrunk towards the configured weight, as [weights];
    None when there are too few verdicts or positives to say anything."""
    if n_verdicts < MIN_VERDICTS_FOR_WEIGHTS:
        return None, None
    result = calibrate(audit_csv, verdicts_csv)
    if result.summary.n_positive < MIN_POSITIVES_FOR_WEIGHTS:
        return result, None
    soft = {rule.flag for rule in config.rules.values()}  # continuous signals: weighted in [signals.*]
    flags = result.table[(result.table["kind"] == "flag") & ~result.table["signal"].isin(soft)]
    weights = {}
    for row in flags.itertuples(index=False):
        prior = config.weights.get(row.signal, config.default_weight)
        tp = (row.precision if row.precision == row.precision else 0.0) * row.n_raised
        weights[row.signal] = round(min(0.95, max(0.05, (tp + SHRINK * prior) / (row.n_raised + SHRINK))), 3)
    return result, weights




def learn(audit_csv: str | Path, verdicts_csv: str | Path, spans_csv: str | Path | None = None,
          glossary: str | Path | None = None, config: str | Path | None = None) -> LearnResult:
    """Everything `audit learn` computes; nothing is written (see `write_learned`)."""
    audit_path, verdicts_path = Path(audit_csv), Path(verdicts_csv)
    if not audit_path.is_file():
        raise InputError("audit file not found", file=str(audit_path))
    layout = Layout.of(audit_path)
    if layout.pair != PAIR:
        raise InputError(f"`audit learn` learns {PAIR} term rules; this audit is {layout.pair}",
                         file=str(audit_path))
    audit = layout.audit.read(audit_path)
    questions = {int(i): (str(f), str(n)) for i, f, n in audit[["id", "question_fr", "question_nl"]].itertuples(index=False)}
    verdicts = Verdicts.read(verdicts_path, questions).frame()
    spans = read_spans(spans_csv, questions, layout) if spans_csv is not None else None
    base = Glossary.load(glossary)
    aligner = Aligner(questions.values())
    candidates, unaligned = derive_rules(questions, verdicts, spans, base, aligner)
    kept, conflicts = find_conflicts(candidates, base)
    rules, confirmations = split_confirming(kept, base)
    cfg = RiskConfig.load(config)
    calibration, weights = refit_weights(audit_path, verdicts_path, cfg, len(verdicts))
    n_legal = int((verdicts["verdict"] == "legal").sum())
    model = None
    if enough(len(verdicts), n_legal):
        model = review_ranking.fit(audit, verdicts)
    meta = {"audit": {"file": audit_path.name, "sha256": digest_of(audit_path)},
            "verdicts": {"file": verdicts_path.name, "sha256": digest_of(verdicts_path)},
            "spans": {"file": Path(spans_csv).name, "sha256": digest_of(Path(spans_csv))} if spans_csv else None,
            "base_glossary": {"version": base.version, "sha256": digest_of(Path(base.path)) if base.path else None},
            "n_verdicts": len(verdicts), "n_rules": len(rules), "n_confirming": len(confirmations),
            "confirming": [c.row() for c in confirmations], "n_conflicts": len(conflicts),
            "methods": {m: sum(r.method == m for r in rules) for m in ("span", "glossary", "dice")},
            "unaligned": unaligned, "weights_refit": weights is not None, "ranking_refit": model is not None}
    return LearnResult(rules, conflicts, unaligned, confirmations, learned_entries(rules, base), meta,
                       calibration, weights, model)


LEARN_OUTPUTS = ("learned_glossary.yaml", "learned_glossary.meta.json", "learned_conflicts.csv",
                 "learned_conflicts.meta.json", "learned_confirming.csv", "learned_confirming.meta.json")
"""What every `audit learn` writes (the ranking, weights and calibration files only with enough verdicts)."""


def write_learned(result: LearnResult, out: str | Path) -> list[Path]:
    """learned_glossary.yaml, learned_conflicts.csv, learned_confirming.csv (+ learned_ranking.json,
    learned_weights.toml and calibration files with enough verdicts), each with its sidecar."""
    out = Path(out)
    learned_from = {"audit": result.meta["audit"]["sha256"], "verdicts": result.meta["verdicts"]["sha256"]}
    glossary = write_text(out / "learned_glossary.yaml", glossary_yaml(result.entries, learned_from))
    written = [glossary, write_sidecar(glossary, files=[FileRecord.of(glossary, len(result.entries))], **result.meta,
                                       rules=[{c: getattr(r, c) for c in RULE_COLUMNS} for r in result.rules])]
    written.append(LEARNED_CONFLICTS.write(out / "learned_conflicts.csv",
                                           pd.DataFrame([c.row() for c in result.conflicts], columns=CONFLICT_COLUMNS),
                                           learned_from=learned_from))
    written.append(LEARNED_CONFIRMING.write(out / "learned_confirming.csv",
                                            pd.DataFrame([c.row() for c in result.confirmations],
                                                         columns=LEARNED_CONFIRMING.names),
                                            learned_from=learned_from))
    if result.ranking is not None:
        model = replace(result.ranking, learned_from=learned_from)
        path = out / "learned_ranking.json"
        written += [path, write_sidecar(path, files=[model.write(path)], learned_from=learned_from,
                                        n_verdicts=model.n_verdicts, n_positive=model.n_positive,
                                        prior_precision=model.prior_precision, explore_share=model.explore_share)]
    if result.weights:
        lines = ["# Risk weights refitted from expert verdicts by `audit learn` (per-flag precision,",
                 f"# shrunk towards the configured weight with {SHRINK:g} pseudo-reviews). Use: audit --config FILE",
                 "[weights]"] + [f"{k} = {v}" for k, v in sorted(result.weights.items())]
        weights = write_text(out / "learned_weights.toml", "\n".join(lines) + "\n")
        written += [weights, write_sidecar(weights, files=[FileRecord.of(weights, len(result.weights))],
                                           learned_from=learned_from, shrink=SHRINK,
                                           min_verdicts=MIN_VERDICTS_FOR_WEIGHTS)]
    if result.calibration is not None:
        written += write_calibration(result.calibration, out)
    return written
