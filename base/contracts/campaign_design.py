"""campaign.json (`annotate push --campaign DIR`): the design of an adaptive review, read strictly.

Format 1 (before inclusion probabilities) is still read; format 2 fixes the strata over the whole
population at the start (every id in exactly one stratum) with the control sample drawn in them.
Ids are integers, or string ids (BEIR's `PLAIN-2`) when the record says `"ids": "string"` (absent =
integer, so every campaign.json from before string ids reads as it did); they must match the audit's.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bbsard_audit.base.errors import InputError

from .jsonfile import from_dict, read_json
from .table import STRING_ID

SAMPLINGS = ("poisson", "brewer")
"""How a format-3 `--next` batch drew its pool (annotations/draw.py); a batch without the key was Poisson."""

Id = Any  # an int or a string id, one kind per file as the audit's: checked by `_check_ids`


@dataclass
class Recalibration:
    """A `--next` batch's recalibration of its raw p (annotations/recalibration.py): logit q = a + b·logit p,
    fitted on `verdicts` verdicts (`legal` of them legal errors) of pairs earlier batches drew."""
    a: float
    b: float
    verdicts: int
    legal: int

    def apply(self, p) -> np.ndarray:
        """q = sigmoid(a + b·logit p), p clipped to [EDGE, 1 − EDGE] (the identity leaves p as it is)."""
        return recalibrated(p, self.a, self.b)


EDGE = 1e-3
"""A recalibrated p is clipped to [EDGE, 1 − EDGE] before its logit (a p of exactly 0 or 1 happens)."""


def recalibrated(p, a: float, b: float) -> np.ndarray:
    """logit q = a + b·logit p: the one formula a batch's recorded recalibration means."""
    p = np.asarray(p, dtype=float)
    if a == 0.0 and b == 1.0:
        return p
    clipped = np.clip(p, EDGE, 1 - EDGE)
    return 1 / (1 + np.exp(-(a + b * np.log(clipped / (1 - clipped)))))


@dataclass
class Batch:
    batch: int
    kind: str
    audit_sha256: str
    created: str
    risk: list[Id]
    control: list[Id]
    # format 3 (every batch a probability draw): its pool, the prediction and inclusion probability of
    # each pool pair, and how the draw was made (annotations/draw.py)
    pool: list[Id] | None = None
    p: list[float] | None = None
    pi: list[float] | None = None
    prediction: str | None = None
    seed: int | None = None
    scale: float | None = None   # λ of π = min(1, max(floor, λ·p)) (ν of the trade-off rule); null: every pool pair drawn
    floor: float | None = None
    certain: int | None = None
    tradeoff: float | None = None  # μ of the trade-off rule (annotations/draw.py); absent: the linear rule
    recalibration: Recalibration | None = None  # absent: drawn and estimated with the raw p
    p_floor: float | None = None  # the prediction's floor (annotations/draw.py P_FLOOR); absent: none (before it)
    sampling: str | None = None  # how the pool was drawn: "brewer" (fixed size); absent: Poisson (before it)
    sealed: str | None = None  # `seal` of the batch as drawn; absent: a batch recorded before seals

    def predicted(self) -> np.ndarray:
        """The prediction the batch drew with and is estimated with (pool order): the recorded raw p,
        recalibrated when the batch records a fit, floored at its `p_floor` (absent: p as it was)."""
        p = np.asarray(self.p, dtype=float)
        if self.recalibration is not None:
            p = self.recalibration.apply(p)
        return np.maximum(p, self.p_floor or 0.0)


@dataclass
class DesignV1:
    audit_sha256: str
    queue_sha256: str
    flagged: list[Id]
    unflagged_strata: dict[str, list[Id]]
    strata_from: str


@dataclass
class DesignV2:
    audit_sha256: str
    queue_sha256: str
    strata: dict[str, list[Id]]  # every pair of the population, in exactly one stratum
    census: list[str]             # strata reviewed in full (the start risk queue)
    control: list[Id]            # the probability sample (simple random within its stratum)


@dataclass
class RecordV1:
    format: int
    project: str
    started: str
    design: DesignV1
    batches: list[Batch]
    ids: str = "integer"


@dataclass
class RecordV2:
    format: int
    project: str
    started: str
    design: DesignV2
    batches: list[Batch]
    ids: str = "integer"


def _id_lists(record: RecordV1 | RecordV2):
    """(key, ids) of every id list the record holds."""
    design = record.design
    if isinstance(design, DesignV2):
        lists = [*((f"design.strata.{h}", ids) for h, ids in design.strata.items()), ("design.control", design.control)]
    else:
        lists = [("design.flagged", design.flagged),
                 *((f"design.unflagged_strata.{h}", ids) for h, ids in design.unflagged_strata.items())]
    return lists + [(f"batches[{b.batch}].{k}", ids) for b in record.batches for k, ids in
                    (("risk", b.risk), ("control", b.control), ("pool", b.pool or []))]


