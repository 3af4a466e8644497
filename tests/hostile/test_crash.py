"""Crash consistency, concurrency and full disks, with the real CLI in real processes.

Each multi-file command (eval, release, pull) is killed with SIGKILL before each of its file
operations in turn (`BBSARD_AUDIT_FAULT=kill:N`, counted in bbsard_audit.base.transactions), over a folder holding
the previous run's outputs. After every kill the folder must hold the complete previous set or the
complete new set (sha256 against clean runs), once the next reader (`report`) has settled it; a
rerun must complete and give the new set. The same loop with `enospc:N` must give one line, exit 2
and the previous set. Runs are forked from this process (the CLI's imports are shared, so a run
costs only its own work) and killed for real.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from report_fixtures import write_workdir
from campaign_fixtures import campaign  # noqa: F401  (the fixture)
from release_fixtures import make_dataset, write_review
from typer.testing import CliRunner

from bbsard_audit.base import transactions
from bbsard_audit.annotations.simulate import annotation_result
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.io import digest_of, guard_outputs, write_text
from bbsard_audit.app.report.loaders import load_workdir
from bbsard_audit.base.transactions import FAULT_ENV, MANIFEST, TXN_PREFIX
from bbsard_audit.base.contracts.audit import Layout

EVAL_TABLES = ("metrics", "ranking_shift", "pairwise", "fragility", "fr_nl_gap", "null_model", "per_query")


def spawn(args: list, cwd: Path, fault: str | None = None) -> int:
    """Fork a child that runs the CLI (stderr in `cwd/cli.log`) and exits; return its pid."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.chdir(cwd)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            os.dup2(os.open(cwd / "cli.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            transactions._OPS = 0
            os.environ.pop(FAULT_ENV, None)
            if fault:
                os.environ[FAULT_ENV] = fault
            try:
                app(args=[str(a) for a in args], prog_name="bbsard-audit")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - reported through the exit code and the log
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def cli(args: list, cwd: Path, fault: str | None = None) -> int:
    """The CLI run in a forked child: its exit code, or minus the signal that ended it."""
    pid = spawn(args, cwd, fault)
    deadline = time.monotonic() + 120  # a hung child fails the test instead of the suite
    while not (done := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"`bbsard-audit {' '.join(map(str, args))}` hung")
        time.sleep(0.005)
    return os.waitstatus_to_exitcode(done[1])


def digests(folder: Path, names) -> dict[str, str | None]:
    return {n: digest_of(folder / n) if (folder / n).exists() else None for n in names}


def leftovers(folder: Path) -> list[str]:
    """What a killed run may have left that belongs to no set: transactions, temp files."""
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(TXN_PREFIX) or p.name.endswith(".tmp"))


def sidecars_match(folder: Path) -> None:
    """Every sidecar describes the file next to it (same generation)."""
    for meta in folder.glob("*.meta.json"):
        for name, record in (json.loads(meta.read_text()).get("files") or {}).items():
            if (folder / name).is_file():
                assert digest_of(folder / name) == record["sha256"], f"{meta.name} does not describe {name}"


def owned(folder: Path) -> None:
    """Every file the manifest records is there as recorded (so a rerun may replace it)."""
    records = json.loads((folder / MANIFEST).read_text())["files"]
    for name, record in records.items():
        assert (folder / name).exists() and digest_of(folder / name) == record["sha256"], name


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.name != MANIFEST)


