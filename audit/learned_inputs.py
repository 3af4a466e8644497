"""What an audit learns from earlier expert reviews, read before any work so a bad file fails first:
`--learned` glossary layers (`learned_glossary.yaml`) and at most one ranking (`learned_ranking.json`),
and `--calibration` (an `error_model.json`). The command line and a library caller of `run_audit` get
the same audit from the same files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pandas as pd

from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import digest_of

if TYPE_CHECKING:
    from bbsard_audit.base.contracts.error_model import ErrorModel
    from bbsard_audit.base.contracts.learned import RankingModel


@dataclass(frozen=True)
class LearnedInputs:
    glossary: object
    """The glossary option, with the learned layers on top when there are any."""
    error_model: ErrorModel | None = None
    ranking: RankingModel | None = None
    meta: dict = field(default_factory=dict)
    """What the sidecar records of the files (`error_model` file + sha256, `ranking`)."""


def read(glossary, learned: Sequence[Path], calibration: Path | None,
         error_model: ErrorModel | None = None) -> LearnedInputs:
    """Sort `learned` by kind (a `.json` file is a ranking, anything else a glossary layer) and read each."""
    rankings = [Path(p) for p in learned if Path(p).suffix == ".json"]
    layers = [Path(p) for p in learned if Path(p).suffix != ".json"]
    if len(rankings) > 1:
        raise InputError("give at most one learned_ranking.json", file=str(rankings[1]))
    meta: dict = {}
    if calibration is not None:
        from bbsard_audit.base.contracts.error_model import ErrorModel

        error_model = ErrorModel.read(calibration)
        meta["error_model"] = {"file": Path(calibration).name, "sha256": digest_of(calibration)}
    ranking = None
    if rankings:
        from bbsard_audit.base.contracts.learned import RankingModel

        ranking = RankingModel.read(rankings[0])
        meta["ranking"] = {"file": rankings[0].name, "sha256": digest_of(rankings[0]),
                           "n_verdicts": ranking.n_verdicts, "explore_share": ranking.explore_share}
    if layers:
        from .glossary import Glossary, glossary_sources, load_learned

        glossary = Glossary.layered([*glossary_sources(glossary), *(load_learned(p) for p in layers)])
    return LearnedInputs(glossary, error_model, ranking, meta)


def rank(frame: pd.DataFrame, inputs: LearnedInputs) -> pd.DataFrame:
    """The audit frame ranked by the learned ranking, if one was given (audit/ranking.py `apply`)."""
    if inputs.ranking is None:
        return frame
    from .ranking import apply

    return apply(frame, inputs.ranking)
