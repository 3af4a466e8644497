"""Issues 32 (items 4, 6) and 33 (estimates): one estimate object of the errors left, read by every
command and the report; stopping targets and levels in range; stale estimates; re-derived draws."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_estimator_design import cli
from test_ppi_design import campaign  # noqa: F401 (the fixture)


@pytest.mark.parametrize("option", [("--target-halfwidth", "5"), ("--target-halfwidth", "inf"),
                                    ("--target-halfwidth", "-0.1"), ("--max-missed", "-1"),
                                    ("--max-missed", "inf"), ("--max-missed", "nan"),
                                    ("--level", "1.5"), ("--level", "0"), ("--level", "1"), ("--level", "-0.5")])
def test_a_target_or_level_out_of_range_is_one_line_and_nothing_written(campaign, tmp_path, option):  # noqa: F811
    frame, audit, queue, camp, verdicts = campaign
    verdicts(pd.read_csv(queue)["id"])
    res = cli("estimate", "--audit", audit, "--campaign", camp, "--out", tmp_path / "e.json", *option)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert option[0] in res.output and "Traceback" not in res.output
    assert not (tmp_path / "e.json").exists()


def test_max_missed_help_says_it_compares_the_stopping_bound():
    res = cli("estimate", "--help")
    text = " ".join(res.output.replace("│", " ").split())
    assert "stopping bound" in text and "not with the expected number" in text
