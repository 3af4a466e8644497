"""Stage directions of a transcript: '(Applause)', '(Laughter)', '[Music]' report what happened in the
room, not what was said. Each language pack's `stage_directions` names them as concepts ('laughter' =
Laughter / Lachen / Gelächter / Rires / Gelach), so '(Applause)' -> '(Beifall)' is a faithful pair
whatever an embedding thinks of it, and a direction the translation drops is an omission."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

from bbsard_audit.base import languages
from bbsard_audit.base.languages import fold

_BRACKETED = re.compile(r"[(\[]\s*([^()\[\]]{1,40}?)\s*[)\]]")
_WORD = re.compile(r"[^\W\d_]+")


@cache
def _forms(lang: str) -> dict[str, str]:
    """Folded form -> concept, from the pack's `stage_directions` (empty when it has none)."""
    table = languages.get(lang).data.get("stage_directions", {})
    return {fold(form): concept for concept, forms in table.items() for form in forms}


@dataclass(frozen=True)
class Directions:
    bracketed: Counter
    """Concepts written as a stage direction, in brackets."""
    spans: tuple[tuple[int, int], ...]
    """Where each bracketed direction is."""
    only: bool
    """The text is nothing but stage directions."""
    words: Counter
    """Concepts named anywhere, bracketed or not ('Gelächter' without its brackets)."""


def stage_directions(text: str, lang: str) -> Directions:
    forms = _forms(lang)
    if not forms:
        return Directions(Counter(), (), False, Counter())
    bracketed, spans = Counter(), []
    for m in _BRACKETED.finditer(text):
        concept = forms.get(fold(m.group(1)))
        if concept:
            bracketed[concept] += 1
            spans.append(m.span())
    rest = "".join(text[a:b] for a, b in zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(text)]))
    words = Counter(forms[w] for w in (fold(m.group()) for m in _WORD.finditer(text)) if w in forms)
    return Directions(bracketed, tuple(spans), bool(spans) and not _WORD.search(rest), words)


def matching_directions(source: str, target: str, pair: tuple[str, str]) -> bool:
    """Both texts are only stage directions, the same ones: '(Applause)' = '(Beifall)'."""
    s, t = stage_directions(source, pair[0]), stage_directions(target, pair[1])
    return s.only and t.only and s.bracketed == t.bracketed