def crash_at_every_step(run, folder: Path, before: Path, clean: Path, names: list[str], settle_with,
                        rerun_every=8) -> int:
    """Kill `run` before each of its file operations in turn over a copy of `before`; after each
    kill, `settle_with` (a reader) must leave the whole old set (as in `before`) or the whole new
    set (as in `clean`, a clean run): the same `names` digests, the same listing, nothing left over,
    every file as the manifest records it; a rerun (every `rerun_every`-th kill) completes and gives
    the new set. Returns how many file operations a complete run made."""
    old, new = digests(before, names), digests(clean, names)
    n = 1
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(before, folder, symlinks=True)
        code = run(f"kill:{n}")
        log = folder.parent / "cli.log"
        if code == 0:
            assert digests(folder, names) == new and listing(folder) == listing(clean)
            return n - 1
        assert code == -signal.SIGKILL, (n, log.read_text())
        assert settle_with() == 0, (n, log.read_text())
        assert digests(folder, names) in (old, new), f"killed before file operation {n}: a mix of old and new"
        assert listing(folder) in (listing(before), listing(clean)), n
        assert leftovers(folder) == [], n
        sidecars_match(folder)
        owned(folder)
        if n % rerun_every == 1:
            assert run(None) == 0, (n, log.read_text())
            assert digests(folder, names) == new and listing(folder) == listing(clean)
        n += 1
        assert n < 400


def full_disk_at_every_step(run, folder: Path, before: Path, old: dict, total: int, step: int = 1) -> None:
    """A full disk at each file operation: one line, exit 2, the previous set untouched (once the
    new set is committed, only deleting the transaction folder is left, which the next reader does)."""
    for n in range(1, total + 1, step):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(before, folder, symlinks=True)
        listing = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
        code = run(f"enospc:{n}")
        output = (folder.parent / "cli.log").read_text()
        if code == 0 and n > total - 2:  # the transaction folder's cleanup, after the commit: left to settle
            continue
        assert code == 2, (n, output)
        assert output.startswith("error: cannot write ") and "no space left on device" in output, (n, output)
        assert "Traceback" not in output and len(output.strip().splitlines()) == 1, (n, output)
        assert digests(folder, old) == old, n
        assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == listing, n


def report(cwd: Path, workdir: str):
    """The report's reader after each kill: its loader each time (in this process), the whole
    `report` command every 25th time."""
    calls = []

    def read() -> int:
        calls.append(1)
        if len(calls) % 25 == 1:
            return cli(["report", "--workdir", workdir, "--out", "rep"], cwd)
        load_workdir(cwd / workdir)
        return 0
    return read


def warm(monkeypatch, cwd: Path, args: list) -> None:
    """Run the command once in this process, so forked runs share its imports."""
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- eval

def _eval_inputs(root: Path) -> None:
    rng = random.Random(0)
    qids, docs = range(1, 31), range(100, 160)
    (root / "qrels.trec").write_text("".join(f"{q} 0 {d} 1\n" for q in qids for d in rng.sample(docs, 2)))
    for variant in ("old", "new"):
        for system in ("a", "b"):
            (root / f"{system}_{variant}.trec").write_text("".join(
                f"{q} Q0 {d} {r} {100 - r} {system}\n" for q in qids for r, d in enumerate(rng.sample(docs, 20), 1)))
    (root / "verdicts.csv").write_text("id,verdict,corrected_nl\n" + "".join(
        f"{q},{'legal' if q % 4 == 0 else 'correct'},\n" for q in list(qids)[:20]))


def _eval_args(variant: str, out: str) -> list[str]:
    return ["eval", "--run", f"a=a_{variant}.trec", "--run", f"b=b_{variant}.trec", "--qrels", "qrels.trec",
            "--verdicts", "verdicts.csv", "--k", "ndcg@10,recall@10", "--resamples", "1000", "--null-draws", "5",
            "--out", out]


