"""What the driver and every engine share: the `MapJob` a worker runs, the part files it maps and the
driver's commit of each finished part. Below the engines so that they import it, not the package."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from bbsard_audit.base.transactions import fault_point


@dataclass(frozen=True)
class MapJob:
    """What every worker needs, picklable: the map function and how to build its context (once per
    worker: an embedder is loaded there, never shipped)."""

    map_batch: Callable[[pa.Table, object], pa.Table]
    make_context: Callable[[], object]

    def mapper(self) -> Callable[[pa.Table], pa.Table]:
        ctx = self.make_context()

        def run(batch: pa.Table) -> pa.Table:
            out = self.map_batch(batch, ctx)
            if out.num_rows != batch.num_rows or not out.column(0).equals(batch.column(0)):
                raise RuntimeError("map_batch must return one row per input row, in order, id first")
            return out
        return run


Part = tuple[Path, Path, int]
"""(input part, output part, rows)"""


def read_input(path: Path) -> pa.Table:
    return pq.read_table(path)


def write_part(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def read_part(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def map_part(mapper: Callable[[pa.Table], pa.Table], src: Path, dst: Path) -> Path:
    """Map one input part into a temporary file beside `dst` (the driver commits it)."""
    tmp = dst.with_name(f"{dst.name}.{os.getpid()}.tmp")
    write_part(mapper(read_input(src)), tmp)
    return tmp


def commit_part(tmp: Path, path: Path) -> None:
    fault_point()
    os.replace(tmp, path)
