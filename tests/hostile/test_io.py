"""Atomic outputs: all or nothing (one file, and one command's set of files), and readable by others
as any normal file would be."""

import json
import os
import signal
import stat

import pytest

from bbsard_audit.base import transactions
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import atomic_path, guard_outputs, sidecar_path, write_json, write_text
from bbsard_audit.base.transactions import MANIFEST, TXN_PREFIX, settle


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


# ---------------------------------------------------------------- transactions (docs/reliability.md)

def _killed_mid_command(root, writes: dict, *, after_commit_point: bool = False) -> None:
    """A child process writes `writes` under one guard and is SIGKILLed before (or just after) the
    commit point, as a crash would."""
    pid = os.fork()
    if pid == 0:
        try:
            if after_commit_point:
                transactions.merge_manifest = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
            with guard_outputs(root, command="x"):
                for name, text in writes.items():
                    write_text(root / name, text)
                if not after_commit_point:
                    os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    assert os.waitpid(pid, 0)[1] == signal.SIGKILL


def _previous_run(root):
    with guard_outputs(root, command="x"):
        write_text(root / "a.txt", "old a")
        write_text(root / "b.txt", "old b")


def test_a_killed_command_is_rolled_back_but_a_file_changed_since_is_left_alone(tmp_path):
    _previous_run(tmp_path)
    _killed_mid_command(tmp_path, {"a.txt": "new a", "b.txt": "new b", "c.txt": "new c"})
    assert (tmp_path / "a.txt").read_text() == "new a"  # the kill left a mix, until settled
    (tmp_path / "b.txt").write_text("the user's b")
    settle(tmp_path)
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["old a", "the user's b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "a.txt", "b.txt"]  # c.txt was new


def test_a_command_killed_after_its_commit_point_is_rolled_forward_and_a_later_edit_kept(tmp_path):
    _previous_run(tmp_path)
    _killed_mid_command(tmp_path, {"a.txt": "new a", "b.txt": "new b"}, after_commit_point=True)
    (tmp_path / "b.txt").write_text("the user's b")
    settle(tmp_path)
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["new a", "the user's b"]
    with guard_outputs(tmp_path, command="x"):  # a.txt is the command's own again
        write_text(tmp_path / "a.txt", "newer a")
    with pytest.raises(InputError, match="b.txt exists and was changed since"):  # the edit is never replaced
        with guard_outputs(tmp_path, command="x"):
            write_text(tmp_path / "b.txt", "newer b")
    assert (tmp_path / "b.txt").read_text() == "the user's b"


def test_settle_deletes_only_its_own_transaction_folders(tmp_path):
    mine = tmp_path / f"{TXN_PREFIX}notes"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a journal")
    empty = tmp_path / f"{TXN_PREFIX}killed-at-birth"
    empty.mkdir()
    settle(tmp_path)
    assert (mine / "notes.txt").read_text() == "not a journal" and not empty.exists()


def test_a_failing_command_undoes_its_writes(tmp_path):
    _previous_run(tmp_path)
    with pytest.raises(InputError):
        with guard_outputs(tmp_path, command="x"):
            write_text(tmp_path / "a.txt", "new a")
            raise InputError("bad row")
    assert (tmp_path / "a.txt").read_text() == "old a"
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "a.txt", "b.txt"]


def test_an_unrecorded_output_is_replaced_only_when_its_sidecar_vouches_for_it(tmp_path):
    """A folder an older version wrote (no manifest): a file whose sidecar records its sha256 is
    bbsard-audit's own unchanged output and may be replaced; one that no longer matches, or a sidecar
    of such a file, is not."""
    from bbsard_audit.base.io import digest_of

    def legacy(name: str, text: str, sha: str | None = None) -> None:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        write = {"output": name, "tool": "bbsard-audit", "files": {name: {"rows": 1, "sha256": sha or digest_of(path)}}}
        sidecar_path(path).write_text(json.dumps(write), encoding="utf-8")

    legacy("x.csv", "a\n1\n")
    legacy("y.csv", "a\n2\n", sha="0" * 64)  # edited after writing
    with guard_outputs(tmp_path, command="x"):
        write_text(tmp_path / "x.csv", "a\n3\n")
        write_text(tmp_path / "x.meta.json", "{}\n")
    assert (tmp_path / "x.csv").read_text(encoding="utf-8") == "a\n3\n"
    for name in ("y.csv", "y.meta.json"):
        with pytest.raises(InputError, match=f"{name} exists and was not written by bbsard-audit"):
            with guard_outputs(tmp_path, command="x"):
                write_text(tmp_path / name, "b\n")
    assert (tmp_path / "y.csv").read_text(encoding="utf-8") == "a\n2\n"


def _other_command_writes(folder, name: str, text: str) -> None:
    """`audit calibrate` commits `name` (with a sidecar vouching for it) while another command runs."""
    from bbsard_audit.base.io import digest_of
    with guard_outputs(folder, command="audit calibrate"):
        sha = digest_of(write_text(folder / name, text))
        write_text(folder / name.replace(".json", ".meta.json"),
                   json.dumps({"tool": "bbsard-audit", "files": {name: {"sha256": sha}}}))


def test_a_file_another_command_committed_while_this_one_ran_is_never_replaced(tmp_path):
    """`audit learn` and `audit calibrate` at once into one folder: learn read the folder's manifest
    before calibrate committed error_model.json, took it for an old unrecorded output its sidecar
    vouched for, and replaced it (both exit 0). The manifest is read again before a write."""
    with pytest.raises(InputError, match="error_model.json exists and was written by `bbsard-audit audit calibrate`"):
        with guard_outputs(tmp_path, command="audit learn"):
            _other_command_writes(tmp_path, "error_model.json", "calibrate's")
            write_text(tmp_path / "error_model.json", "learn's")
    assert (tmp_path / "error_model.json").read_text() == "calibrate's"


def test_a_commit_between_the_check_and_the_rename_wins(tmp_path):
    """Compare-and-swap: the other command commits after this one checked the name, before its rename."""
    with pytest.raises(InputError, match="was written by `bbsard-audit audit calibrate`"):
        with guard_outputs(tmp_path, command="audit learn"):
            write_text(tmp_path / "learned.txt", "mine")
            with atomic_path(tmp_path / "error_model.json") as tmp:
                tmp.write_text("learn's")
                _other_command_writes(tmp_path, "error_model.json", "calibrate's")
    assert (tmp_path / "error_model.json").read_text() == "calibrate's"
    assert not (tmp_path / "learned.txt").exists()  # the refused command left nothing
