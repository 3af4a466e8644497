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
  bracket's or the paragraph's end;
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

KINDS = ("preface", "note", "chat", "refusal", "foreign")
GAP = r"(?:\S+\s+){0,5}?"
"""What `*` in a pack phrase stands for: up to five words."""
MAX_BRACKET = 600
MAX_LINE = 400
MAX_PREFACE_WORDS = 30
QUOTED_SHARE = 0.6
"""A segment whose content words are this much the source's is a quotation kept verbatim."""

_BRACKET = re.compile(r"\[([^\[\]\n]{3,%d})\]|\(([^()\n]{3,%d})\)|\{([^{}\n]{3,%d})\}" % ((MAX_BRACKET,) * 3))
_BLANK = re.compile(r"\n[ \t]*\n\s*")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_MARKUP = " \t*_>#-–—•"
_SENTENCE_END = re.compile(r"[.!?…]+[\"'»”)\]]*(?=\s|$)")
_PREFACE_BREAK = re.compile(r"[\[({]|\.\s+\S")
"""A first line with a bracket or a full stop inside is text, not a reply's opening."""
_SEPARATOR = re.compile(r"\s*(?:[:：\-–—]|\.(?=\s))")


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
        out = (r"(?<!\w)" if lookaround else (r"\b" if first.isascii() else "")) + out
    if last.isalnum() and not tokens[-1].endswith("*"):
        out += r"(?!\w)" if lookaround else (r"\b" if last.isascii() else "")
    return out


