"""Atomic outputs: all or nothing, and readable by others as any normal file would be."""

import os
import stat

import pytest

from bbsard_audit.io import atomic_path, sidecar_path, write_json, write_text


def test_failed_write_leaves_no_file_and_keeps_the_old_one(tmp_path):
    target = tmp_path / "out.csv"
    write_text(target, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_outputs_follow_the_umask_not_mkstemp_0600(tmp_path):
    path = write_json(tmp_path / "x.json", {"a": 1})
    mode = stat.S_IMODE(os.stat(path).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_sidecar_name():
    assert sidecar_path("dir/audit.csv").name == "audit.meta.json"
    assert sidecar_path("dir/audit.parquet").name == "audit.meta.json"
