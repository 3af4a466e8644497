"""LLM leftovers: what an LLM translator said about its work, left in its translation, wherever it
sits and in any pack language (an English preface on a Dutch document is the commonest case).

Shared by the corpus check `doc_meta_text` and the question check `leftover_text`. The cue words
are each language pack's `meta_text` section (docs/languages.md; `*` = up to five words, `word*` =
any ending), all packs at once; the rules find segments, each with its character span:

- chat / refusal: a `chat` phrase ("let me know"), an `apology` with a `service` word later in its
  sentence ("I'm sorry, but I can't help with that"), an `anywhere` phrase; the span is the
  enclosing bracket, else line, else sentence;
- note: a `notes` head ("Note", "Opmerking van de vertaler", "N.B.") opening a bracket, a line or a
  sentence, then ':', '-', '.' (a multi-word head: a space); or a bracket with a `translation` word,
  or with two `talk` cues, or one and a first-person or language word; the span runs to the
  bracket's or the paragraph's end, or to a sentence run on without its mark ('... rendered as
  'notice period' Que doivent ...': a capitalised word that opens sentences, after a word);
- preface: the first line, up to its first ':', that names the translation or a language, or opens
  with a `preface` word ("Sure", "Hier is"), and ends with ':' or a line break; an `at_start`
  phrase at a line start;
- foreign paragraph (documents only): a paragraph of a text with several, whose function words are
  another pack language's, not found in the source, with a cue or at either end.

A leftover is compared with the source: the source holding a leftover of the same kind (a quoted
"Note:" translated with the rest), or the segment's content words being the source's (a quotation
kept verbatim), makes it no artifact. Compiled once per process; `screen` is one RE2-compatible
pattern of every cue, for a vectorised pre-filter (a text it does not match holds no leftover,
except a foreign paragraph, which needs a blank line, so the screen also matches one).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Iterable

from bbsard_audit.base import languages
from bbsard_audit.base.languages import fold
from bbsard_audit.audit.unit_alignment import unaccounted

KINDS = ("preface", "note", "chat", "refusal")
"""What a leftover is (a paragraph in another language counts as a preface or a note)."""
FAMILIES = ("chat", "anywhere", "at_start", "apology", "notes", "translation", "talk", "languages", "first_person",
            "preface")
"""The `meta_text` keys that are cue phrases (`service` is only read after an `apology`)."""
GAP = r"(?:\S+\s+){0,5}?"
"""What `*` in a pack phrase stands for: up to five words."""
MAX_BRACKET = 600
MAX_LINE = 400
MAX_PREFACE_WORDS = 30
QUOTED_SHARE = 0.6
"""A segment whose content words are this much the source's is a quotation kept verbatim."""
STRONG = ("chat", "anywhere", "at_start", "translation")
"""Cue families that name a leftover outright: a sentence holding one (or a refusal: an apology with
its service word) is excused only by a source sentence that holds one too (a quotation), matched
one to one; a question holding one is no translated question."""
OUTRIGHT = frozenset(STRONG + ("apology",))
"""The families `Detector._outright` looks for (a refusal opens with an `apology`)."""
UNACCOUNTED = 0.5
"""A document's segment is a leftover only if this share of it is in sentences or lines the source
accounts for nothing of (audit/unit_alignment.py); nor is a question without a STRONG cue when the
target asks no more questions than its source or the question is matched one to one with a source
sentence (a translated question is not a chat note, even where a statement became a question)."""

_BRACKET = re.compile(r"\[([^\[\]\n]{3,%d})\]|\(([^()\n]{3,%d})\)|\{([^{}\n]{3,%d})\}" % ((MAX_BRACKET,) * 3))
_BLANK = re.compile(r"\n[ \t]*\n\s*")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_MARKUP = " \t*_>#-–—•"
_SENTENCE_END = re.compile(r"[.!?…]+[\"'»”)\]]*(?=\s|$)")
_PREFACE_BREAK = re.compile(r"[\[({]|\.\s+\S")
"""A first line with a bracket or a full stop inside is text, not a reply's opening."""
_LABEL = re.compile(r"[^\W\d_][\w'’.]*(?:[ \t]+[\w'’.]+){0,3}[ \t]*(?::|[ \t][–—-][ \t])")
"""A short label opening a segment: 'Ter info:', 'Side note –'."""
_INTERJECTION = re.compile(r"^\W*(?:[^\W\d_]+[ \t]*){1,3}[.!]+\s+")
_QUOTED = re.compile(r"'[^'\n]{2,200}'|\"[^\"\n]{2,200}\"|«[^»]{2,200}»|“[^”]{2,200}”|‘[^’]{2,200}’|„[^“”]{2,200}[“”]")
_SEPARATOR = re.compile(r"\s*(?:[:：\-–—]|\.(?=\s))")
_RUN_ON = re.compile(r"(?<=[^\W\d_]|['’\"»”_*])[ \t]+([A-ZÀ-ÖØ-Þ][^\W\d_]*)")
"""A capitalised word after a word with no sentence mark between: where a remark written without
its full stop runs on into the next sentence, if the word opens sentences (`Detector.openers`)."""


