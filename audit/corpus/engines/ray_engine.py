"""The Ray engine: a Ray Data dataset of the pending parts, `map_batches` over an actor pool of a
callable class that runs the same map function as the local engine (the context, and so the
embedder, is built once per actor), one part per call; the driver commits each finished part.

The actors read their input part and write their output part themselves (only paths travel through
the object store), so on a cluster the output folder must be on storage every node sees (NFS, a
shared volume), as for any Ray Data file read. Ray Data's own read_parquet is not used: its path
resolution imports fsspec's HTTP filesystem from several threads at once, which fails at random
where aiohttp is absent (ray 2.60).

`address` None starts a local Ray (all cores of this machine); `--ray-address ADDR` joins a cluster
started with `ray start --head` (docs/scale.md). Ray is imported here only (the `scale` extra).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from bbsard_audit.base.errors import InputError

from .job import MapJob, Part, commit_part, map_part


class _Mapper:
    """One actor of the pool: maps the parts of a batch of (src, dst) rows, returns their temp files."""

    def __init__(self, job: MapJob) -> None:
        self.map = job.mapper()

    def __call__(self, batch: pa.Table) -> pa.Table:
        tmps = [str(map_part(self.map, Path(src), Path(dst)))
                for src, dst in zip(batch["src"].to_pylist(), batch["dst"].to_pylist())]
        return batch.append_column("tmp", pa.array(tmps, pa.string()))


def _probe(address: str) -> None:
    """Fail at once when nothing listens at host:port (ray.init would retry for a minute)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        host, port = parts.hostname, parts.port or (10001 if address.startswith("ray://") else 6379)
        socket.create_connection((host, port), timeout=3).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise InputError(f"cannot reach the Ray cluster ({why}); start one with `ray start --head` "
                         "(docs/scale.md) or leave out --ray-address for a local Ray",
                         file=f"--ray-address {address}") from None


INSTALL = "pip install 'bbsard-audit[scale]'"


def require() -> None:
    """Ray Data is the `scale` extra: without it, one line saying how to install it (not an ImportError)."""
    try:
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise InputError(f"--engine ray needs Ray Data ({exc.name or 'ray'} is not installed): {INSTALL} "
                         "(docs/scale.md), or leave out --engine for the local one") from None


def connect(address: str | None, workers: int | None) -> None:
    """Start (or join) Ray once per process; an unreachable address is one line naming it."""
    import ray

    if ray.is_initialized():
        return
    if address and address != "auto":
        _probe(address)
    try:
        with _core_log_fatal_only():
            if address:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            else:
                ray.init(num_cpus=workers or os.cpu_count(), log_to_driver=False, logging_level="ERROR",
                         include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot reach the Ray cluster: {first}", file=f"--ray-address {address}") from None


@contextlib.contextmanager
def _core_log_fatal_only() -> Iterator[None]:
    """Every Ray Data actor pool makes Ray's C++ core print an ERROR line on a healthy run ("has
    constructor arguments in the object store", ray-project/ray#57733), so the driver's core log keeps
    FATAL only (failures still raise in Python); a user's own RAY_BACKEND_LOG_LEVEL wins. Ray announces
    the level on stderr as it starts: that one line is dropped, anything else ray.init prints is kept."""
    import sys
    import tempfile

    if "RAY_BACKEND_LOG_LEVEL" in os.environ:
        yield
        return
    os.environ["RAY_BACKEND_LOG_LEVEL"] = "fatal"
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().splitlines(keepends=True)
                    if b"Set ray log level from environment variable" not in line]
            os.write(2, b"".join(kept))


@contextlib.contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data's INFO and WARNING lines (execution plans, timings, 'progress bars disabled') would
    bury the command's own output; its errors still show. The logger's level is restored after."""
    import logging

    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class _Warm:
    def __call__(self, batch: pa.Table) -> pa.Table:
        return batch


def _warm_up() -> None:
    """A one-row job through an actor pool: Ray Data's planner, its per-cluster helper actors (stats,
    autoscaling coordinator, actor locations: ~1.5 s of start-up on a fresh Ray) are ready when the
    map begins. A failure here is left to the real map, which reports it."""
    import ray

    with contextlib.suppress(Exception):
        ray.data.from_items([{"warm": 0}]).map_batches(_Warm, batch_format="pyarrow", num_cpus=1,
                                                        compute=ray.data.ActorPoolStrategy(size=1)).materialize()


@contextlib.contextmanager
def started(job: MapJob, *, workers: int | None = None,
            address: str | None = None) -> Iterator[Callable[[list[Part], Callable[[int], None]], None]]:
    """Connect now (in this thread: a local Ray's processes live as long as the thread that started
    them), warm up in the background while the caller joins the corpus, then map."""
    require()
    import ray

    connect(address, workers)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = context.print_on_execution_start = False  # ours shows docs/s and ETA
    warming = threading.Thread(target=_warm_up, name="ray-warm-up", daemon=True)

    def map_parts(parts: list[Part], progress: Callable[[int], None]) -> None:
        warming.join()
        if not parts:
            return
        pool = max(1, min(workers or int(ray.cluster_resources().get("CPU", 1)), len(parts)))
        ds = ray.data.from_items([{"src": str(src), "dst": str(dst), "rows": rows} for src, dst, rows in parts],
                                 override_num_blocks=len(parts))
        ds = ds.map_batches(_Mapper, fn_constructor_args=(job,), batch_format="pyarrow", batch_size=1,
                            compute=ray.data.ActorPoolStrategy(size=pool), num_cpus=1)
        for done in ds.iter_rows():
            commit_part(Path(done["tmp"]), Path(done["dst"]))
            progress(done["rows"])

    with _quiet_ray_data():  # before the warm-up logs anything
        warming.start()
        try:
            yield map_parts
        finally:
            warming.join()
