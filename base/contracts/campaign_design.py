"""campaign.json (`annotate push --campaign DIR`): the design of an adaptive review, read strictly.

Format 1 (before inclusion probabilities) is still read; format 2 fixes the strata over the whole
population at the start (every id in exactly one stratum) with the control sample drawn in them.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbsard_audit.base.errors import InputError

from .jsonfile import from_dict


@dataclass
class Batch:
    batch: int
    kind: str
    audit_sha256: str
    created: str
    risk: list[int]
    control: list[int]


@dataclass
class DesignV1:
    audit_sha256: str
    queue_sha256: str
    flagged: list[int]
    unflagged_strata: dict[str, list[int]]
    strata_from: str


@dataclass
class DesignV2:
    audit_sha256: str
    queue_sha256: str
    strata: dict[str, list[int]]  # every pair of the population, in exactly one stratum
    census: list[str]             # strata reviewed in full (the start risk queue)
    control: list[int]            # the probability sample (simple random within its stratum)


@dataclass
class RecordV1:
    format: int
    project: str
    started: str
    design: DesignV1
    batches: list[Batch]


@dataclass
class RecordV2:
    format: int
    project: str
    started: str
    design: DesignV2
    batches: list[Batch]


def check_record(data: object, source: str) -> None:
    """campaign.json's keys, types and design rules, or one line naming the file and the key / id."""
    version = data.get("format") if isinstance(data, dict) else None
    if version not in (1, 2):
        raise InputError("not a campaign file (format 1 or 2): key 'format'", file=source)
    record = from_dict(RecordV1 if version == 1 else RecordV2, data, source)
    if not record.batches or record.batches[0].kind != "start":
        raise InputError("batches[0] must be the start batch (kind 'start')", file=source)
    if version == 2:
        seen: dict[int, str] = {}
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
