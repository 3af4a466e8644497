"""Issue 33, hostile inputs round 5 (part a): wrong claims in a release or report, injection into the
release card and the CSVs, a key leaked by a Label Studio error, seeds out of range, an unbounded
back-translation, the cross-lingual step's memory and invisible format characters. Each test fails on
the code before its fix."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------ seeds: checked as parsed, before any work

@pytest.mark.parametrize("command", [
    ["audit", "--dataset", "sample", "--out", "{out}"],
    ["audit", "selftest", "--dataset", "sample", "--out", "{out}"],
    ["annotate", "push", "--campaign", "{out}", "--project", "p"],
    ["annotate", "estimate", "--audit", "a.csv", "--out", "{out}/e.json"],
    ["annotate", "agreement", "--raw", "r.csv", "--out", "{out}"],
    ["eval", "--dataset", "sample", "--out", "{out}"],
    ["campaign", "simulate", "--oracle", "v.csv", "--out", "{out}"],
])
@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_out_of_range_is_one_line_before_any_work(tmp_path, command, seed):
    out = tmp_path / "out"
    res = invoke(*[a.format(out=out) for a in command], "--seed", seed)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "--seed must be an integer from 0 to 4,294,967,295" in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_the_last_seed_of_a_simulation_is_checked_too(tmp_path):
    res = invoke("campaign", "simulate", "--oracle", "v.csv", "--seed", 2**32 - 1, "--seeds", 2, "--out", tmp_path / "o")
    assert res.exit_code == 2 and "up to 4294967296" in res.output and not (tmp_path / "o").exists()
