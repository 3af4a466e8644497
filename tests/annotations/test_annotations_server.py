"""The annotation stage against a real Label Studio 1.23.2 server (real HTTP, real SQLite)."""

from __future__ import annotations

import json
import os
import socket
import uuid

import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.annotations import simulate
from bbsard_audit.annotations.connection import Connection
from bbsard_audit.annotations.project import ReviewProject
from bbsard_audit.annotations.server import LabelStudioServer
from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, build_tasks, read_audit
from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.audit import Layout
from conftest import write_review_files

# The first test of a session may build the private venv + template (minutes on a fresh machine).
pytestmark = [pytest.mark.label_studio, pytest.mark.timeout(1800)]
runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, ["annotate", *map(str, args)])


def title() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def review(tmp_path, toy_pairs):
    audit, queue = write_review_files(tmp_path / "run", toy_pairs, budget=8, control=8)
    return audit, queue


def _project(server, name) -> ReviewProject:
    return ReviewProject.open(Connection(server.url, server.token, retries=1, backoff=0.05), name, layout=Layout())


def test_push_repush_no_duplicates_and_prediction(ls_env, review):
    audit, queue = review
    name = title()
    first = cli("push", "--audit", audit, "--queue", queue, "--project", name)
    assert first.exit_code == 0, first.output
    assert "16 task(s) imported" in first.output
    again = cli("push", "--audit", audit, "--queue", queue, "--project", name)
    assert again.exit_code == 0, again.output
    assert "0 task(s) imported, 16 already there" in again.output
    tasks = _project(ls_env, name).export()
    qids = [t["data"]["question_id"] for t in tasks]
    assert len(qids) == 16 and len(set(qids)) == 16
    frame = read_audit(queue, QUEUE_COLUMNS).set_index("id")
    task = next(t for t in tasks if t["data"]["question_id"] == int(frame["risk"].idxmax()))
    pred = task["predictions"]
    # the export lists prediction ids; fetch one through the API to check what reviewers see
    client = _project(ls_env, name).client
    shown = client.predictions.get(pred[0] if isinstance(pred[0], int) else pred[0]["id"])
    assert shown.score == pytest.approx(frame["risk"].max())
    assert shown.model_version.startswith("audit")
    # Label Studio adopts the imported model_version as the project's: the guess is pre-filled
    assert client.projects.get(_project(ls_env, name).id).model_version == shown.model_version
    row = frame.loc[task["data"]["question_id"]]
    assert row["flagged"] and row["severity"] in ("high", "medium")
    assert shown.result[0]["value"]["choices"] == ["legal" if row["severity"] == "high" else "minor"]


def test_push_interrupted_midway_then_resumed(ls_server, review):
    audit, queue = review
    tasks = build_tasks(read_audit(queue, QUEUE_COLUMNS), model_version="audit-test", layout=Layout.of(queue))
    name = title()
    project = ReviewProject.open(Connection(ls_server.url, ls_server.token), name, create=True, layout=Layout())

    def crash_after_first_batch(n):
        raise KeyboardInterrupt  # the user hit Ctrl-C after one batch landed

    with pytest.raises(KeyboardInterrupt):
        project.push(tasks, batch_size=5, progress=crash_after_first_batch)
    assert len(project.export()) == 5
    resumed = project.push(tasks, batch_size=5)
    assert (resumed.created, resumed.already_there) == (11, 5)
    qids = sorted(t["data"]["question_id"] for t in project.export())
    assert qids == sorted(t["data"]["question_id"] for t in tasks)
    # a duplicate made outside bbsard-audit (e.g. a manual import in the UI) is reported, not added to
    project.client.projects.import_tasks(project.id, request=tasks[:1])
    again = project.push(tasks)
    assert (again.created, again.duplicates_on_server) == (0, [tasks[0]["data"]["question_id"]])