def test_eval_killed_at_any_file_operation_leaves_old_or_new_set_and_reruns(tmp_path, monkeypatch):
    _eval_inputs(tmp_path)
    tables = [f"{t}.csv" for t in EVAL_TABLES]
    warm(monkeypatch, tmp_path, _eval_args("old", "before"))
    warm(monkeypatch, tmp_path, ["report", "--workdir", "before", "--out", "rep"])
    assert cli(_eval_args("new", "clean"), tmp_path) == 0
    old, new = digests(tmp_path / "before", tables), digests(tmp_path / "clean", tables)
    assert all(old[t] != new[t] for t in ("metrics.csv", "fragility.csv", "pairwise.csv"))
    run = lambda fault: cli(_eval_args("new", "work"), tmp_path, fault)  # noqa: E731
    total = crash_at_every_step(run, tmp_path / "work", tmp_path / "before", tmp_path / "clean", tables,
                                report(tmp_path, "work"))
    assert total > 3 * len(tables), total  # every write was a kill point
    full_disk_at_every_step(run, tmp_path / "work", tmp_path / "before", old, total, step=5)






# ---------------------------------------------------------------- release

RELEASE_FILES = [f"questions_{lang}_{split}.csv" for lang in ("fr", "nl") for split in ("train", "test")] + [
    "articles_fr.csv", "articles_nl.csv", "CHANGELOG.csv", "README.md", "hf"]


def test_release_killed_at_any_file_operation_leaves_old_or_new_release_and_reruns(tmp_path, monkeypatch):
    """Old release: train + test; new release: test only, another policy (train files deleted, every
    other file and hf/ replaced). No stray copy beside the folder, ever."""
    make_dataset(tmp_path / "src")
    make_dataset(tmp_path / "src2")
    for lang in ("fr", "nl"):
        (tmp_path / "src2" / f"questions_{lang}_train.csv").unlink()
    verdicts = write_review(tmp_path / "work")
    pd.read_csv(verdicts).query("id <= 5").to_csv(tmp_path / "work" / "verdicts5.csv", index=False)

    def args(src: str, out: str, *more: str) -> list[str]:
        return ["release", "--verdicts", "work/verdicts5.csv", "--dataset", src, "--out", out, *more]

    warm(monkeypatch, tmp_path, args("src", "before"))
    assert cli(args("src2", "clean", "--policy", "keep-marked"), tmp_path) == 0
    old, new = digests(tmp_path / "before", RELEASE_FILES), digests(tmp_path / "clean", RELEASE_FILES)
    assert new["questions_fr_train.csv"] is None and all(old[n] != new[n] for n in ("README.md", "hf"))
    siblings = sorted(p.name for p in tmp_path.iterdir())

    def read() -> int:  # the release's reader: the dataset loader
        load_dataset(str(tmp_path / "rel"))
        return 0

    run = lambda fault: cli(args("src2", "rel", "--policy", "keep-marked"), tmp_path, fault)  # noqa: E731
    total = crash_at_every_step(run, tmp_path / "rel", tmp_path / "before", tmp_path / "clean", RELEASE_FILES, read)
    assert total > 30, total  # every write, move and removal was a kill point
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*siblings, "rel"])  # nothing beside it
    full_disk_at_every_step(run, tmp_path / "rel", tmp_path / "before", old, total, step=4)


# ---------------------------------------------------------------- pull

PULL_FILES = ["verdicts.csv", "annotations_raw.csv", "error_spans.csv"]


def _export(path: Path, annotations: list[tuple[int, int, str, str]]) -> Path:
    tasks = {}
    for qid, ann_id, who, verdict in annotations:
        tasks.setdefault(qid, {"id": qid * 10, "data": {"question_id": qid}, "annotations": []})["annotations"].append(
            {"id": ann_id, "completed_by": {"id": ann_id % 3 + 1, "email": who}, "was_cancelled": False,
             "created_at": "2026-01-02T09:00:00Z", "updated_at": f"2026-01-02T10:{ann_id % 60:02d}:00Z",
             "result": annotation_result(verdict, gold_labels_apply="yes", layout=Layout())})
    path.write_text(json.dumps(list(tasks.values())))
    return path