def _union(phrases: Iterable[str], lookaround: bool = True) -> str:
    return "(?:" + "|".join(dict.fromkeys(phrase(p, lookaround) for p in sorted(set(phrases), key=len, reverse=True))) + ")"


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
        self.data = {c: languages.get(c).section("meta_text") for c in languages.codes()
                     if languages.get(c).has("meta_text")}

    def words(self, key: str) -> dict[str, list[str]]:
        return {c: list(d.get(key, ())) for c, d in self.data.items() if d.get(key)}

    def _family(self, key: str, flags: str = "(?i)") -> re.Pattern | None:
        """One pattern of `key`'s phrases, a named group per language."""
        groups = [f"(?P<{c}>{_union(words)})" for c, words in self.words(key).items()]
        return re.compile(flags + "|".join(groups)) if groups else None

    @cached_property
    def chat(self) -> re.Pattern | None:
        return self._family("chat")

    @cached_property
    def anywhere(self) -> re.Pattern | None:
        return self._family("anywhere")

    @cached_property
    def at_start(self) -> re.Pattern | None:
        groups = [f"(?P<{c}>{_union(w)})" for c, w in self.words("at_start").items()]
        return re.compile(r"(?im)^[ \t]*(?:" + "|".join(groups) + ")") if groups else None

    @cached_property
    def refusal(self) -> re.Pattern | None:
        groups = [f"(?P<{c}>{_union(words)}[^.!?\n]{{0,80}}?{_union(self.data[c].get('service', ()))})"
                  for c, words in self.words("apology").items() if self.data[c].get("service")]
        return re.compile("(?i)" + "|".join(groups)) if groups else None

    @cached_property
    def notes(self) -> re.Pattern | None:
        return self._family("notes")

    @cached_property
    def translation(self) -> re.Pattern | None:
        return self._family("translation")

    @cached_property
    def talk(self) -> re.Pattern | None:
        return self._family("talk")

    @cached_property
    def languages(self) -> re.Pattern | None:
        return self._family("languages")

    @cached_property
    def first_person(self) -> re.Pattern | None:
        return self._family("first_person")

    @cached_property
    def preface(self) -> re.Pattern | None:
        groups = [f"(?P<{c}>{_union(w)})" for c, w in self.words("preface").items()]
        return re.compile(r"(?i)^[\s*_>#]*(?:" + "|".join(groups) + ")") if groups else None

    @cached_property
    def screen(self) -> str:
        """RE2 pattern: a text it misses holds no leftover."""
        keys = ("chat", "anywhere", "at_start", "apology", "notes", "translation", "talk", "languages", "preface")
        cues = [p for key in keys for words in self.words(key).values() for p in words]
        return r"(?i)" + _union(cues, lookaround=False) + r"|\n[ \t]*\n"

    @cached_property
    def vocabulary(self) -> dict[str, frozenset[str]]:
        """Each pack's function words that no other pack has (a paragraph's language by vote)."""
        own = {c: languages.get(c).folded("stopwords") | languages.get(c).folded("function_words")
               | languages.get(c).folded("pronouns") for c in self.data}
        return {c: words - frozenset().union(*(w for o, w in own.items() if o != c)) for c, words in own.items()}

    # --- the rules -------------------------------------------------------------------------------

    def find(self, text: str, lang: str, source: str | None = None, source_lang: str | None = None,
             document: bool = True) -> list[Leftover]:
        """Leftovers in `text` (language `lang`), merged where they touch, minus those the `source`
        also holds; `document`: the foreign-paragraph rule and first-person cues apply (a question's
        'I' is the asker's, a statute's is not)."""
        found = self._raw(text, lang, document)
        if found and source is not None:
            found = self._not_in_source(text, found, source, source_lang or lang, document)
        return found

    def _raw(self, text: str, lang: str, document: bool) -> list[Leftover]:
        found: list[Leftover] = []
        brackets = [(m.start(), m.end()) for m in _BRACKET.finditer(text)]
        for pattern, kind in ((self.chat, "chat"), (self.refusal, "refusal"), (self.anywhere, "note")):
            for m in pattern.finditer(text) if pattern else ():
                a, b = self._enclosing(text, m.start(), m.end(), brackets)
                found.append(Leftover("preface" if kind == "note" and not text[:a].strip() else kind, a, b, m.lastgroup))
        found += self._notes(text, brackets, document)
        found += self._preface(text)
        if document:
            found += self._foreign(text, lang)
        return _merge(text, found)

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

    def _cues(self, segment: str, document: bool) -> tuple[int, str | None]:
        """(cue count, language of the first) of a segment: talk cues, translation words counting
        two, first-person (documents) and language words one each."""
        count, lang = 0, None
        for pattern, weight in ((self.translation, 2), (self.talk, 1), (self.languages, 1),
                                (self.first_person if document else None, 1)):
            for m in pattern.finditer(segment) if pattern else ():
                count += weight
                lang = lang or m.lastgroup
        return count, lang

    def _notes(self, text: str, brackets: list[tuple[int, int]], document: bool) -> list[Leftover]:
        out = []
        inside = set()
        for a, b in brackets:
            inner = text[a + 1:b - 1]
            head = self.notes.match(inner.lstrip(_MARKUP)) if self.notes else None
            count, lang = self._cues(inner, document)
            if (head and _separated(inner.lstrip(_MARKUP), head)) or count >= 2:
                out.append(Leftover("note", a, b, head.lastgroup if head else lang))
                inside.add((a, b))
        for m in self.notes.finditer(text) if self.notes else ():
            if any(a <= m.start() < b for a, b in inside) or not _separated(text[m.start():], m, offset=m.start()):
                continue
            before = text[:m.start()].rstrip(_MARKUP)
            if before and before[-1] not in ".!?:;\n([{" and "\n" not in text[len(before):m.start()]:
                continue  # 'note' inside a sentence
            if before.endswith(("(", "[", "{")):
                continue  # a bracket the bracket rule has seen (or one too long to be a note)
            blank = _BLANK.search(text, m.end())
            out.append(Leftover("note", *_strip(text, len(before), blank.start() if blank else len(text)), m.lastgroup))
        return out

    def _preface(self, text: str) -> list[Leftover]:
        out = []
        body = text.lstrip()
        start = len(text) - len(body)
        line_end = body.find("\n")
        line = body if line_end < 0 else body[:line_end]
        colon = line.find(":")
        head = line[:colon + 1] if 0 <= colon < 240 else line
        rest = body[len(head):]
        if rest.strip() and len(head.split()) <= MAX_PREFACE_WORDS and not _PREFACE_BREAK.search(head):
            opener = self.preface.match(head) if self.preface else None
            named = (self.translation and self.translation.search(head)) or (self.languages and self.languages.search(head))
            closes = head.endswith(":") or rest.startswith("\n") or line_end == len(head)
            if closes and (named or (opener and (head.endswith(":") or len(head.split()) <= 6))):
                out.append(Leftover("preface", *_strip(text, start, start + len(head)),
                                    (named or opener).lastgroup))
        for m in self.at_start.finditer(text) if self.at_start else ():
            out.append(Leftover("preface" if not text[:m.start()].strip() else "note",
                                *_strip(text, m.start(), m.end()), m.lastgroup))
        return out

    def _foreign(self, text: str, lang: str) -> list[Leftover]:
        """Paragraphs in another pack language (only in a text of several paragraphs)."""
        cuts = [0] + [x for m in _BLANK.finditer(text) for x in (m.start(), m.end())] + [len(text)]
        paragraphs = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if text[a:b].strip()]
        if len(paragraphs) < 2 or lang not in self.vocabulary:
            return []
        out = []
        for k, (a, b) in enumerate(paragraphs[:50]):
            votes = Counter()
            for w in _WORD.findall(text[a:b]):
                w = fold(w)
                for code, vocabulary in self.vocabulary.items():
                    votes[code] += w in vocabulary
            other, n = max(((c, v) for c, v in votes.items() if c != lang), key=lambda x: x[1], default=(None, 0))
            count, _ = self._cues(text[a:b], True)
            edge = k in (0, len(paragraphs) - 1)
            if other and n >= (2 if count or edge else 3) and n >= 2 * votes[lang] + 1:
                out.append(Leftover("preface" if k == 0 else "note", *_strip(text, a, b), other))
        return out

    def _not_in_source(self, text: str, found: list[Leftover], source: str, source_lang: str,
                       document: bool) -> list[Leftover]:
        held = Counter(x.kind for x in self._raw(source, source_lang, document))
        words = {fold(w) for w in _WORD.findall(source) if len(w) > 3}
        out = []
        for x in found:
            kind = "note" if x.kind == "foreign" else x.kind
            if held[kind] > 0:
                held[kind] -= 1
                continue
            content = [fold(w) for w in _WORD.findall(text[x.start:x.end]) if len(w) > 3]
            if content and sum(w in words for w in content) >= QUOTED_SHARE * len(content):
                continue
            out.append(x)
        return out


def _separated(segment: str, head: re.Match, offset: int = 0) -> bool:
    """A note head is followed by ':' / '-' / '.' (a multi-word head: by anything)."""
    tail = segment[head.end() - offset:]
    return " " in head.group().strip() or bool(_SEPARATOR.match(tail)) or head.group().endswith(".")


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
