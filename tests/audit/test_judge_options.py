"""One set of judge options for the question and the corpus audit: same names, same help, same checks."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.app.clidoc import options
from bbsard_audit.audit.judge.options import JudgeOptions
from bbsard_audit.base.errors import InputError

JUDGE_FLAGS = ("--judge", "--judge-url", "--judge-on", "--judge-concurrency", "--judge-dry-run")


def _judge_help(*words: str) -> dict[str, str]:
    command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    return {names: text for names, _, text, _ in options(command) if names.split("`")[1] in JUDGE_FLAGS}


def test_both_audits_declare_the_judge_options_once():
    question, corpus = _judge_help("audit"), _judge_help("audit", "corpus")
    assert len(question) == len(JUDGE_FLAGS) and question == corpus


@pytest.mark.parametrize("words", [["audit"], ["audit", "corpus"]])
def test_a_judge_option_without_a_judge_is_the_same_one_line_in_both(words, tmp_path):
    ran = CliRunner().invoke(app, [*words, "--dataset", "sample", "--judge-url", "http://127.0.0.1:9/v1",
                                   "--out", str(tmp_path / "o")])
    assert ran.exit_code == 2 and ran.output.strip().splitlines() == \
        ["error: --judge-url needs --judge llm:MODEL (without it no judge runs)"]
    assert not (tmp_path / "o").exists()


def test_options_resolve_their_defaults_and_refuse_a_bad_choice():
    given = JudgeOptions.given("llm:m", "http://127.0.0.1:9/v1")
    assert (given.on, given.concurrency, given.wanted) == ("flagged", 4, True)
    assert not JudgeOptions.given().wanted and JudgeOptions.given(dry_run=True).wanted
    with pytest.raises(InputError, match="--judge-on must be one of flagged|uncertain|all"):
        JudgeOptions.given("llm:m", on="some")
