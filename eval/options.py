"""What `bbsard-audit eval` takes, one object (`EvalConfig`, for `pipeline.evaluate`), and the defaults it
shares with the stage's modules. Imports no heavy library: the command line reads the defaults at
import time without loading numpy or pandas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

DEFAULT_METRICS = ("recall@100", "recall@200", "recall@500", "map@100", "mrr@100", "ndcg@10")
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 2024  # any fixed integer; recorded in the sidecar
DEFAULT_KEEP = ("correct", "minor")


@dataclass
class EvalConfig:
    """Everything `bbsard-audit eval` takes; the defaults are the benchmark's."""

    runs: Mapping[str, str | Path] = field(default_factory=dict)
    qrels: str | Path | None = None
    dataset: str | None = None
    split: str = "test"
    retrievers: Sequence[str] = ()
    langs: Sequence[str] = ()
    """Languages the built-in retrievers run in; default: the pair's (fr, nl for bBSARD)."""
    normaliser: str = "stem"
    verdicts: str | Path | None = None
    keep: Sequence[str] = DEFAULT_KEEP
    corrected: bool = False
    audit: str | Path | None = None
    estimate: str | Path | None = None
    """estimate.json of `annotate estimate`; default: an estimate.json next to `verdicts`."""
    metrics: Sequence[str] = DEFAULT_METRICS
    resamples: int = DEFAULT_RESAMPLES
    null_draws: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    alpha: float = 0.05
    depth: int = 500
    campaign: str | Path | None = None
    """A format-3 campaign (folder or campaign.json): the metric on the cleaned benchmark estimated from its
    draws (cleaned.csv, rank_sets.csv, cleaned_pairs.csv); its verdicts: `verdicts`, else its verdicts.csv."""