def phrase(text: str, lookaround: bool = True) -> str:
    """A pack phrase as a regex: words joined by any space, `*` = up to five words, `word*` = any
    ending, ' = either apostrophe; word boundaries at letter edges (`lookaround`: Python's exact
    ones, else RE2's ASCII \\b)."""
    tokens = [t for t in text.strip().lower().split()]
    while tokens and tokens[-1] == "*":
        tokens.pop()
    out, gap = "", False
    for k, token in enumerate(tokens):
        if token == "*":
            out += r"\s+" + GAP
            gap = True
            continue
        stem = token.endswith("*") and len(token) > 1
        piece = re.sub("['’]", "['’]", re.escape(token.rstrip("*") if stem else token)) + (r"\w*" if stem else "")
        out += ("" if k == 0 or gap else r"\s+") + piece
        gap = False
    first, last = tokens[0][:1], tokens[-1][-1:]
    if first.isalnum():
        out = (r"(?<![^\W_])" if lookaround else (r"\b" if first.isascii() else "")) + out
    if last.isalnum() and not tokens[-1].endswith("*"):
        out += r"(?![^\W_])" if lookaround else (r"\b" if last.isascii() else "")
    return out


def _union(phrases: Iterable[str], lookaround: bool = True) -> str:
    """The phrases as one alternation, longest first. With `lookaround`, the word-start test and
    the possible first letters stand before it: Python's `re` then tries the alternatives only at
    the few positions that can start one (ten times faster on a long text)."""
    phrases = sorted(set(phrases), key=len, reverse=True)
    body = "|".join(dict.fromkeys(phrase(p, lookaround) for p in phrases))
    if not lookaround:
        return "(?:" + body + ")"
    starts = {p.strip()[:1].lower() for p in phrases}
    starts |= {c.upper() for c in starts}
    return "(?=[" + re.escape("".join(sorted(starts))) + "])(?:" + body + ")"


@dataclass(frozen=True)
class Leftover:
    kind: str
    start: int
    end: int
    lang: str
    """The pack whose cue matched (for a foreign paragraph: its language)."""


