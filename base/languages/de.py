"""German grammar hooks: clause negation ('kein' in every case, 'weder ... noch' once) and number
words ('einundzwanzig', inflected ordinals 'dritten')."""

from __future__ import annotations

from typing import Any, Mapping

from . import Negations, cue_negations, fold, units_and_tens


def negations(tokens, data: Mapping[str, Any]) -> Negations:
    """'nicht', 'kein…', 'nie', 'nichts', 'niemand', 'ohne', 'weder' negate ('noch' never does: alone it
    is 'still'); 'nichts als' (= only) does not; 'nicht nur ... sondern auch' (`additive`) and
    'Nicht-' before a hyphen ('Nicht-EU-Bürger') are lexical."""
    return cue_negations(tokens, data, lexical_before_hyphen=("nicht",))


def number_words(data: Mapping[str, Any]) -> dict[str, float]:
    """Units, tens, 'einundzwanzig', ordinals with every adjective ending ('erste', 'dritten'), and
    the fractions of `extra`."""
    units = data["units"]
    words = units_and_tens(units, data["tens"],
                           lambda ten, unit: f"{'ein' if unit == 1 else units[unit]}und{ten}")
    skip = set(data.get("not_ordinals", ()))
    for stem, value in data["ordinal_stems"].items():
        for ending in data["ordinal_endings"]:
            if stem + ending not in skip:
                words[stem + ending] = value
    words.update(data["extra"])
    return {fold(k): v for k, v in words.items()}
