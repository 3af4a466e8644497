"""What every audit signal reports: flags from a documented vocabulary, each with a reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One thing a check found wrong (or suspicious) in a Dutch translation.

    `flag` is a name from the vocabulary documented in docs/flags.md (e.g. `term_missing`);
    `reason` says, for a person, what was expected and what was found.
    """

    flag: str
    reason: str
