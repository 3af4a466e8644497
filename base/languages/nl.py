"""Dutch grammar hooks: clause negation and compound number words ('eenentwintig')."""

from __future__ import annotations

from typing import Any, Mapping

from . import Negations, cue_negations, fold, units_and_tens


def negations(tokens, data: Mapping[str, Any]) -> Negations:
    """'niet', 'geen', 'nooit', 'zonder', ... negate; 'niet-' before a hyphen is lexical
    ('niet-begeleid'); a 'noch' right after another negator continues it."""
    return cue_negations(tokens, data, lexical_before_hyphen=("niet",), coordinator="noch")


def number_words(data: Mapping[str, Any]) -> dict[str, float]:
    """Units, tens, 'drieëntwintig', 'vierentwintig', and the ordinals and fractions of `extra`."""
    units = data["units"]
    words = units_and_tens(units, data["tens"],
                           lambda ten, unit: f"{units[unit]}{'ën' if units[unit].endswith('e') else 'en'}{ten}")
    words.update(data["extra"])
    return {fold(k): v for k, v in words.items()}