def _check_ids(record: RecordV1 | RecordV2, source: str, string_ids: bool | None) -> None:
    """Every id of the kind the audit has (`string_ids`; None: the kind the record's `ids` says)."""
    if record.ids not in ("integer", "string"):
        raise InputError(f"key 'ids' is {record.ids!r}, not 'integer' or 'string'", file=source)
    strings = record.ids == "string" if string_ids is None else string_ids
    kind = "string" if strings else "integer"
    for key, ids in _id_lists(record):
        for j, i in enumerate(ids):
            if strings and not (isinstance(i, str) and STRING_ID.fullmatch(i)):
                raise InputError(f"{key}[{j}] = {i!r} is not a string id (the campaign's audit has string ids)",
                                 file=source, id=i)
            if not strings and (not isinstance(i, int) or isinstance(i, bool)):
                raise InputError(f"{key}[{j}] = {i!r} is not int" + (
                    " (the campaign's audit has integer ids)" if isinstance(i, str) else ""), file=source, id=i)
    if record.ids != kind:
        raise InputError(f"key 'ids' says {record.ids}, the campaign's audit has {kind} ids", file=source)


def check_record(data: object, source: str, string_ids: bool | None = None) -> None:
    """campaign.json's keys, types and design rules, or one line naming the file and the key / id.
    `string_ids`: whether the campaign's audit (its review_queue.csv's layout) has string ids."""
    version = data.get("format") if isinstance(data, dict) else None
    if version not in (1, 2, 3):
        raise InputError("not a campaign file (format 1, 2 or 3): key 'format'", file=source)
    record = from_dict(RecordV1 if version == 1 else RecordV2, data, source)
    _check_ids(record, source, string_ids)
    if not record.batches or record.batches[0].kind != "start":
        raise InputError("batches[0] must be the start batch (kind 'start')", file=source)
    if version == 3:
        _check_draws(record, source)
    if version >= 2:
        seen: dict[Id, str] = {}
        for name, ids in record.design.strata.items():
            for i in ids:
                if i in seen:
                    raise InputError(f"design.strata: pair in two strata ({seen[i]}, {name})", file=source, id=i)
                seen[i] = name
        for key, ids in (("design.control", record.design.control),
                         *((f"batches[{b.batch}].risk", b.risk) for b in record.batches)):
            outside = [i for i in ids if i not in seen]
            if outside:
                raise InputError(f"{key}: pair in no stratum of design.strata", file=source, id=outside[0])
        missing = [h for h in record.design.census if h not in record.design.strata]
        if missing:
            raise InputError(f"design.census names {missing[0]!r}, not a stratum of design.strata", file=source)


def _check_draws(record: RecordV2, source: str) -> None:
    """Every batch of a format-3 campaign is a recorded draw: pool, p and pi of one length, p in [0, 1],
    pi in (0, 1], the drawn pairs in the pool (that pi matches the draw rule: annotations/adaptive.py)."""
    for b in record.batches:
        key = f"batches[{b.batch}]"
        if b.pool is None or b.p is None or b.pi is None or b.prediction is None or b.seed is None:
            raise InputError(f"{key}: a format-3 batch records pool, p, pi, prediction and seed", file=source)
        if not len(b.pool) == len(b.p) == len(b.pi):
            raise InputError(f"{key}: pool, p and pi differ in length", file=source)
        for j, (i, p, pi) in enumerate(zip(b.pool, b.p, b.pi)):
            if not 0 <= p <= 1:
                raise InputError(f"{key}.p[{j}] = {p!r} is not in [0, 1]", file=source, id=i)
            if not 0 < pi <= 1:
                raise InputError(f"{key}.pi[{j}] = {pi!r} is not in (0, 1]: every pair of the pool has an "
                                 "inclusion probability > 0", file=source, id=i)
        if b.p_floor is not None and not 0 <= b.p_floor < 1:
            raise InputError(f"{key}.p_floor = {b.p_floor!r} is not in [0, 1)", file=source)
        if b.sampling not in (None, *SAMPLINGS):
            raise InputError(f"{key}.sampling = {b.sampling!r} is not one of {', '.join(SAMPLINGS)}", file=source)
        if b.sampling == "brewer" and len(b.risk) + len(b.control) != round(sum(b.pi)):
            raise InputError(f"{key}: a fixed-size (brewer) batch draws exactly sum(pi) = {round(sum(b.pi))} "
                             f"pairs, not {len(b.risk) + len(b.control)}", file=source)
        for name, ids in (("risk", b.risk), ("control", b.control)):
            counts = Counter(ids)
            twice = next((i for i in ids if counts[i] > 1), None)
            if twice is not None:  # a set comparison cannot see it; the estimate would count the pair twice
                raise InputError(f"{key}.{name} lists the same pair twice (edited?)", file=source, id=twice)
        pool = set(b.pool)
        outside = [i for i in [*b.risk, *b.control] if i not in pool]
        if outside:
            raise InputError(f"{key}: drawn pair not in the batch's pool", file=source, id=outside[0])
    drawn = 0
    for b in record.batches:
        fit = b.recalibration
        if fit is not None and (b.kind == "start" or not 0 <= fit.legal <= fit.verdicts <= drawn):
            raise InputError(f"batches[{b.batch}].recalibration: " + (
                "the start batch has no earlier verdict to be recalibrated on" if b.kind == "start" else
                f"{fit.verdicts} verdict(s), {fit.legal} legal, where earlier batches drew {drawn} pair(s)"),
                file=source)
        drawn += len(b.risk) + len(b.control)