def test_two_annotators_pull_agreement_adjudication_and_deleted_task(ls_env, review, tmp_path):
    audit, queue = review
    name = title()
    assert cli("push", "--audit", audit, "--queue", queue, "--project", name).exit_code == 0
    project = _project(ls_env, name)
    ids = sorted(read_audit(queue, QUEUE_COLUMNS)["id"])
    a = {q: "legal" if i % 4 == 0 else "correct" for i, q in enumerate(ids)}
    b = {q: ("minor" if i % 5 == 1 else v) for i, (q, v) in enumerate(a.items())}
    assert simulate.annotate(project, "ann.a@example.org", a.get) == 16
    assert simulate.annotate(project, "ann.b@example.org", b.get,
                             corrected=lambda q: f"Gecorrigeerde vraag {q}?") == 16
    out = tmp_path / "pulled" / "verdicts.csv"
    res = cli("pull", "--project", name, "--out", out)
    assert res.exit_code == 0, res.output
    verdicts = pd.read_csv(out, keep_default_na=False).set_index("id")
    assert list(verdicts.columns) == ["verdict", "corrected_nl", "gold_labels_apply", "n_annotations",
                                      "annotators", "agreement_status", "adjudicated_by"]
    assert (verdicts["n_annotations"] == 2).all()
    assert verdicts.loc[ids[1], ["agreement_status", "adjudicated_by"]].tolist() == ["adjudicated", "rule:stricter"]
    assert verdicts.loc[ids[1], "verdict"] == "minor"  # correct vs minor: the stricter wins
    assert verdicts.loc[ids[1], "corrected_nl"] == f"Gecorrigeerde vraag {ids[1]}?"
    assert verdicts.loc[ids[0], ["verdict", "agreement_status", "gold_labels_apply"]].tolist() == \
        ["legal", "agreed", "no"]
    meta = json.loads((out.parent / "verdicts.meta.json").read_text())
    assert meta["adjudication"]["rule"] == "stricter"

    # agreement against a kappa computed by hand from the same verdict lists
    res = cli("agreement", "--raw", out.parent / "annotations_raw.csv", "--out", out.parent, "--n-boot", 200)
    assert res.exit_code == 0, res.output
    report = json.loads((out.parent / "agreement.json").read_text())
    kappa = next(s for s in report["scores"] if s["name"] == "cohen_kappa[verdict]")
    cats = ["correct", "minor", "legal"]
    n = len(ids)
    po = sum(a[q] == b[q] for q in ids) / n
    pe = sum((list(a.values()).count(c) / n) * (list(b.values()).count(c) / n) for c in cats)
    assert kappa["value"] == pytest.approx((po - pe) / (1 - pe))
    disagreements = pd.read_csv(out.parent / "disagreements.csv")
    assert sorted(disagreements["id"]) == sorted(q for q in ids if a[q] != b[q])

    # a third annotation resolves a disagreement by majority
    third = ids[1]
    simulate.annotate(project, "ann.c@example.org", lambda q: "correct" if q == third else None)
    assert cli("pull", "--project", name, "--out", out).exit_code == 0
    verdicts = pd.read_csv(out, keep_default_na=False).set_index("id")
    assert verdicts.loc[third, ["verdict", "adjudicated_by", "n_annotations"]].tolist() == \
        ["correct", "majority", 3]

    # a task deleted in the UI: its annotations survive the next pull, and push re-creates it
    gone = next(t for t in project.export() if t["data"]["question_id"] == ids[0])
    project.client.tasks.delete(str(gone["id"]))
    assert cli("pull", "--project", name, "--out", out).exit_code == 0
    verdicts = pd.read_csv(out, keep_default_na=False).set_index("id")
    assert verdicts.loc[ids[0], "verdict"] == "legal" and len(verdicts) == 16
    res = cli("push", "--audit", audit, "--queue", queue, "--project", name)
    assert "1 task(s) imported, 15 already there" in res.output

    status = cli("status", "--project", name)
    assert status.exit_code == 0, status.output
    assert "16 task(s)" in status.output and "ann.a@example.org: 15" in status.output