def test_pull_killed_at_any_file_operation_switches_raw_and_verdicts_together(tmp_path, monkeypatch):
    first = _export(tmp_path / "first.json", [(q, q, "anna@x", "correct") for q in range(1, 6)])
    second = _export(tmp_path / "second.json", [(q, 100 + q, "bart@x", "legal" if q % 2 else "correct")
                                                for q in range(3, 9)])

    def pull(export: Path, out: str) -> list[str]:
        return ["annotate", "pull", "--from-file", export.name, "--out", f"{out}/verdicts.csv"]

    (tmp_path / "before").mkdir()
    (tmp_path / "clean").mkdir()
    warm(monkeypatch, tmp_path, pull(first, "before"))
    shutil.copytree(tmp_path / "before", tmp_path / "clean", dirs_exist_ok=True)
    assert cli(pull(second, "clean"), tmp_path) == 0
    old, new = digests(tmp_path / "before", PULL_FILES), digests(tmp_path / "clean", PULL_FILES)
    assert old["annotations_raw.csv"] != new["annotations_raw.csv"] and old["verdicts.csv"] != new["verdicts.csv"]

    run = lambda fault: cli(pull(second, "work"), tmp_path, fault)  # noqa: E731
    total = crash_at_every_step(run, tmp_path / "work", tmp_path / "before", tmp_path / "clean", PULL_FILES,
                                lambda: cli(["annotate", "agreement", "--raw", "work/annotations_raw.csv",
                                             "--out", "agr"], tmp_path), rerun_every=3)
    assert total > 3 * 6, total
    full_disk_at_every_step(run, tmp_path / "work", tmp_path / "before", old, total)


def test_pull_keeps_an_edited_raw_file_and_merges_it_instead_of_refusing(tmp_path, monkeypatch):
    """annotations_raw.csv edited by hand since pull wrote it (an annotation only that file holds):
    the next pull merges it, keeps the edited version under a name of its own, loses nothing."""
    monkeypatch.chdir(tmp_path)
    _export(tmp_path / "first.json", [(q, q, "anna@x", "correct") for q in range(1, 4)])
    _export(tmp_path / "second.json", [(4, 104, "bart@x", "legal")])
    runner = CliRunner()
    assert runner.invoke(app, ["annotate", "pull", "--from-file", "first.json", "--out", "verdicts.csv"]).exit_code == 0
    raw = tmp_path / "annotations_raw.csv"
    edited = raw.read_text() + "9,90,,carla@x,minor,,yes,2026-01-03T09:00:00.000000Z,\n"
    raw.write_text(edited)
    result = runner.invoke(app, ["annotate", "pull", "--from-file", "second.json", "--out", "verdicts.csv"])
    assert result.exit_code == 0, result.output
    kept = [p for p in tmp_path.glob("annotations_raw.kept-*.csv")]
    assert len(kept) == 1 and kept[0].read_text() == edited and f"kept as {kept[0].name}" in result.output
    merged = pd.read_csv(raw)
    assert {(1, "anna@x"), (9, "carla@x"), (4, "bart@x")} <= set(zip(merged["id"], merged["annotator"]))
    assert 9 in set(pd.read_csv(tmp_path / "verdicts.csv")["id"])
    again = runner.invoke(app, ["annotate", "pull", "--from-file", "second.json", "--out", "verdicts.csv"])
    assert again.exit_code == 0 and "kept as" not in again.output  # now pull's own file again


# ---------------------------------------------------------------- concurrency

def test_two_commands_in_one_folder_keep_each_others_ownership_records(tmp_path):
    """Interleaved: `a` starts, `b` runs to the end, then `a` finishes; both records survive, so
    each command may replace its own file on a rerun."""
    with guard_outputs(tmp_path, command="a"):
        with guard_outputs(tmp_path, command="b"):
            write_text(tmp_path / "b.txt", "b")
        write_text(tmp_path / "a.txt", "a")
    records = json.loads((tmp_path / MANIFEST).read_text())["files"]
    assert {k: v["command"] for k, v in records.items()} == {"a.txt": "a", "b.txt": "b"}
    for command in ("a", "b"):
        with guard_outputs(tmp_path, command=command):
            write_text(tmp_path / f"{command}.txt", "again")