@dataclass(frozen=True)
class Draw:
    """One batch of a format-3 campaign as a probability draw: its pool (ids, in the record's order), the
    prediction each pool pair was drawn and is estimated with, its inclusion probability, the pairs drawn.
    Whatever rule made the draw (linear, trade-off, a fixed-size design), π is what the record says."""
    batch: int
    kind: str
    pool: tuple
    p: np.ndarray
    pi: np.ndarray
    drawn: frozenset


@dataclass(frozen=True)
class CampaignDraws:
    """What a reader outside the annotations stage needs of a campaign: its population and every batch's draw."""
    source: str
    population: frozenset
    draws: tuple[Draw, ...]
    format: int


def campaigns_inside(folder: str | Path) -> list[Path]:
    """The direct subfolders of `folder` holding a campaign.json."""
    return sorted(p for p in Path(folder).iterdir() if p.is_dir() and (p / "campaign.json").is_file())


def check_campaign_folder(folder: str | Path) -> None:
    """A folder given as --campaign that holds no campaign.json is one line saying what a campaign
    folder is; the work folder given for its campaign folder names the one inside it."""
    folder = Path(folder)
    if not folder.is_dir() or (folder / "campaign.json").exists() or (folder / "campaign.json").is_symlink():
        return  # missing folder, or a campaign.json the strict reader judges
    inside = campaigns_inside(folder)
    hint = (f"; the campaign folder inside it is {inside[0]}: --campaign {inside[0]}" if len(inside) == 1 else
            f"; campaign folders inside it: {', '.join(map(str, inside))}" if inside else "")
    raise InputError("not a campaign folder (no campaign.json; `annotate push --campaign DIR --queue "
                     f"review_queue.csv` starts one in DIR){hint}", file=str(folder))


def read_draws(path: str | Path) -> CampaignDraws:
    """campaign.json (or the campaign folder holding it), checked like `annotate` checks it, as draws.
    A campaign recorded before probability draws (format 1 or 2) is one line: its batches have no π."""
    path = Path(path)
    if path.is_dir():
        check_campaign_folder(path)
        path = path / "campaign.json"
    data = read_json(path)
    check_record(data, str(path))
    for batch in data["batches"]:
        check_seal(batch, str(path))
    record = from_dict(RecordV1 if data["format"] == 1 else RecordV2, data, str(path))
    if record.format != 3:
        raise InputError(f"campaign format {record.format} records no probability draws (inclusion probabilities "
                         "per batch): start a new campaign (format 3) to estimate from it", file=str(path))
    population = frozenset(i for ids in record.design.strata.values() for i in ids)
    draws = tuple(Draw(b.batch, b.kind, tuple(b.pool), b.predicted(), np.asarray(b.pi, dtype=float),
                       frozenset([*b.risk, *b.control])) for b in record.batches)
    return CampaignDraws(str(path), population, draws, record.format)


def check_seal(batch: dict, source: str) -> None:
    """A sealed batch (`seal`) still is as drawn, else one line naming it: its p, p_floor or pool (which
    no seed re-derives), or its drawn pairs, were edited."""
    if batch.get("sealed") is not None and seal(batch) != batch["sealed"]:
        raise InputError(f"batches[{batch.get('batch')}] is not the batch as it was drawn: its p, p_floor or pool "
                         "were edited (its seal no longer matches)", file=source)


def seal(batch: dict) -> str:
    """sha256 of a batch's record as it was drawn (every key but `sealed`, canonical JSON): what cannot be
    re-derived from the seed (the predictions p, p_floor, the pool) is checked against it. Not a secret:
    it catches an edit, not a forger."""
    body = {k: v for k, v in batch.items() if k != "sealed"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
