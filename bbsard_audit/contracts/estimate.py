"""estimate.json (`annotate estimate`): the share of legally inaccurate pairs in a split, by stratum."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonfile import NamedValue, Record

METHOD = ("stratified proportion; CI = Monte Carlo posterior predictive of the error count "
          "(Jeffreys Beta + Beta-binomial for unreviewed pairs, finite population)")


@dataclass(frozen=True)
class Stratum:
    name: str
    population: int
    reviewed: int
    legal: int
    rate: float | None
    wilson_low: float | None
    wilson_high: float | None


@dataclass
class Estimate(Record):
    share_legal: float
    ci_low: float
    ci_high: float
    expected_legal_pairs: float
    population: int
    strata: list[Stratum]
    level: float
    draws: int
    seed: int
    method: str = METHOD
    assumptions: list[str] = field(default_factory=list)

    def named_values(self) -> list[NamedValue]:
        """The headline and per-stratum rates with their intervals (dataset card, report)."""
        return [NamedValue("share_legal", self.share_legal, self.ci_low, self.ci_high, self.population),
                *(NamedValue(f"stratum {s.name}", s.rate, s.wilson_low, s.wilson_high, s.reviewed)
                  for s in self.strata if s.rate is not None)]
