"""The engines that run the map phase over the corpus's batch files: `local` (processes on this
machine) and `ray` (Ray Data, locally or on a cluster). Both get a `MapJob` and the pending
(input, output) part pairs, and give the same rows: a row's output depends on that row only.

A worker maps an input part to a temporary file beside its output; the driver renames it into place
(`commit_part`, a fault point for the crash tests), so a finished part is always complete.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator

from . import local, ray_engine
from .job import MapJob, Part, read_input, read_part

__all__ = ["MapJob", "read_input", "read_part", "started"]


@contextlib.contextmanager
def started(engine: str, job: MapJob, *, workers: int | None = None,
            ray_address: str | None = None) -> Iterator[Callable[[list[Part], Callable[[int], None]], None]]:
    """The engine, ready to map: `map_parts(parts, progress)` maps every pending part, calling
    `progress(rows)` after each. Entered before the corpus is joined: Ray connects at once (a bad
    --ray-address fails before any reading) and warms up while the driver joins."""
    if engine == "ray":
        with ray_engine.started(job, workers=workers, address=ray_address) as map_parts:
            yield map_parts
        return
    yield functools.partial(local.run_map, job, workers=workers)