class Detector:
    """Every pack's `meta_text` cues, compiled (one instance per process: `detector()`)."""

    def __init__(self) -> None:
        codes = sorted(languages.codes(), key=lambda c: c != "en")  # a cue several packs share is named English
        self.data = {c: languages.get(c).section("meta_text") for c in codes if languages.get(c).has("meta_text")}

    def words(self, key: str) -> dict[str, list[str]]:
        return {c: list(d.get(key, ())) for c, d in self.data.items() if d.get(key)}

    def _family(self, key: str, prefix: str = "(?i)", suffix=lambda code: "") -> re.Pattern | None:
        """One pattern of `key`'s phrases, a named group per language (`suffix(code)` after each)."""
        groups = [f"(?P<{c}>{_union(words)}{suffix(c)})" for c, words in self.words(key).items()
                  if key != "apology" or self.data[c].get("service")]
        return re.compile(prefix + "(?:" + "|".join(groups) + ")") if groups else None

    @cached_property
    def patterns(self) -> dict[str, re.Pattern | None]:
        """The cue families compiled: `at_start` and `preface` only where a line or the text opens,
        `refusal` = an `apology` then its language's `service` word within the sentence."""
        out = {f: self._family(f) for f in ("chat", "anywhere", "notes", "translation", "talk", "languages", "first_person")}
        out["at_start"] = self._family("at_start", r"(?im)^[ \t]*")
        out["preface"] = self._family("preface", r"(?i)^[\s*_>#]*")
        out["refusal"] = self._family("apology", suffix=lambda c: "[^.!?\n]{0,80}?" + _union(self.data[c]["service"]))
        return out

    @cached_property
    def screens(self) -> dict[str, str]:
        """One RE2 pattern per cue family (a text a family's misses holds none of its cues)."""
        return {f: "(?i)" + _union([p for words in self.words(f).values() for p in words], lookaround=False)
                for f in FAMILIES if self.words(f)}

    @cached_property
    def family_screens(self) -> dict[str, re.Pattern]:
        return {f: re.compile(pattern) for f, pattern in self.screens.items()}

    @cached_property
    def screen(self) -> str:
        """RE2 pattern: a text it misses holds no leftover (no cue, no line break, no bracket)."""
        return "|".join(self.screens.values()) + r"|[\n\[({]"

    @cached_property
    def vocabulary(self) -> dict[str, frozenset[str]]:
        """Each pack's function words that no other pack has (a paragraph's language by vote)."""
        own = {c: languages.get(c).folded("stopwords") | languages.get(c).folded("function_words")
               | languages.get(c).folded("pronouns") for c in self.data}
        return {c: words - frozenset().union(*(w for o, w in own.items() if o != c)) for c, words in own.items()}

    @cached_property
    def owner(self) -> dict[str, str]:
        """Word (lower case, as written and folded) -> the one pack whose function word it is."""
        out = {w: c for c, words in self.vocabulary.items() for w in words}
        for code in self.vocabulary:
            for section in ("stopwords", "function_words", "pronouns"):
                for w in languages.get(code).data.get(section, ()):
                    if fold(w) in out and out[fold(w)] == code:
                        out[w.lower()] = code
        return out

    @cached_property
    def openers(self) -> frozenset[str]:
        """Words that open a sentence in a pack language (function words, pronouns, stopwords, the
        `untranslated` cues; lower case): 97-99 % of bBSARD's questions open with one, and a name
        inside a sentence rarely does."""
        out = set()
        for code in languages.codes():
            pack = languages.get(code)
            for section in ("function_words", "pronouns", "stopwords"):
                out |= {w.lower() for w in pack.data.get(section, ())}
            out |= {w.lower() for w in pack.data.get("untranslated", {}).get("cues", ())}
        return frozenset(out - {"i"})  # English 'I' is capitalised anywhere

    @cached_property
    def run_on_screen(self) -> str:
        """RE2 pattern of `run_ons` (one match per place a sentence starts without a mark)."""
        words = sorted({w[:1].upper() + w[1:] for w in self.openers if w[:1].isalpha()}, key=len, reverse=True)
        return r"(?:\p{L}|['’\"»”_*])[ \t]+(?:" + "|".join(map(re.escape, words)) + r")(?:[^\p{L}]|$)"

    def run_ons(self, text: str, a: int, b: int) -> list[int]:
        """Where a new sentence starts inside [a, b) without a mark before it ('... rendered as
        'notice period' Que doivent ...'): a capitalised `openers` word after a word."""
        return [m.start(1) for m in _RUN_ON.finditer(text, a, b) if m.group(1).lower() in self.openers]

    # --- the rules -------------------------------------------------------------------------------

    def find(self, text: str, lang: str, source: str | None = None, source_lang: str | None = None,
             document: bool = True, on: frozenset | None = None, source_on: frozenset | None = None) -> list[Leftover]:
        """Leftovers in `text` (language `lang`), merged where they touch, minus those the `source`
        also holds; `document`: the foreign-paragraph rule and first-person cues apply (a question's
        'I' is the asker's, a statute's is not). `on` / `source_on`: the cue families each text
        holds (`present`, or the batch's RE2 screens); the others' patterns are not run."""
        found = self._raw(text, lang, document, self.present(text) if on is None else on)
        if found and source is not None:
            found = self._not_in_source(text, found, source, source_lang or lang, document,
                                        self.present(source) if source_on is None else source_on)
            if found and document and source.strip():
                outright = self._outright if on is None or on & OUTRIGHT else _never  # no cue in the text, none in a unit
                shares, paired = unaccounted(source, text, [(x.start, x.end) for x in found], outright)
                asked = text.count("?") <= source.count("?")
                run_on = self._run_on_ends(text, source)
                found = [x for x, share, pair in zip(found, shares, paired)
                         if x.end in run_on or (share >= UNACCOUNTED and not (
                             (asked or pair) and not self._strong(text[x.start:x.end])
                             and text[x.start:x.end].rstrip(" )]*_").endswith("?")))]
        return _merge(text, found)

    def _run_on_ends(self, text: str, source: str) -> set[int]:
        """Where a segment ending runs on into a sentence without a mark, when the target has more
        such places than its source: a remark whose full stop is missing, which the alignment can
        merge with the next sentence ('... rendered as 'notice period' Que doivent ...')."""
        cuts = self.run_ons(text, 0, len(text))
        if len(cuts) <= len(self.run_ons(source, 0, len(source))):
            return set()
        return {len(text[:c].rstrip(" \t")) for c in cuts}

    @cached_property
    def _strong_screen(self) -> re.Pattern:
        return re.compile("|".join(self.screens[f] for f in STRONG if f in self.screens).replace("(?i)", "") , re.I)

    def _strong(self, text: str) -> bool:
        """`text` holds a cue that names a leftover outright (STRONG), in any pack language."""
        return bool(self._strong_screen.search(text))

    def _outright(self, text: str) -> bool:
        """A STRONG cue or a refusal in `text`."""
        return self._strong(text) or bool(self.patterns["refusal"] and self.patterns["refusal"].search(text))

    def present(self, text: str) -> frozenset:
        """The cue families `text` holds (Python; a batch uses `screens` in Arrow instead)."""
        return frozenset(f for f, pattern in self.family_screens.items() if pattern.search(text))

    def _p(self, family: str, on: frozenset) -> re.Pattern | None:
        return self.patterns[family] if (family if family != "refusal" else "apology") in on else None

    def _raw(self, text: str, lang: str, document: bool, on: frozenset) -> list[Leftover]:
        found: list[Leftover] = []
        brackets = [(m.start(), m.end()) for m in _BRACKET.finditer(text)]
        for pattern, kind in ((self._p("chat", on), "chat"), (self._p("refusal", on), "refusal"), (self._p("anywhere", on), "note")):
            for m in pattern.finditer(text) if pattern else ():
                a, b = self._enclosing(text, m.start(), m.end(), brackets)
                colon = text.find(":", m.end(), b)
                b = colon + 1 if colon >= 0 else b  # 'Hier is de vertaling: <the translation>
                found.append(Leftover("preface" if kind == "note" and not text[:a].strip() else kind, a, b, m.lastgroup))
        found += self._notes(text, brackets, lang, document, on)
        found += self._preface(text, on)
        if document:
            found += self._foreign(text, lang, on)
        return list({(x.kind, x.start, x.end): x for x in reversed(found)}.values())[::-1]  # one per segment and kind

    def _enclosing(self, text: str, start: int, end: int, brackets: list[tuple[int, int]]) -> tuple[int, int]:
        """The bracket holding [start, end), else its sentence (within its line)."""
        for a, b in brackets:
            if a <= start and end <= b:
                return a, b
        a, b = text.rfind("\n", 0, start) + 1, text.find("\n", end)
        b = len(text) if b < 0 else b
        ends = [m.end() for m in _SENTENCE_END.finditer(text, max(a, start - MAX_LINE), start)]
        a = ends[-1] if ends else max(a, start - MAX_LINE)
        m = _SENTENCE_END.search(text, end, b)
        return _strip(text, a, m.end() if m else min(b, end + MAX_LINE))

    def _cues(self, text: str, document: bool, on: frozenset) -> list[tuple[int, int, int, str]]:
        """(start, end, weight, language) of every cue in `text`: a translation word counts two, a
        talk, language or (documents) first-person word one; found once per text, summed per
        segment by `_count`."""
        marks = []
        for family, weight in (("translation", 2), ("talk", 1), ("languages", 1), ("first_person", 1)):
            pattern = self._p(family, on) if document or family != "first_person" else None
            marks += [(m.start(), m.end(), weight, m.lastgroup) for m in pattern.finditer(text)] if pattern else []
        return sorted(marks)

    @staticmethod
    def _count(marks: list[tuple[int, int, int, str]], a: int, b: int) -> tuple[int, str | None]:
        """(cue weight, language of the first cue) inside [a, b)."""
        inside = [m for m in marks if a <= m[0] and m[1] <= b]
        return sum(m[2] for m in inside), (inside[0][3] if inside else None)

    def _notes(self, text: str, brackets: list[tuple[int, int]], lang: str, document: bool, on: frozenset) -> list[Leftover]:
        """Explicit notes (a head opening a bracket, line or sentence), then every bracket and line
        scored (`_score`)."""
        out = []
        for m in self._p("notes", on).finditer(text) if self._p("notes", on) else ():
            bracket = next(((a, b) for a, b in brackets if a < m.start() < b), None)
            opening = text[bracket[0] + 1 if bracket else text.rfind("\n", 0, m.start()) + 1:m.start()]
            lead = opening[max(opening.rfind(c) for c in ".!?;") + 1:] if not bracket else opening
            if len(lead.strip(_MARKUP).split()) > 3 or not _separated(text, m, lead.strip(_MARKUP)):
                continue  # 'note' inside a sentence, or a head without its ':'
            start = m.start() - len(lead.lstrip())
            if bracket:
                out.append(Leftover("note", *bracket, m.lastgroup))
            else:
                blank = _BLANK.search(text, m.end())
                end = blank.start() if blank else len(text)
                end = next(iter(self.run_ons(text, m.end(), end)), end)
                mark = lead.strip()[:1]
                if mark in ("*", "_") and 0 <= text.find(mark, m.end(), end) < m.end() + MAX_BRACKET:
                    end = text.find(mark, m.end(), end) + 1  # '_Note: ..._' ends where its markup does
                out.append(Leftover("note", *_strip(text, start, end), m.lastgroup))
        marks = self._cues(text, document, on)
        for a, b, trailing in self._units(text, brackets):
            score, cue_lang = self._score(text, a, b, trailing, marks, lang)
            if score >= 2:
                out.append(Leftover("preface" if not text[:a].strip() else "note", a, b, cue_lang or lang))
        return out

    def _units(self, text: str, brackets: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
        """(start, end, at the end of the text) of each bracket and, in a text of several lines,
        of each line but the first (the preface rule's)."""
        tail = len(text.rstrip(" \t\n.;"))
        units = [(a, b, b >= tail or (text[:a].rstrip(" \t")[-1:] in ("", "\n") and text[b:].lstrip(" \t.")[:1] in ("", "\n"))
                  or (text[:a].rstrip()[-1:] in (".", "!", "?") and text[a + 1:b - 1].rstrip()[-1:] in (".", "!", "?")))
                 for a, b in brackets]  # the last bracket, one standing as its own line or sentence, counts as placed
        cuts = sorted({0, len(text), *(m.end() for m in _SENTENCE_END.finditer(text)),
                       *(m.end() for m in re.finditer("\n", text))})
        sentences = [_strip(text, a, b) for a, b in zip(cuts, cuts[1:])]
        sentences += [_strip(text, x, y) for a, b in sentences if (inner := self.run_ons(text, a, b))
                      for x, y in zip([a, *inner], [*inner, b])]  # a remark run on into the next sentence
        units += [(a, b, False) for a, b in sentences if b > a and (a, b) != _strip(text, 0, len(text))
                  and not any(a < y and x < b for x, y in brackets)]  # a bracket inside is scored alone
        if "\n" in text.strip():
            starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
            lines = [_strip(text, x, text.find("\n", x) if text.find("\n", x) >= 0 else len(text)) for x in starts]
            lines = [(a, b) for a, b in lines if b > a and text[a:b].strip(_MARKUP)]
            units += [(a, b, b >= tail) for a, b in lines[1:]]
        return units

    def _score(self, text: str, a: int, b: int, trailing: bool, marks: list, lang: str) -> tuple[int, str | None]:
        """A segment's evidence of being a remark: its cues (`_cues`), a short label before a ':'
        ('Ter info:'), markup around it ('*...*', '— ...'), its being the text's last bracket or
        paragraph, its being in another pack language."""
        segment = text[a:b]
        inner = segment.strip("()[]{}" + _MARKUP)
        count, cue_lang = self._count(marks, a, b)
        label = _LABEL.match(inner)
        wrapped = segment[:1] in "*_—–-•>" or text[max(0, a - 4):a].strip() == "---"
        score = count + bool(label) + bool(wrapped) + trailing
        if score < 1:
            return score, cue_lang  # a foreign language alone is not enough: no need to vote
        other = self.vote(inner)
        foreign = other is not None and other != lang
        return score + foreign, cue_lang or (other if foreign else None)

    def vote(self, text: str, least: int = 2) -> str | None:
        """The pack language whose own function words `text` has most (at least `least`, twice the
        runner-up's plus one), quotations aside; None if no language wins so."""
        owner = self.owner
        votes = Counter(owner.get(w.lower(), "") for w in _WORD.findall(_QUOTED.sub(" ", text)))
        votes.pop("", None)
        ranked = votes.most_common(2) + [(None, 0), (None, 0)]
        (best, n), (_, runner) = ranked[0], ranked[1]
        return best if n >= least and n >= 2 * runner + 1 else None

    def _preface(self, text: str, on: frozenset) -> list[Leftover]:
        out = []
        body = text.lstrip()
        start = len(text) - len(body)
        line_end = body.find("\n")
        line = body if line_end < 0 else body[:line_end]
        colon = line.find(":")
        head = line[:colon + 1] if 0 <= colon < 240 else line
        rest = body[len(head):]
        said = _INTERJECTION.sub("", head)  # 'Great question. Here is ...': the break is after the interjection
        if rest.strip() and len(head.split()) <= MAX_PREFACE_WORDS and not _PREFACE_BREAK.search(said):
            opener = self._p("preface", on).match(head) if self._p("preface", on) else None
            named = (self._p("translation", on) and self._p("translation", on).search(head)) or (self._p("languages", on) and self._p("languages", on).search(head))
            closes = head.endswith(":") or rest.startswith("\n") or line_end == len(head)
            short = head.endswith(":") or len(head.split()) <= 8  # a longer first line that names a translation is text
            if closes and ((named and (short or opener)) or (opener and (head.endswith(":") or len(head.split()) <= 6))):
                out.append(Leftover("preface", *_strip(text, start, start + len(head)),
                                    (named or opener).lastgroup))
        for m in self._p("at_start", on).finditer(text) if self._p("at_start", on) else ():
            out.append(Leftover("preface" if not text[:m.start()].strip() else "note",
                                *_strip(text, m.start(), m.end()), m.lastgroup))
        return out

    def _foreign(self, text: str, lang: str, on: frozenset) -> list[Leftover]:
        """Paragraphs in another pack language (only in a text of several paragraphs): with a cue
        or at either end, else with three more of its function words."""
        cuts = [0] + [x for m in _BLANK.finditer(text) for x in (m.start(), m.end())] + [len(text)]
        paragraphs = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if text[a:b].strip()]
        if len(paragraphs) < 2 or lang not in self.vocabulary:
            return []
        out, marks = [], None
        for k, (a, b) in enumerate(paragraphs[:50]):
            other = self.vote(text[a:b])
            if other is None or other == lang:
                continue
            marks = self._cues(text, True, on) if marks is None else marks
            if self._count(marks, a, b)[0] or k in (0, len(paragraphs) - 1) or self.vote(text[a:b], 3) == other:
                out.append(Leftover("preface" if k == 0 else "note", *_strip(text, a, b), other))
        return out

    def _not_in_source(self, text: str, found: list[Leftover], source: str, source_lang: str,
                       document: bool, on: frozenset) -> list[Leftover]:
        """Minus the segments quoted verbatim from the source and, in a question, those of a kind the
        source holds too (a document's are judged by the alignment instead: its source's questions
        would otherwise excuse a real leftover)."""
        held = Counter() if document else Counter(x.kind for x in self._raw(source, source_lang, document, on))
        words = {fold(w) for w in _WORD.findall(source) if len(w) > 3}
        out = []
        for x in found:
            if held[x.kind] > 0:
                held[x.kind] -= 1
                continue
            content = [fold(w) for w in _WORD.findall(text[x.start:x.end]) if len(w) > 3]
            if content and sum(w in words for w in content) >= QUOTED_SHARE * len(content):
                continue
            out.append(x)
        return out


