"""The local engine: the map phase over all cores, one process per core, one part at a time each.

Peak memory is a few parts per process whatever the corpus size: workers read their input part from
disk and write their output part to disk; only paths and row counts cross the process boundary. The
context (the embedder) is built once per process by the pool's initializer.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

from .job import MapJob, Part, commit_part, map_part

_MAPPER = None


def _init(job: MapJob) -> None:
    global _MAPPER
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    _MAPPER = job.mapper()


def _exit_with_parent() -> None:
    """A killed driver takes its workers along (no orphan keeps mapping, nor holds its pipes)."""
    multiprocessing.connection.wait([multiprocessing.parent_process().sentinel])
    os._exit(1)


def _map_part(src: Path, dst: Path) -> Path:
    return map_part(_MAPPER, src, dst)


def run_map(job: MapJob, parts: list[Part], progress: Callable[[int], None], *, workers: int | None = None) -> None:
    """Spawned here, not earlier: a worker process starts in half a second."""
    if not parts:
        return
    workers = max(1, min(workers or os.cpu_count() or 1, len(parts)))
    # spawn: a clean interpreter per worker (the driver runs a progress thread; forking it is unsafe)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init, initargs=(job,)) as pool:
        queue, running = list(reversed(parts)), {}
        while queue or running:
            while queue and len(running) < 2 * workers:  # a bounded window: memory stays a few parts
                src, dst, rows = queue.pop()
                running[pool.submit(_map_part, src, dst)] = (dst, rows)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                dst, rows = running.pop(future)
                commit_part(future.result(), dst)
                progress(rows)
