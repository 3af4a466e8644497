"""corpus_review_queue.csv: what an expert reads first. The `budget` riskiest flagged documents,
then a seeded control sample of `control` other documents with known inclusion probabilities, drawn
exactly as the question audit draws its control sample (audit/pipeline.py `review_queue`: stratified
by start-risk band, Neyman allocation, >= 2 draws per band), so the same estimator can say how many
artifacts the checks missed."""

from __future__ import annotations

import pandas as pd

from bbsard_audit.audit.pipeline import review_queue as question_queue

COLUMNS = ("id", "queue", "risk", "flags", "reasons", "source_excerpt", "target_excerpt")
SAMPLING = ("stratum", "stratum_size", "stratum_sampled", "inclusion_prob", "sample_weight")


def review_queue(df: pd.DataFrame, budget: int, control: int, seed: int = 0) -> pd.DataFrame:
    """The queue rows (COLUMNS, then the control sample's SAMPLING columns; inclusion_prob is empty
    for the risk queue, which is not a sample); the draw's summary is in `.attrs["info"]`."""
    queue, info = question_queue(df.assign(corpus="corpus"), budget, control, seed, strata=("corpus",))
    out = queue.reindex(columns=[*COLUMNS, *SAMPLING]).reset_index(drop=True)
    out.attrs["info"] = {k: v for k, v in info.items() if k != "strata"}
    return out
