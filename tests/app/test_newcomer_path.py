"""A newcomer's path (issue 23): the README's BEIR walk-through runs as pasted from the shipped example,
and the small texts on the way say what they mean (--help, the report's title, pull's summary, the
corpus queue, validate's warnings, a clean stderr on Ray)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.cli_options import DATASET_SOURCES
from bbsard_audit.base.dataset import load_dataset, sample_dir

from conftest import REPO, need
from benchmark_files import as_beir
from pull_fixtures import ann, pull_file, task
from test_readme import _readme_commands

runner = CliRunner()
SECTIONS = ("### A translated BEIR benchmark", "### A translated corpus")
RAY_LOG_ERROR = re.compile(r"^\[[0-9-]+ [0-9:,]+ [EF] \d+ \d+\]|\bERROR\b", re.M)  # Ray's C++ E/F lines, or ERROR


def _section_commands() -> list[list[str]]:
    """The `bbsard-audit` lines of the README's BEIR and corpus sections, variables expanded in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    sections = [text[text.index(h):text.index("\n### ", text.index(h) + 1)] for h in SECTIONS]
    return [argv for _, argv in _readme_commands("\n".join(sections))]


def test_the_readme_beir_walk_through_runs_as_pasted(tmp_path, monkeypatch):
    """From `example beir` on, every command of the two sections runs in a fresh folder (the cluster
    line needs a cluster: it is only parsed, by tests/app/test_readme.py); the Ray one as a user runs it, in
    its own process, whose stderr must hold no error-level line on success."""
    commands = _section_commands()
    assert commands[0][:2] == ["example", "beir"] and len(commands) >= 7
    monkeypatch.chdir(tmp_path)
    ran = []
    for argv in commands:
        if "--ray-address" in argv:
            continue
        if "--engine" in argv and argv[argv.index("--engine") + 1] == "ray":
            need("ray", "ray not installed (the scale extra, included in test)")
            done = subprocess.run([str(Path(sys.executable).with_name("bbsard-audit")), *argv, "--workers", "1"],
                                  cwd=tmp_path, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
            assert not RAY_LOG_ERROR.search(done.stderr), done.stderr
            assert "audited 215 documents (ray" in done.stderr
        else:
            result = runner.invoke(app, argv, catch_exceptions=False)
            assert result.exit_code == 0, f"{' '.join(argv)}\n{result.output}"
            if argv[:2] == ["audit", "corpus"]:
                assert "review queue: 0 flagged (budget 100: all flagged documents) + 50 control" in result.output
        ran.append(argv[:2])
    assert ["eval", "--dataset"] in ran and ["audit", "corpus"] in ran
    out = tmp_path / "reports" / "beir"
    assert {p.name for p in out.iterdir()} >= {"audit.csv", "review_queue.csv", "tasks.json", "metrics.csv",
                                              "report.html", "corpus"}
    assert "## Evaluation" in (out / "report.md").read_text(encoding="utf-8")  # eval and audit in one work folder
    metrics = (out / "metrics.csv").read_text(encoding="utf-8")
    assert "bm25_fr" in metrics and "bm25_nl" in metrics
    assert json.loads((out / "audit.meta.json").read_text())["dataset"]["source"] == "sample-beir"


def test_the_example_is_the_sample_in_beir_layout_and_never_replaces_a_users_file(tmp_path):
    result = runner.invoke(app, ["example", "beir", str(tmp_path / "ex")])
    assert result.exit_code == 0, result.output
    ds, sample = load_dataset(str(tmp_path / "ex" / "sample-beir.yaml")), load_dataset("sample")
    assert [(str(p.id), p.split, p.source, p.target, tuple(map(str, p.article_ids))) for p in ds.pairs] == \
        [(str(p.id), p.split, p.source, p.target, tuple(map(str, p.article_ids))) for p in sample.pairs]
    assert ds.pair.source == "fr" and ds.pair.target == "nl" and len(ds.corpus) == len(sample.corpus)
    run = (tmp_path / "ex" / "runs" / "bm25_nl.trec").read_text().splitlines()
    assert {line.split()[0] for line in run} == {str(p.id) for p in sample.select("test")}
    again = runner.invoke(app, ["example", "beir", "--out", str(tmp_path / "ex")])
    assert again.exit_code == 0, again.output  # its own files: rewritten (--out, the folder's name everywhere)
    both = runner.invoke(app, ["example", "beir", str(tmp_path / "a"), "--out", str(tmp_path / "b")])
    assert both.exit_code == 2 and "give the folder once" in both.output and not (tmp_path / "a").exists()
    (tmp_path / "mine" / "runs").mkdir(parents=True)
    (tmp_path / "mine" / "runs" / "bm25_fr.trec").write_text("a user's run\n")
    refused = runner.invoke(app, ["example", "beir", str(tmp_path / "mine")])
    assert refused.exit_code == 2 and "was not written by bbsard-audit" in refused.output
    assert (tmp_path / "mine" / "runs" / "bm25_fr.trec").read_text() == "a user's run\n"


def _helps():
    """(path, --help output) of every command and group."""
    found = []

    def walk(command, path):
        found.append((path, runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output))
        for name, child in getattr(command, "commands", {}).items():
            walk(child, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_no_help_shows_a_value_after_a_flag_and_every_dataset_option_is_the_same():
    helps = _helps()
    assert len(helps) > 20
    assert [" ".join(p) for p, text in helps if "<bool>" in text] == []
    assert [" ".join(p) for p, text in helps if "--help" not in text] == []
    command_of = {" ".join(p): p for p, _ in helps}
    root = typer.main.get_command(app)
    datasets = []
    for key, path in command_of.items():
        command = root
        for name in path:
            command = command.commands[name]
        for param in command.params:
            if "--dataset" in getattr(param, "opts", ()):
                datasets.append(key)
                assert param.help.endswith(DATASET_SOURCES), key
    assert {"validate", "eval", "audit", "audit corpus", "annotate push", "annotate export-tasks",
            "release"} <= set(datasets)
    eval_help = dict((" ".join(p), t) for p, t in helps)["eval"]
    assert "FILE.yaml" in eval_help and "hf:NAME[@REV]" not in eval_help


@pytest.mark.parametrize("dataset, title", [
    ("sample", "bBSARD translation audit report"),
    ("manifest", "toy-en-nl translation audit report"),
])
def test_the_report_is_titled_by_its_dataset(tmp_path, dataset, title):
    if dataset == "manifest":
        from benchmark_files import en_nl
        dataset = str(en_nl(tmp_path / "data"))
    result = runner.invoke(app, ["audit", "--dataset", dataset, "--split", "test", "--out", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    report = runner.invoke(app, ["report", "--workdir", str(tmp_path / "w")])
    assert report.exit_code == 0, report.output
    html = (tmp_path / "w" / "report.html").read_text(encoding="utf-8")
    md = (tmp_path / "w" / "report.md").read_text(encoding="utf-8")
    assert f"<title>{title}</title>" in html and md.startswith(f"# {title}")


def test_pull_ends_with_a_sentence_not_a_dict(tmp_path):
    result = pull_file(tmp_path, [task(1, [ann(70, 5, "legal"), ann(71, 6, "legal")]),
                                  task(2, [ann(72, 5, "correct"), ann(73, 6, "legal")]), task(3, [ann(74, 5)])])
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert "{" not in last and re.search(r"5 annotation\(s\) on 3 question\(s\) -> .*verdicts\.csv: ", last), last
    assert "1 agreed" in last and "1 single" in last and re.search(r"1 (unresolved|adjudicated)", last), last


def test_validate_on_a_manifest_warns_once_per_file_naming_the_splits_and_only_the_columns_it_has(tmp_path):
    manifest = as_beir(load_dataset(str(sample_dir())), tmp_path / "beir")
    queries = tmp_path / "beir" / "nl" / "queries.jsonl"  # the Dutch side keeps one metadata field only
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    queries.write_text("".join(json.dumps({**r, "metadata": {"category": r["metadata"]["category"]}},
                                          ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["validate", "--dataset", str(manifest)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {queries}: Dutch metadata fields (category) are still in French in all 40 rows "
                        "(train 28, test 12)"]
    csv = runner.invoke(app, ["validate", "--dataset", "sample"])
    assert "are still in French in all 12 rows (split test)" in csv.output
    assert len([line for line in csv.output.splitlines() if line.startswith("warning:")]) == 2


def test_a_long_step_says_when_it_starts_while_it_runs_and_when_it_is_done():
    import time

    from bbsard_audit.base.steps import step

    said = []
    with step(said.append, "installing x", every=0.05):
        time.sleep(0.3)
    assert said[0] == "installing x ..." and re.fullmatch(r"installing x: done in \d+ s", said[-1])
    assert any(re.fullmatch(r"  \.\.\. installing x: \d+ s so far", line) for line in said[1:-1]), said
    failed = []
    with pytest.raises(RuntimeError), step(failed.append, "migrating", every=10):
        raise RuntimeError("boom")
    assert failed == ["migrating ..."]  # no "done" for a step that failed


def test_ensure_template_prints_its_paths_on_stdout_and_its_progress_on_stderr(ls_template):
    from bbsard_audit.annotations.server import version_root

    done = subprocess.run([sys.executable, "-m", "bbsard_audit.annotations.server", "--ensure-template"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(version_root() / "venv" / "bin" / "label-studio"), str(ls_template)]
    assert re.search(r"Label Studio [\d.]+: venv and template ready in .* \(\d+ s\)", done.stderr), done.stderr