def _never(text: str) -> bool:
    return False


def _separated(text: str, head: re.Match, lead: str) -> bool:
    """A note head ends its label: ':' / '-' / '.' follows it, or follows up to three more words
    ('Note to the reader:'); a multi-word head needs none; a head after other words ('Quick
    note:') needs its ':' straight after."""
    tail = text[head.end():head.end() + 40]
    if head.group().endswith(".") or (" " in head.group().strip() and not lead):
        return True
    if _SEPARATOR.match(tail):
        return True
    return not lead and bool(re.match(r"(?:[ \t]+[\w'’]+){1,3}[ \t]*:", tail))


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    piece = text[a:b]
    return a + len(piece) - len(piece.lstrip()), b - len(piece) + len(piece.rstrip())


def _merge(text: str, found: list[Leftover]) -> list[Leftover]:
    """Overlapping or touching (only spaces and punctuation between) leftovers as one, the first kind."""
    out: list[Leftover] = []
    for x in sorted(found, key=lambda x: (x.start, -x.end)):
        if out and (x.start <= out[-1].end or not text[out[-1].end:x.start].strip(" \t.,;!?")):
            last = out[-1]
            out[-1] = Leftover(last.kind, last.start, max(last.end, x.end), last.lang)
        else:
            out.append(x)
    return out


@cache
def detector() -> Detector:
    return Detector()