def test_a_second_writer_of_the_same_output_is_refused_naming_the_first(tmp_path, monkeypatch):
    """A real eval stopped half-way through its writes (SIGSTOP): another eval into the same folder
    is one line naming the first and its pid; another command writing there meanwhile completes; a
    reader of the folder waits for the eval instead of reading a mix; the eval, resumed, completes,
    and every command's records are in the manifest."""
    _eval_inputs(tmp_path)
    write_workdir(tmp_path / "w")
    warm(monkeypatch, tmp_path, _eval_args("old", "shared"))
    warm(monkeypatch, tmp_path, ["report", "--workdir", "shared", "--out", "rep"])
    old_metrics = digest_of(tmp_path / "shared" / "metrics.csv")
    writer = spawn(_eval_args("new", "shared"), tmp_path, "stop:30")
    try:
        deadline = time.monotonic() + 60
        while not os.waitpid(writer, os.WUNTRACED | os.WNOHANG)[0]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert cli(_eval_args("new", "shared"), tmp_path) == 2
        message = (tmp_path / "cli.log").read_text()
        assert f"is being written right now by `bbsard-audit eval` (pid {writer})" in message
        assert len(message.strip().splitlines()) == 1
        assert cli(["annotate", "export-tasks", "--audit", "w/audit.csv", "--out", "shared/tasks.json"], tmp_path) == 0
        reader = spawn(["report", "--workdir", "shared", "--out", "rep"], tmp_path)
        time.sleep(4)  # a warm report takes about 1 s
        assert os.waitpid(reader, os.WNOHANG)[0] == 0  # still waiting for the eval to finish
    finally:
        os.kill(writer, signal.SIGCONT)
    assert os.waitstatus_to_exitcode(os.waitpid(writer, 0)[1]) == 0
    assert os.waitstatus_to_exitcode(os.waitpid(reader, 0)[1]) == 0
    assert digest_of(tmp_path / "shared" / "metrics.csv") != old_metrics
    records = json.loads((tmp_path / "shared" / MANIFEST).read_text())["files"]
    assert records["tasks.json"]["command"] == "annotate export-tasks" and records["metrics.csv"]["command"] == "eval"
    assert cli(_eval_args("new", "shared"), tmp_path) == 0
    assert cli(["annotate", "export-tasks", "--audit", "w/audit.csv", "--out", "shared/tasks.json"], tmp_path) == 0


# ---------------------------------------------------------------- full disk, in process

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES], ids=errno.errorcode.get)
def test_a_full_or_read_only_disk_is_one_line_and_keeps_the_old_file(tmp_path, monkeypatch, code):
    """The real OSError as the kernel raises it from a write (root ignores chmod, so it is injected
    where the bytes are written): one line naming the file, exit 2, the old outputs untouched."""
    _eval_inputs(tmp_path)
    warm(monkeypatch, tmp_path, _eval_args("old", "out"))
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    real = pd.DataFrame.to_csv

    def failing(self, path=None, *args, **kwargs):
        if path is not None and "fragility" in str(path):
            raise OSError(code, os.strerror(code), str(path))
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing)
    result = CliRunner().invoke(app, _eval_args("new", "out"))
    reason = os.strerror(code)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == f"error: cannot write out/fragility.csv: {reason[0].lower()}{reason[1:]}"
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


