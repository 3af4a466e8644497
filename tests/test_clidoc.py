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