def test_reset_server_keeps_earlier_annotations_and_stopped_server_fails_cleanly(
        ls_factory, review, tmp_path, monkeypatch):
    audit, queue = review
    server = ls_factory()
    monkeypatch.setenv("LABEL_STUDIO_URL", server.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", server.token)
    monkeypatch.setenv("BBSARD_AUDIT_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    assert cli("push", "--audit", audit, "--queue", queue, "--project", "reset-me").exit_code == 0
    project = _project(server, "reset-me")
    simulate.annotate(project, "early@example.org", lambda q: "legal")
    out = tmp_path / "v" / "verdicts.csv"
    assert cli("pull", "--project", "reset-me", "--out", out).exit_code == 0
    before = out.read_bytes()

    # server stopped mid-run: one line, exit 2, nothing (half-)written
    server.stop()
    res = cli("pull", "--project", "reset-me", "--out", out, "--retries", "1")
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "cannot reach Label Studio" in res.output
    assert "Traceback" not in res.output
    assert out.read_bytes() == before
    assert sorted(p.name for p in out.parent.iterdir()) == [  # + the ownership manifest (docs/reliability.md)
        ".bbsard-audit-outputs.json", "annotations_raw.csv", "annotations_raw.meta.json", "error_spans.csv",
        "error_spans.meta.json", "verdicts.csv", "verdicts.meta.json"]

    # Label Studio reset (a fresh data dir): a new reviewer annotates; the early ones stay
    fresh = ls_factory()
    monkeypatch.setenv("LABEL_STUDIO_URL", fresh.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", fresh.token)
    assert cli("push", "--audit", audit, "--queue", queue, "--project", "reset-me").exit_code == 0
    simulate.annotate(_project(fresh, "reset-me"), "late@example.org", lambda q: "correct")
    assert cli("pull", "--project", "reset-me", "--out", out).exit_code == 0
    raw = pd.read_csv(out.parent / "annotations_raw.csv")
    assert sorted(raw["annotator"].unique()) == ["early@example.org", "late@example.org"]
    assert len(raw) == 32
    fresh.stop()


def test_wrong_token_and_personal_access_token(ls_server, ls_env, review, tmp_path, monkeypatch):
    audit, queue = review
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    res = cli("push", "--audit", audit, "--queue", queue, "--project", title())
    assert res.exit_code == 2
    assert "rejected the API key (HTTP 401)" in res.output and res.output.count("\n") == 1
    out = tmp_path / "w" / "verdicts.csv"
    assert cli("pull", "--project", "x-y-z", "--out", out).exit_code == 2
    assert not out.parent.exists()

    # a personal access token (JWT refresh token; enabled by default in 1.23) works like the
    # legacy token: the SDK exchanges it for short-lived access tokens
    pat = Connection(ls_server.url, ls_server.token).client().tokens.create().token
    assert pat.count(".") == 2
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", pat)
    name = title()
    res = cli("push", "--audit", audit, "--queue", queue, "--project", name)
    assert res.exit_code == 0, res.output
    assert pat not in res.output and ls_server.token not in res.output

    # connection from a config file alone (no environment variables)
    monkeypatch.delenv("LABEL_STUDIO_URL")
    monkeypatch.delenv("LABEL_STUDIO_API_KEY")
    cfg = tmp_path / "ls.toml"
    cfg.write_text(f'[label_studio]\nurl = "{ls_server.url}"\napi_key = "{ls_server.token}"\n')
    res = cli("status", "--project", name, "--config", cfg)
    assert res.exit_code == 0 and "16 task(s)" in res.output, res.output


def test_requested_port_taken_is_detected(ls_template, tmp_path, monkeypatch):
    """Label Studio silently moves to port+1 when its port is taken: we notice and pick another.

    It also reads bare HOST/PORT/USERNAME/PASSWORD (and LABEL_STUDIO_*) from the environment:
    set here in the parent, they must not reach the child.
    """
    for name, value in {"HOST": "http://elsewhere.invalid", "PORT": "1", "USERNAME": "intruder@x.org",
                        "PASSWORD": "nope", "LABEL_STUDIO_PORT": "2", "LABEL_STUDIO_HOST": "http://x.invalid"}.items():
        monkeypatch.setenv(name, value)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        server = LabelStudioServer.from_template(ls_template, tmp_path / "d", port=taken)
        with server:
            assert server.port != taken
            conn = Connection(server.url, server.token)
            assert conn.call("whoami", lambda: conn.client().users.whoami()).email == server.username


def test_token_never_in_outputs_or_logs(ls_env, review, tmp_path, caplog, capfd):
    audit, queue = review
    name = title()
    work = tmp_path / "out"
    with caplog.at_level("DEBUG"):
        assert cli("push", "--audit", audit, "--queue", queue, "--project", name).exit_code == 0
        simulate.annotate(_project(ls_env, name), "t@example.org", lambda q: "minor")
        for args in (("pull", "--project", name, "--out", work / "verdicts.csv"),
                     ("status", "--project", name),
                     ("agreement", "--raw", work / "annotations_raw.csv", "--out", work, "--n-boot", 50),
                     ("export-tasks", "--audit", audit, "--queue", queue, "--out", work / "tasks.json")):
            res = cli(*args)
            assert res.exit_code == 0, res.output
            assert ls_env.token not in res.output
    captured = capfd.readouterr()
    assert ls_env.token not in caplog.text + captured.out + captured.err
    assert ls_env.token not in ls_env.log_path.read_text(errors="replace")  # the server's own log
    files = list(work.rglob("*"))
    assert len(files) >= 8
    for path in files:
        assert ls_env.token not in path.read_text(errors="replace"), path


def test_sigterm_to_the_local_server_command_stops_label_studio(ls_template, tmp_path):
    """`python -m bbsard_audit.annotations.server --data-dir D` stopped with SIGTERM must not orphan Label Studio."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    shutil.copytree(ls_template, tmp_path / "d")
    proc = subprocess.Popen([sys.executable, "-m", "bbsard_audit.annotations.server", "--data-dir", str(tmp_path / "d")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()  # said at once, before the wait
        assert line.startswith("starting Label Studio "), line
        line = proc.stdout.readline()  # printed once the server answers /health
        assert " at http://127.0.0.1:" in line, line
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert children, "Label Studio should run as a child of the command"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") and
                                                  "Z" not in open(f"/proc/{pid}/stat").read().split()[2]
                                                  for pid in children):
            time.sleep(0.5)
        assert not [pid for pid in children if os.path.exists(f"/proc/{pid}")
                    and "Z" not in open(f"/proc/{pid}/stat").read().split()[2]]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_print_token_reads_the_data_dirs_credentials_without_starting_a_server(tmp_path, capsys):
    """The README's way to get LABEL_STUDIO_API_KEY for a local server (no server started here)."""
    from bbsard_audit.annotations.server import CREDENTIALS_FILE, main

    (tmp_path / CREDENTIALS_FILE).write_text(json.dumps({"username": "u", "password": "p", "token": "abc123"}))
    assert main(["--data-dir", str(tmp_path), "--print-token"]) == 0
    assert capsys.readouterr().out == "abc123\n"
    with pytest.raises(SystemExit) as exit_info:
        main(["--data-dir", str(tmp_path / "fresh"), "--print-token"])
    assert exit_info.value.code == 2 and "start the server once" in capsys.readouterr().err


def test_api_pull_and_file_export_of_the_same_annotations_merge_into_one_row_each(ls_env, review, tmp_path):
    """An API pull, then a reviewer's JSON export of the same project (which names annotators only as
    Label Studio gives them, without the API's user list): every annotation stays one row, one name."""
    audit, queue = review
    name = title()
    assert cli("push", "--audit", audit, "--queue", queue, "--project", name).exit_code == 0
    project = _project(ls_env, name)
    ids = sorted(read_audit(queue, QUEUE_COLUMNS)["id"])[:6]
    assert simulate.annotate(project, "ann.a@example.org", lambda q: "legal" if q in ids[:3] else
                             ("correct" if q in ids else None)) == 6
    out = tmp_path / "verdicts.csv"
    assert cli("pull", "--project", name, "--out", out).exit_code == 0
    first = pd.read_csv(out.with_name("annotations_raw.csv"), dtype=str, keep_default_na=False)
    assert len(first) == 6 and set(first["annotator"]) == {"ann.a@example.org"}
    # later: a second reviewer annotates, and someone exports the project from the UI
    assert simulate.annotate(project, "ann.b@example.org", lambda q: "minor" if q == ids[0] else None) == 1
    export = tmp_path / "export.json"
    tasks = project.export()
    assert all(isinstance(a["completed_by"], int) for t in tasks for a in t["annotations"])  # ids only
    export.write_text(json.dumps(tasks))
    res = cli("pull", "--from-file", export, "--out", out)
    assert res.exit_code == 0, res.output
    raw = pd.read_csv(out.with_name("annotations_raw.csv"), dtype=str, keep_default_na=False)
    assert len(raw) == 7 and raw["annotation_id"].is_unique
    assert set(raw["annotation_id"]) > set(first["annotation_id"])
    # reviewer a keeps one identity across both sources (the API pull tied a's user id to the email);
    # reviewer b was never seen through the API, so the file export can only name b by user id
    b_id = next(a["completed_by"] for t in tasks for a in t["annotations"] if a["id"] not in
                set(map(int, first["annotation_id"])))
    assert raw.groupby("annotator").size().to_dict() == {"ann.a@example.org": 6, f"user:{b_id}": 1}
    verdicts = pd.read_csv(out, keep_default_na=False).set_index("id")
    assert len(verdicts) == 6 and verdicts.loc[ids[0], "n_annotations"] == 2
    assert (verdicts.drop(index=ids[0])["n_annotations"] == 1).all()