@pytest.mark.parametrize("args", [
    ["report", "--workdir", "w", "--out", "o"],
    ["annotate", "agreement", "--raw", "w/annotations_raw.csv", "--out", "o"],
    ["audit", "calibrate", "--audit", "w/audit.csv", "--verdicts", "w/verdicts.csv", "--out", "o"],
    ["annotate", "export-tasks", "--audit", "w/audit.csv", "--out", "o/tasks.json"],
    ["annotate", "estimate", "--audit", "w/audit.csv", "--queue", "w/review_queue.csv", "--verdicts",
     "w/verdicts.csv", "--out", "o/estimate.json"],
], ids=lambda args: " ".join(args[:2]))
def test_every_writer_says_one_line_on_a_full_disk_and_keeps_its_previous_outputs(tmp_path, monkeypatch, args):
    """Other writers, in process: a full disk at each of their file operations in turn (every 5th
    for the report, whose rendering takes seconds)."""
    monkeypatch.chdir(tmp_path)
    write_workdir(tmp_path / "w")
    runner = CliRunner()
    assert runner.invoke(app, args).exit_code == 0
    before = {p.relative_to(tmp_path / "o").as_posix(): p.read_bytes() for p in (tmp_path / "o").rglob("*")}
    for n in range(1, 100, 5 if args[0] == "report" else 1):
        monkeypatch.setenv(FAULT_ENV, f"enospc:{n}")
        monkeypatch.setattr(transactions, "_OPS", 0)
        result = runner.invoke(app, args)
        if result.exit_code == 0:
            break
        assert result.exit_code == 2 and "Traceback" not in result.output, (n, result.output)
        assert result.stderr.strip().splitlines()[-1].startswith("error: cannot write "), (n, result.stderr)
        assert result.stderr.strip().endswith(": no space left on device"), (n, result.stderr)
        now = {p.relative_to(tmp_path / "o").as_posix(): p.read_bytes() for p in (tmp_path / "o").rglob("*")}
        assert now == before, n
    assert n > 5, n  # the loop went through the command's writes until the last cleanup step


def _in_child(work, fault: str | None) -> int:
    """Run `work()` in a forked child with `fault` armed: its exit code, or minus the signal that ended it."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            transactions._OPS = 0
            os.environ.pop(FAULT_ENV, None)
            if fault:
                os.environ[FAULT_ENV] = fault
            work()
            code = 0
        except BaseException:  # noqa: BLE001 - the exit code says it
            code = 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_next_batch_killed_at_any_file_operation_leaves_the_old_or_the_new_campaign(campaign, tmp_path):
    """`push --next` killed (or out of disk) between writing review_queue.csv and campaign.json left a
    campaign that refused every later push, or queued pairs no batch records: the save is one transaction."""
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import read_audit

    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    before, clean = tmp_path / "before", tmp_path / "clean"
    shutil.copytree(camp, before)

    def next_batch(folder: Path):
        return lambda: (state := Campaign.load(folder), state.add_batch(read_audit(audit), audit, 8, set()),
                        state.save())

    shutil.copytree(before, clean)
    assert _in_child(next_batch(clean), None) == 0
    data = ("campaign.json", "review_queue.csv")  # their sidecars' time stamps may or may not change
    old, new = digests(before, data), digests(clean, data)
    assert not set(old.values()) & set(new.values())
    n = 1
    while True:
        shutil.rmtree(camp)
        shutil.copytree(before, camp)
        code = _in_child(next_batch(camp), f"kill:{n}")
        if code == 0:
            break
        assert code == -signal.SIGKILL, n
        state = Campaign.load(camp)  # the next push reads a whole campaign: settled, no refusal
        now = digests(camp, data)  # the new set as a clean run's, but for its time stamps
        assert now == old or not set(now.values()) & set(old.values()), f"killed before file operation {n}: a mix"
        assert set(state.queue["batch"]) == set(range(len(state.record["batches"]))) == ({0} if now == old else {0, 1})
        sidecars_match(camp)
        assert leftovers(camp) == [], n
        assert _in_child(next_batch(camp), None) == 0, n  # and the next push goes on
        n += 1
    assert n > 6, n
    for k in range(1, n):  # a full disk at each operation: one line, the previous campaign
        shutil.rmtree(camp)
        shutil.copytree(before, camp)
        code = _in_child(next_batch(camp), f"enospc:{k}")
        assert code == 2 and digests(camp, data) == old or code == 0 and k >= n - 2, k
