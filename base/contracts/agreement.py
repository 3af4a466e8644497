"""agreement.json (`annotate agreement`): kappa / alpha with bootstrap CIs."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonfile import NamedValue, Record


@dataclass(frozen=True)
class Score:
    """One agreement statistic with its bootstrap CI and how it was computed (value null: undefined,
    e.g. kappa when every rating falls in one category)."""

    name: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    signature: str
    annotators: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "n_items": self.n_items, "signature": self.signature, "annotators": list(self.annotators)}


@dataclass
class Agreement(Record):
    """Kappa per annotator pair and alpha over everyone, on 3 verdicts and on legal-vs-not."""

    n_items_with_2plus_annotations: int = 0
    scores: list[Score] = field(default_factory=list)
    n_disagreements: int | None = None

    def to_dict(self) -> dict:
        out = {"n_items_with_2plus_annotations": self.n_items_with_2plus_annotations,
               "scores": [s.to_dict() for s in self.scores]}
        return out if self.n_disagreements is None else out | {"n_disagreements": self.n_disagreements}

    def named_values(self) -> list[NamedValue]:
        return [NamedValue(f"{s.name} {' vs '.join(s.annotators)}" if "kappa" in s.name else s.name,
                           s.value, s.ci_low, s.ci_high, s.n_items) for s in self.scores if s.value is not None]
