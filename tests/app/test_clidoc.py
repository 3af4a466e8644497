"""docs/cli.md is the command line's own table of options, and help texts speak to users, not to the tracker."""

from __future__ import annotations

import re

import typer

from bbsard_audit.app.cli import app
from bbsard_audit.app.clidoc import DOC, commands, options, render


def test_cli_doc_is_current():
    assert DOC.read_text(encoding="utf-8") == render(), "run `python -m bbsard_audit.app.clidoc`"


def test_cli_doc_lists_every_command_and_option():
    listed = list(commands(typer.main.get_command(app)))
    lines = {line for line, _ in listed}
    assert {"bbsard-audit audit", "bbsard-audit audit corpus", "bbsard-audit annotate push", "bbsard-audit eval"} <= lines
    text = render()
    for line, command in listed:
        assert f"## `{line}`" in text
    audit = dict(listed)["bbsard-audit audit"]
    assert any("`--review-budget`" in names for names, *_ in options(audit))


def test_no_help_text_cites_an_issue_number():
    cited = [(line, names) for line, command in commands(typer.main.get_command(app))
             for names, _, text, _ in options(command) if re.search(r"\bissues? #?\d+", text, re.I)]
    cited += [(line, "(command help)") for line, command in commands(typer.main.get_command(app))
              if re.search(r"\bissues? #?\d+", command.help or "", re.I)]
    assert cited == []


def test_every_old_spelling_still_works_and_is_hidden(tmp_path):
    from typer.testing import CliRunner

    from bbsard_audit.base.cli_options import OLD_SPELLINGS, modernise

    root = typer.main.get_command(app)
    assert OLD_SPELLINGS
    for line, renamed in OLD_SPELLINGS.items():
        command = dict(commands(root))[f"bbsard-audit {line}"]
        shown = {o for p in command.params for o in p.opts}
        for old, new in renamed.items():
            assert new in shown and old not in shown, (line, old)
            words = line.split()
            assert modernise([*words, old, "x", f"{old}=y", "--", old], root) == [*words, new, "x", f"{new}=y", "--", old]
    runner = CliRunner()
    for spelling in ("--runs-fr", "--runs-source"):  # the old name reaches the renamed option
        ran = runner.invoke(app, ["audit", "--dataset", "sample", spelling, str(tmp_path / "x.trec"),
                                  "--out", str(tmp_path / "o")])
        assert ran.exit_code == 2 and "give both --runs-source and --runs-target" in ran.output, ran.output
    bad = tmp_path / "ls.toml"
    bad.write_text("label_studio = 'http://x'\n", encoding="utf-8")
    said = {s: runner.invoke(app, ["annotate", "status", "--project", "p", s, str(bad)]).output
            for s in ("--config", "--ls-config")}
    assert said["--config"] == said["--ls-config"] and "label_studio must be a table" in said["--config"]


def _parsed(words: list[str], args: list[str]) -> dict:
    """The parameters one command receives from `args`, as the root parses them (old spellings renamed)."""
    from bbsard_audit.base.cli_options import modernise

    root = typer.main.get_command(app)
    command = root
    for word in words:
        command = command.commands[word]
    renamed = modernise([*words, *args], root)[len(words):]
    return command.make_context(" ".join(words), renamed, resilient_parsing=True).params


def test_each_renamed_clash_gives_its_option_the_same_value_under_the_old_spelling():
    """`--batch-size` (tasks per request, documents per batch) and simulate's `--budget` (control included,
    unlike `--review-budget`) each have a name of their own; the old command line still reaches them."""
    cases = [(["annotate", "push"], "--batch-size", "--request-size", "batch_size", "17"),
             (["audit", "corpus"], "--batch-size", "--docs-per-batch", "batch_size", "17"),
             (["campaign", "simulate"], "--budget", "--reviews", "budget", "17")]
    reached = [(_parsed(words, [old, value]), _parsed(words, [new, value]), param)
               for words, old, new, param, value in cases]
    assert [(before == after, after[param]) for before, after, param in reached] == [(True, 17)] * 3


def test_an_old_spelling_gives_the_same_one_line_as_the_new(tmp_path):
    from typer.testing import CliRunner

    runner = CliRunner()
    said = [runner.invoke(app, ["audit", "corpus", "--dataset", "sample", "--out", str(tmp_path / "o"), spelling, "0"])
            for spelling in ("--batch-size", "--docs-per-batch")]
    assert [r.exit_code for r in said] == [2, 2] and said[0].output == said[1].output
    assert "--docs-per-batch and --max-doc-chars must be at least 1" in said[0].output
    assert not (tmp_path / "o").exists()


def test_no_command_or_group_help_cites_an_issue_number():
    """Every command and group of the tree, with options or not (a group's help is its --help page)."""
    def walk(command, path):
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, f"{path} {name}")

    seen = list(walk(typer.main.get_command(app), "bbsard-audit"))
    assert len(seen) > 20
    cited = [path for path, command in seen if re.search(r"\bissues? #?\d+", command.help or "", re.I)]
    assert cited == []


def test_a_value_spelled_like_an_old_option_is_kept(tmp_path):
    """`--project --config`: the project is named `--config`; only the option after it is renamed."""
    from typer.testing import CliRunner

    from bbsard_audit.base.cli_options import modernise

    root = typer.main.get_command(app)
    args = ["annotate", "status", "--project", "--config", "--config", "ls.toml", "--project=--config"]
    assert modernise(args, root) == ["annotate", "status", "--project", "--config", "--ls-config", "ls.toml",
                                     "--project=--config"]
    assert modernise(["audit", "--out", "--runs-fr", "--runs-fr", "f.trec"], root) == \
        ["audit", "--out", "--runs-fr", "--runs-source", "f.trec"]
    bad = tmp_path / "ls.toml"
    bad.write_text("label_studio = 'http://x'\n", encoding="utf-8")
    ran = CliRunner().invoke(app, ["annotate", "status", "--project", "--config", "--config", str(bad)])
    assert "label_studio must be a table" in ran.output, ran.output
