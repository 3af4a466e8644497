"""estimate.json (`annotate estimate`): the share of legally inaccurate pairs in a split, by stratum."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonfile import NamedValue, Record

METHOD = ("reviewed pairs exact + post-stratified estimate of the unreviewed pairs from the control sample "
          "(stratified by start risk band, drawn once with known inclusion probabilities); CI = Monte Carlo "
          "Beta-binomial predictive of the errors left, Jeffreys prior on the design-effective sample size")


@dataclass(frozen=True)
class Stratum:
    """`reviewed` / `legal` / `rate` / Wilson: the reviewed pairs that stand for the stratum's
    unreviewed ones (its control pairs; every reviewed pair of a census stratum); `found` /
    `found_legal`: every reviewed pair of the stratum, counted exactly."""
    name: str
    population: int
    reviewed: int
    legal: int
    rate: float | None
    wilson_low: float | None
    wilson_high: float | None
    control: int = 0  # pairs of the stratum in the control (probability) sample
    unreviewed: int = 0
    found: int = 0
    found_legal: int = 0


@dataclass(frozen=True)
class Missed:
    """Legal errors expected among the pairs not reviewed yet: `all`, then per stratum (or `flagged` /
    `unflagged` for a legacy design)."""
    name: str
    unreviewed: int
    expected: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Target:
    """A stopping target (either or both) and whether the current reviews meet it."""
    target_halfwidth: float | None
    max_missed: float | None
    halfwidth: float
    expected_missed: float
    met: bool
    missed_upper: float | None = None  # format 3: the stopping bound on errors left (confidence sequence)
    rule: str | None = None


PPI_METHOD = ("prediction-powered (difference) estimate, every batch a probability draw with known inclusion "
              "probabilities: predictions on every pair + the design-weighted correction (y - p) / pi of the "
              "drawn pairs, batches combined with weights fixed at draw time; CI = normal, variance = mean of the "
              "Horvitz-Thompson estimate and its expectation under the predictions; stopping bound = union-bound "
              "confidence sequence over batches (annotations/draw.py)")


@dataclass(frozen=True)
class BatchStep:
    """The estimate once batch `batch` (and every earlier one) was reviewed: the interval narrowing."""
    batch: int
    reviewed: int
    share_legal: float
    ci_low: float
    ci_high: float
    cs_low: float
    cs_high: float


@dataclass(frozen=True)
class DesignInfo:
    """Which design and estimator read the campaign; `prediction`: the audit column the draws used."""
    format: int
    estimator: str
    prediction: str | None = None
    batches_used: int = 0
    pending_batches: list[int] = field(default_factory=list)
    outside_design: int = 0  # pairs with a verdict no batch drew (counted exactly, never as draws)
    outside_design_ids: list[int | str] = field(default_factory=list)


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
    unreviewed: list[Missed] = field(default_factory=list)
    target: Target | None = None
    method: str = METHOD
    assumptions: list[str] = field(default_factory=list)
    found_legal: int | None = None  # legal verdicts among the reviewed pairs (counted exactly)
    cs_low: float | None = None   # the confidence sequence (valid however often checked; format 3)
    cs_high: float | None = None
    by_batch: list[BatchStep] = field(default_factory=list)
    design: DesignInfo | None = None

    def named_values(self) -> list[NamedValue]:
        """The headline and per-stratum rates with their intervals (dataset card, report)."""
        return [NamedValue("share_legal", self.share_legal, self.ci_low, self.ci_high, self.population),
                *(NamedValue(f"stratum {s.name}", s.rate, s.wilson_low, s.wilson_high, s.reviewed)
                  for s in self.strata if s.rate is not None)]
