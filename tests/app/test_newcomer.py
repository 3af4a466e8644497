"""A new user's first hour (issue 15): every command's help intact at 80 columns, the queue the audit
wrote said, one-line errors instead of tracebacks or silent successes, exact figures, one campaign
folder the report reads, gold articles shown by default, an unreachable hub failing at once."""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
from pathlib import Path

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset, sample_dir
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.stats import wilson
from report_fixtures import write_workdir

runner = CliRunner()


def cli(*args, **env):
    return runner.invoke(app, [str(a) for a in args], env=env or None)


def one_line_error(result, *needles: str) -> str:
    """The command failed with exit 2 and one `error:` line holding every needle, no traceback."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


# ---------------------------------------------------------------- --help at 80 columns

def _squash(text: str) -> str:
    """Text without layout: whitespace, box borders and the markdown marks rich renders away."""
    return re.sub(r"[\s│╭╮╰╯─`*]", "", text)


def test_every_help_text_survives_80_columns():
    """Markdown must not eat `_` of `questions_{fr,nl}_{train,test}` and no long token may end in `…`."""
    lost = []

    def walk(command, path):
        shown = _squash(runner.invoke(app, [*path, "--help"], terminal_width=80, env={"COLUMNS": "80"}).output)
        texts = [("docstring", p) for p in (command.help or "").split("\n\n")]
        texts += [(param.name, param.help) for param in command.params if getattr(param, "help", None)]
        lost.extend((" ".join(path), name, text) for name, text in texts if _squash(text) not in shown)
        for name, child in getattr(command, "commands", {}).items():
            walk(child, [*path, name])

    walk(typer.main.get_command(app), [])
    assert not lost, "\n".join(map(str, lost))


# ---------------------------------------------------------------- figures

def test_wilson_bounds_are_exact_at_the_edges():
    """0 of 28 gave a lower bound of 1.4e-17 (printed 5.6e-17 for another n): now exactly 0 (and 1 at n of n)."""
    for n in range(1, 300):
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0
    low, high = wilson(3, 40)
    assert 0 < low < 3 / 40 < high < 1


def test_severity_counts_add_up_to_their_pairs(tmp_path):
    """The demo printed high 5, medium 3, low 1 next to 8 flagged: low lies below the flag threshold."""
    from bbsard_audit.app.report import build_report

    work = write_workdir(tmp_path, review=False, evaluation=False)
    audit = pd.read_csv(work / "audit.csv")
    audit.loc[audit.index[-1], ["severity", "risk"]] = ["low", 0.3]  # unflagged, yet with a severity
    audit.to_csv(work / "audit.csv", index=False)
    markdown = build_report(work).markdown.read_text()
    n_flagged = int(audit["flagged"].sum())
    flagged = re.search(r"\*\*flagged pairs by severity\*\*: (.*)", markdown)[1]
    unflagged = re.search(r"\*\*unflagged pairs by severity\*\*: (.*)", markdown)[1]
    assert sum(int(n) for n in re.findall(r"\d+", flagged)) == n_flagged
    assert unflagged == "low 1"


# ---------------------------------------------------------------- one-line errors

def test_out_under_an_existing_file_is_one_line(tmp_path):
    (tmp_path / "some_file.csv").write_text("x\n")
    for args in (["audit", "--out", tmp_path / "some_file.csv" / "sub"],
                 ["report", "--workdir", tmp_path, "--out", tmp_path / "some_file.csv" / "sub"],
                 ["demo", "--out", tmp_path / "some_file.csv" / "a" / "b"],
                 ["audit", "learn", "--audit", sample_dir() / "verdicts.csv", "--verdicts", sample_dir() / "verdicts.csv",
                  "--out", tmp_path / "some_file.csv" / "sub"]):
        one_line_error(cli(*args), "some_file.csv, which is a file, not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some_file.csv"]


def test_report_on_a_folder_without_stage_output_fails(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    one_line_error(cli("report", "--workdir", tmp_path), "no stage output here")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]  # no report, no manifest


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    """An audit of a copy of the sample (a local folder, as a user's data is) with a review queue."""
    root = tmp_path_factory.mktemp("audited")
    shutil.copytree(sample_dir(), root / "data", ignore=shutil.ignore_patterns("*.md", "*.py", "__pycache__"))
    result = cli("audit", "--dataset", root / "data", "--backtranslations", root / "data" / "backtranslations_nl_fr.jsonl",
                 "--review-budget", 60, "--control", 5, "--out", root / "w")
    assert result.exit_code == 0, result.output
    root.joinpath("audit_output.txt").write_text(result.output)
    return root


def test_audit_says_what_the_queue_holds(audited):
    """`--review-budget 60` with 8 flagged pairs: the queue line says 8, the budget and the control."""
    queue = pd.read_csv(audited / "w" / "review_queue.csv")
    n_risk, n_control = int((queue["queue"] == "risk").sum()), int((queue["queue"] == "control").sum())
    assert n_risk < 60 and n_control == 5
    line = next(l for l in (audited / "audit_output.txt").read_text().splitlines() if l.startswith("review queue:"))
    assert line == f"review queue: {n_risk} flagged (budget 60: all flagged pairs) + {n_control} control"


def test_push_with_a_missing_queue_is_one_line(audited, tmp_path):
    from bbsard_audit.annotations.adaptive import Campaign
    from bbsard_audit.annotations.tasks import QUEUE_COLUMNS, read_audit

    w = audited / "w"
    missing = tmp_path / "nope.csv"
    one_line_error(cli("annotate", "push", "--audit", w / "audit.csv", "--queue", missing, "--project", "p"),
                   "--queue not found", "nope.csv")
    Campaign.start(tmp_path / "camp", project="p", audit=read_audit(w / "audit.csv"), audit_path=w / "audit.csv",
                   queue=read_audit(w / "review_queue.csv", QUEUE_COLUMNS), queue_path=w / "review_queue.csv").save()
    one_line_error(cli("annotate", "push", "--audit", w / "audit.csv", "--queue", missing, "--project", "p",
                       "--campaign", tmp_path / "camp"), "--queue not found")


# ---------------------------------------------------------------- gold articles by default

def _gold(tasks_json: Path) -> list[str]:
    return [t["data"]["gold_articles"] for t in json.loads(tasks_json.read_text())]


def test_tasks_show_the_audit_datasets_gold_articles_by_default(audited, tmp_path):
    """No --dataset: the tasks show the gold articles of the dataset audit.meta.json names (found on this
    machine, same files); the sidecar itself stays path-free."""
    w = audited / "w"
    assert str(audited) not in (w / "audit.meta.json").read_text()
    result = cli("annotate", "export-tasks", "--audit", w / "audit.csv", "--queue", w / "review_queue.csv",
                 "--out", tmp_path / "tasks.json")
    assert result.exit_code == 0, result.output
    assert "gold articles from the audit's dataset data (revision sha256:" in result.output
    assert all(g and "not loaded" not in g for g in _gold(tmp_path / "tasks.json"))


def test_tasks_say_in_one_line_when_the_audit_dataset_is_gone(audited, tmp_path):
    w = tmp_path / "w"
    shutil.copytree(audited / "w", w)
    meta = json.loads((w / "audit.meta.json").read_text())
    meta["dataset"]["revision"] = "sha256:000000000000"  # an audit of data this machine never saw
    (w / "audit.meta.json").write_text(json.dumps(meta))
    result = cli("annotate", "export-tasks", "--audit", w / "audit.csv", "--queue", w / "review_queue.csv",
                 "--out", tmp_path / "tasks.json")
    assert result.exit_code == 0, result.output
    notes = [l for l in result.output.splitlines() if l.startswith("gold articles not shown")]
    assert len(notes) == 1 and "not known on this machine; give --dataset SRC" in notes[0]
    assert all("not loaded" in g for g in _gold(tmp_path / "tasks.json"))


def test_tasks_refuse_gold_articles_of_changed_data(audited, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(audited / "data", data)
    result = cli("audit", "--dataset", data, "--review-budget", 5, "--out", tmp_path / "w")
    assert result.exit_code == 0, result.output
    test_fr = data / "questions_fr_test.csv"
    test_fr.write_text(test_fr.read_text().replace("?", " ?", 1))  # the labels may no longer be the audited ones
    result = cli("annotate", "export-tasks", "--audit", tmp_path / "w" / "audit.csv", "--out", tmp_path / "tasks.json")
    assert result.exit_code == 0, result.output
    assert "has changed since the audit" in result.output
    assert all("not loaded" in g for g in _gold(tmp_path / "tasks.json"))


def test_a_given_dataset_that_cannot_load_is_one_line_and_the_push_goes_on(audited, tmp_path):
    w = audited / "w"
    result = cli("annotate", "export-tasks", "--audit", w / "audit.csv", "--dataset", tmp_path / "nowhere",
                 "--out", tmp_path / "tasks.json")
    assert result.exit_code == 0, result.output
    assert "gold articles not shown: cannot load" in result.output and "nowhere" in result.output
    assert all("not loaded" in g for g in _gold(tmp_path / "tasks.json"))


# ---------------------------------------------------------------- report reads the campaign folder

def _campaign_workdir(root: Path) -> Path:
    """A work folder whose review files live in its campaign folder `review/` (as the README runs it)."""
    work = write_workdir(root)
    (work / "review").mkdir()
    (work / "review" / "campaign.json").write_text("{}")
    for name in ("verdicts.csv", "annotations_raw.csv", "agreement.json", "estimate.json", "disagreements.csv"):
        for path in (work / name, work / name.replace(".csv", ".meta.json").replace(".json", ".meta.json")):
            if path.exists() and not (work / "review" / path.name).exists():
                shutil.move(path, work / "review" / path.name)
    return work


def test_report_reads_the_review_from_the_campaign_folder(tmp_path):
    from bbsard_audit.app.report import build_report

    flat = build_report(write_workdir(tmp_path / "flat"))
    work = _campaign_workdir(tmp_path / "camp")
    assert not (work / "verdicts.csv").exists()
    result = cli("report", "--workdir", work)
    assert result.exit_code == 0, result.output
    assert f"review files from {work / 'review'}" in result.output
    assert "sections: " + ", ".join(flat.sections) in result.output  # the same report as with one folder
    inputs = json.loads((work / "report.meta.json").read_text())["inputs"]
    assert "review/verdicts.csv" in inputs and "review/estimate.json" in inputs


def test_a_campaign_not_pulled_yet_leaves_the_work_folders_review(tmp_path):
    from bbsard_audit.app.report.loaders import load_workdir

    work = write_workdir(tmp_path)
    (work / "review").mkdir()
    (work / "review" / "campaign.json").write_text("{}")  # pushed, nothing pulled into it yet
    wd = load_workdir(work)
    assert wd.review is None and wd.table("verdicts.csv") is not None


def test_report_never_picks_one_of_two_reviews(tmp_path):
    work = _campaign_workdir(tmp_path)
    shutil.copy(work / "review" / "verdicts.csv", work / "verdicts.csv")
    one_line_error(cli("report", "--workdir", work), "two verdicts.csv", "--campaign")
    assert not (work / "report.html").exists()
    assert cli("report", "--workdir", work, "--campaign", work / "review").exit_code == 0
    (work / "other").mkdir()
    (work / "other" / "campaign.json").write_text("{}")
    one_line_error(cli("report", "--workdir", work), "several campaign folders (other, review)")


# ---------------------------------------------------------------- hub offline

def test_an_unreachable_hub_fails_at_once(monkeypatch):
    """`datasets` retried for ~24 s per config before saying the hub is unreachable; now < 5 s, one line."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"hf:clips/bBSARD@v1: the Hugging Face hub \(127.0.0.1\) is not reachable"):
        load_dataset("hf:clips/bBSARD@v1")
    assert time.perf_counter() - started < 5
    # a copy in the Hugging Face cache is left to `datasets`, which falls back to it (as before the probe)
    from huggingface_hub import constants

    from bbsard_audit.base.dataset import _check_hub_reachable

    cached = Path(constants.HF_HUB_CACHE) / "datasets--newcomer-test--Cached"
    cached.mkdir(parents=True)
    try:
        _check_hub_reachable("newcomer-test/Cached@v1")
        with pytest.raises(InputError, match="not reachable"):
            _check_hub_reachable("newcomer-test/NotCached@v1")
    finally:
        cached.rmdir()


def test_a_local_hf_copy_needs_no_hub(tmp_path, monkeypatch):
    from bbsard_audit.app import release

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # unreachable: a local copy never asks
    ds = load_dataset("sample")
    summary = release.build_release(ds, sample_dir() / "verdicts.csv", tmp_path / "rel", release.ReleasePolicy("exclude"))
    assert len(load_dataset(f"hf:{summary.out / 'hf'}").pairs) == len(ds.pairs) - summary.removed


def test_the_local_label_studio_says_how_to_stop_it_when_started_in_the_background(monkeypatch, capsys, tmp_path):
    """The README starts it with `&`, and it said only "Ctrl-C to stop", which cannot reach it there."""
    import os
    import types

    from bbsard_audit.annotations import server

    class Fake:
        version, url, username, data_dir = "1.0", "http://127.0.0.1:8080", "admin", tmp_path
        initialised, log_path = False, tmp_path / "server.log"
        process = types.SimpleNamespace(poll=lambda: 0)

        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(server, "LabelStudioServer", Fake)
    monkeypatch.setattr(server, "ensure_venv", lambda **k: tmp_path / "label-studio")
    monkeypatch.setattr(server.signal, "signal", lambda *a: None)
    assert server.main(["--data-dir", str(tmp_path), "--port", "8080"]) == 0
    said = capsys.readouterr()
    assert "Ctrl-C" in said.out and f"`kill {os.getpid()}`" in said.out
    # the minute or two before that line was silent: it now says at once what it is doing and where its log is
    assert said.err.startswith("starting Label Studio 1.0 on 127.0.0.1:8080, creating its database and admin user "
                               f"in {tmp_path} first (a minute or two"), said.err
    assert str(tmp_path / "server.log") in said.err
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "--port 8080 & LS_PID=$!" in readme and "\nkill $LS_PID" in readme
