"""estimate.json (`annotate estimate`): the share of legally inaccurate pairs in a split, by stratum."""

from __future__ import annotations

from dataclasses import dataclass, field

from pathlib import Path

from .jsonfile import NamedValue, Record, read_checked

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


@dataclass(frozen=True)
class ErrorsLeft:
    """THE answer to "how many legal errors are left?": every command, the report and the release card
    read it here. Among the `unreviewed` pairs of the estimate's population (no final verdict yet),
    `expected` legal errors, `ci_low`–`ci_high` their interval at the estimate's level, and the
    `stopping_bound`: the upper end of the confidence sequence, valid however often it is checked, which
    a `--max-missed` target is compared with (None: a design without probability draws has none)."""
    unreviewed: int
    expected: float
    ci_low: float
    ci_high: float
    stopping_bound: float | None = None

    def scaled(self, n: int) -> "ErrorsLeft":
        """The same estimate over a sub-population of `n` of the unreviewed pairs (e.g. the judged questions
        not reviewed), every figure scaled by n / unreviewed: the errors left assumed spread evenly over
        the unreviewed pairs (SCALED says so wherever it is shown)."""
        share = n / self.unreviewed if self.unreviewed else 0.0
        cap = lambda v: None if v is None else min(float(n), v * share)  # noqa: E731
        return ErrorsLeft(int(n), cap(self.expected), cap(self.ci_low), cap(self.ci_high), cap(self.stopping_bound))

    def sentence(self, level: float = 0.95, pairs: str = "unreviewed pairs") -> str:
        """`10.8 expected among the 154 unreviewed pairs (95% interval 0–26; stopping bound: at most 28.1)`:
        the one wording of these figures (terminal, report, release card)."""
        bound = (f"; stopping bound: at most {self.stopping_bound:.1f}" if self.stopping_bound is not None
                 else "; no stopping bound: a design without probability draws")
        return (f"{self.expected:.1f} expected among the {self.unreviewed:,} {pairs} "
                f"({100 * level:g}% interval {self.ci_low:.1f}–{self.ci_high:.1f}{bound})")


STOPPING_BOUND = ("the stopping bound is another quantity than the interval: a bound on the errors left valid "
                  "however often you look (a confidence sequence over batches), never below the interval's upper "
                  "end; --max-missed is compared with it")


SCALED = ("scaled from estimate.json's errors left among its unreviewed pairs by the share of them these are "
          "(errors left assumed spread evenly over the unreviewed pairs)")


@dataclass(frozen=True)
class VerdictsUsed:
    """Which verdicts an estimate came from: the count of final verdicts in the verdicts file it read and
    the sha256 of their sorted `id<TAB>verdict` lines (contracts/verdicts.py `fingerprint`). A report or
    release whose verdicts differ is reading a stale estimate."""
    final: int
    sha256: str


PPI_METHOD = ("prediction-powered (difference) estimate, every batch a probability draw with known inclusion "
              "probabilities: predictions on every pair + the design-weighted correction (y - p) / pi of the "
              "drawn pairs, batches combined with weights fixed at draw time; CI = normal, variance = mean of the "
              "design-based estimate and its expectation under the predictions (fixed-size draws: raised to the "
              "spread the verdicts show, and a score interval whose upper end allows for errors not drawn yet); "
              "stopping bound = union-bound confidence sequence over batches, never inside the CI "
              "(annotations/draw.py)")


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
    errors_left: ErrorsLeft | None = None
    """Filled from `unreviewed` ("all") and the confidence sequence when not given (an estimate.json from
    before it reads the same): the one object every reader of "errors left" uses."""
    verdicts: VerdictsUsed | None = None  # absent: an estimate.json from before it records its verdicts

    def __post_init__(self) -> None:
        self._check_figures()
        if self.errors_left is None and self.unreviewed:
            m = next((m for m in self.unreviewed if m.name == "all"), self.unreviewed[0])
            bound = None
            if self.cs_high is not None and self.found_legal is not None:
                bound = max(0.0, self.cs_high * self.population - self.found_legal)
            self.errors_left = ErrorsLeft(m.unreviewed, m.expected, m.ci_low, m.ci_high, bound)

    @classmethod
    def read(cls, path: str | Path) -> "Estimate":
        """estimate.json read strictly, impossible figures included (one line naming the field)."""
        return read_checked(cls, path, "an estimate.json")

    def _check_figures(self) -> None:
        """ValueError naming the first impossible figure: a hand-edited or corrupted estimate.json (a
        share of 5, an interval upside down, a negative population) would reach the fragility table,
        the report and the release card as if computed."""
        shares = [("share_legal", self.share_legal), ("ci_low", self.ci_low), ("ci_high", self.ci_high),
                  ("cs_low", self.cs_low), ("cs_high", self.cs_high)]
        counts = [("population", self.population), ("draws", self.draws), ("found_legal", self.found_legal),
                  ("expected_legal_pairs", self.expected_legal_pairs)]
        intervals = [("ci_low", self.ci_low, "ci_high", self.ci_high), ("cs_low", self.cs_low, "cs_high", self.cs_high)]
        for m in self.unreviewed:
            counts += [(f"unreviewed {m.name}: unreviewed", m.unreviewed), (f"unreviewed {m.name}: expected", m.expected)]
            intervals.append((f"unreviewed {m.name}: ci_low", m.ci_low, "ci_high", m.ci_high))
        for st in self.strata:
            shares += [(f"stratum {st.name}: rate", st.rate), (f"stratum {st.name}: wilson_low", st.wilson_low),
                       (f"stratum {st.name}: wilson_high", st.wilson_high)]
            counts += [(f"stratum {st.name}: population", st.population), (f"stratum {st.name}: reviewed", st.reviewed),
                       (f"stratum {st.name}: legal", st.legal)]
            if st.legal > st.reviewed:
                raise ValueError(f"stratum {st.name}: legal = {st.legal} is more than reviewed = {st.reviewed}")
        for name, value in shares:
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} = {value!r} is not a share from 0 to 1")
        for name, value in counts:
            if value is not None and value < 0:
                raise ValueError(f"{name} = {value!r} is negative")
        for low_name, low, high_name, high in intervals:
            if low is not None and high is not None and low > high + 1e-9:
                raise ValueError(f"{low_name} = {low!r} is above {high_name} = {high!r}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level = {self.level!r} is not a confidence level between 0 and 1")
        if self.expected_legal_pairs > self.population + 1e-9:
            raise ValueError(f"expected_legal_pairs = {self.expected_legal_pairs!r} is more than population = "
                             f"{self.population}")

    def stale(self, final: tuple[int, str]) -> bool:
        """Whether it was computed from other final verdicts than `final` (a verdicts file's `fingerprint`):
        the one reader of the record, where an estimate.json from before it records none (never stale)."""
        return self.verdicts is not None and final[1] != self.verdicts.sha256

    @property
    def design_rates(self) -> bool:
        """Per-stratum rates that are the share among a batch's drawn pairs (format 3), a design rate over
        pairs drawn by their prediction, never the population's rate."""
        return bool(self.by_batch)

    def named_values(self) -> list[NamedValue]:
        """The headline and per-stratum rates with their intervals (dataset card, report)."""
        kind = "share legal among its drawn pairs (a design rate, not the split's)" if self.design_rates else ""
        return [NamedValue("share_legal", self.share_legal, self.ci_low, self.ci_high, self.population),
                *(NamedValue(f"{s.name}: {kind}" if kind else f"stratum {s.name}", s.rate, s.wilson_low,
                             s.wilson_high, s.reviewed) for s in self.strata if s.rate is not None)]
