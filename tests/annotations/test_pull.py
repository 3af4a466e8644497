"""`annotate pull` merges by identity (docs/annotations.md, "Pull"): one row per Label Studio annotation
across API pulls, file exports and the previous annotations_raw.csv; one name per annotator; times
compared as times; bad ids and unknown choices are one line. No server needed (see
test_annotations_real.py for the same merge through a real server)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bbsard_audit.annotations.adjudication import AdjudicationRule
from bbsard_audit.annotations.pull import RAW_FILE, pull, read_raw, utc_time
from bbsard_audit.annotations.simulate import annotation_result
from bbsard_audit.base.io import guard_outputs, write_text
from bbsard_audit.base.contracts.audit import Layout
from pull_fixtures import ann, pull_file, task

RULE = AdjudicationRule()


def earlier_pull(tmp_path, tasks, users=None):
    """An earlier `annotate pull` through the library, its files recorded as pull's own (as the CLI does)."""
    with guard_outputs(tmp_path, command="annotate pull"):
        pull(tasks, tmp_path / "verdicts.csv", users=users or {}, rule=RULE, source={})


def earlier_raw_file(tmp_path, text: str) -> None:
    """annotations_raw.csv as an earlier pull left it (possibly damaged since, by pull's own write)."""
    with guard_outputs(tmp_path, command="annotate pull"):
        write_text(tmp_path / RAW_FILE, text)


def raw_of(tmp_path) -> pd.DataFrame:
    return pd.read_csv(tmp_path / RAW_FILE, dtype=str, keep_default_na=False)


def test_same_annotation_from_api_and_file_export_counts_once(tmp_path):
    # the API names user 5 by email; the file export of the same project only has the id
    api = [task(1, [ann(70, 5, "legal")]), task(2, [ann(71, 6, "correct")])]
    earlier_pull(tmp_path, api, users={5: "ann@x.org", 6: "bob@x.org"})
    result = pull_file(tmp_path, [task(1, [ann(70, 5, "legal")]), task(2, [ann(71, 6, "correct"), ann(72, 5, "minor")])])
    assert result.exit_code == 0, result.output
    raw = raw_of(tmp_path)
    assert sorted(raw["annotation_id"]) == ["70", "71", "72"]  # annotation 70 once, not twice
    # annotation 70 tied user 5 to ann@x.org, so their other annotation (72) carries the same name
    assert set(raw["annotator"]) == {"ann@x.org", "bob@x.org"}
    verdicts = pd.read_csv(tmp_path / "verdicts.csv").set_index("id")
    assert verdicts.loc[1, ["n_annotations", "agreement_status"]].tolist() == [1, "single"]
    assert verdicts.loc[2, "annotators"] == "ann@x.org;bob@x.org"


def test_an_api_pull_names_earlier_id_only_rows(tmp_path):
    """A file export named user 5 by id; the task is gone from the server since, but the API's user list
    still names user 5, so the earlier row takes the email too (one annotator, not two)."""
    assert pull_file(tmp_path, [task(9, [ann(90, 5, "legal")])]).exit_code == 0
    pull([task(1, [ann(1, 5)])], tmp_path / "verdicts.csv", users={5: "ann@x.org"}, rule=RULE, source={})
    assert set(raw_of(tmp_path)["annotator"]) == {"ann@x.org"}


def test_one_annotator_as_user_object_and_as_bare_id_is_one_identity(tmp_path):
    tasks = [task(1, [ann(1, {"id": 5, "email": "ann@x.org"}, "legal")]), task(2, [ann(2, 5, "minor")]),
             task(3, [ann(3, 9, "correct")])]
    assert pull_file(tmp_path, tasks).exit_code == 0
    assert raw_of(tmp_path).set_index("annotation_id")["annotator"].to_dict() == {
        "1": "ann@x.org", "2": "ann@x.org", "3": "user:9"}


@pytest.mark.parametrize("older, newer", [
    ("2026-01-02T11:00:00+01:00", "2026-01-02T10:30:00Z"),       # offset: 10:00 UTC is older than 10:30 UTC
    ("2026-01-02T10:00:00Z", "2026-01-02T10:00:00.5Z"),          # fraction: '.' sorts before 'Z' as text
    ("2026-01-02T11:00:00+01:00", "2026-01-02T10:30:00"),        # naive is UTC (10:30 UTC is the newer)
])
@pytest.mark.parametrize("newer_first", [True, False])
def test_newest_version_wins_by_time_not_by_text(tmp_path, older, newer, newer_first):
    first, second = (newer, "legal"), (older, "correct")
    if not newer_first:
        first, second = (older, "correct"), (newer, "legal")
    earlier_pull(tmp_path, [task(1, [ann(1, 5, first[1], updated=first[0])])])
    assert pull_file(tmp_path, [task(1, [ann(1, 5, second[1], updated=second[0])])]).exit_code == 0
    raw = raw_of(tmp_path)
    assert len(raw) == 1 and raw.loc[0, "verdict"] == "legal"
    assert raw.loc[0, "updated_at"] == utc_time(newer)


@pytest.mark.parametrize("missing", [None, ""])
def test_a_missing_time_never_beats_a_present_one(tmp_path, missing):
    earlier_pull(tmp_path, [task(1, [ann(1, 5, "legal")])])
    later = pull_file(tmp_path, [task(1, [ann(1, 5, "correct", updated=missing, created=missing)])])
    assert later.exit_code == 0, later.output
    assert raw_of(tmp_path)["verdict"].tolist() == ["legal"]


def test_untimed_previous_row_loses_to_a_timed_one(tmp_path):
    earlier_raw_file(tmp_path, "id,task_id,annotation_id,annotator,verdict,corrected_nl,gold_labels_apply,"
                               "created_at,updated_at\n1,10,1,user:5,legal,,,,\n")
    assert pull_file(tmp_path, [task(1, [ann(1, 5, "correct", created="", updated="2020-01-01T00:00:00Z")])]).exit_code == 0
    assert raw_of(tmp_path)["verdict"].tolist() == ["correct"]


def test_times_are_written_normalised_so_text_order_is_time_order(tmp_path):
    tasks = [task(1, [ann(1, 5, updated="2026-01-02T11:00:00+01:00", created="2026-01-02T10:00:00.25")])]
    assert pull_file(tmp_path, tasks).exit_code == 0
    assert raw_of(tmp_path).loc[0, ["created_at", "updated_at"]].tolist() == [
        "2026-01-02T10:00:00.250000Z", "2026-01-02T10:00:00.000000Z"]


@pytest.mark.parametrize("qid", ["12a", "1.5", "", "-3", "١٢", True, 3.5, [1]])
def test_non_integer_question_id_is_one_line(tmp_path, qid):
    tasks = [task(1, [ann(1, 5)]), {"id": 77, "data": {"question_id": qid}, "annotations": [ann(2, 5)]}]
    result = pull_file(tmp_path, tasks)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "export.json, row 2: task 77: question_id" in line and "is not an integer" in line
    assert not (tmp_path / RAW_FILE).exists() and not (tmp_path / "verdicts.csv").exists()


@pytest.mark.parametrize("name, value", [("verdict", "Maybe"), ("gold_labels_apply", "Perhaps")])
def test_unknown_choice_is_one_line(tmp_path, name, value):
    result = [{"from_name": "verdict", "to_name": "question_nl", "type": "choices",
               "value": {"choices": [value if name == "verdict" else "Correct"]}},
              {"from_name": "gold_labels_apply", "to_name": "question_nl", "type": "choices",
               "value": {"choices": [value if name == "gold_labels_apply" else "Yes"]}}]
    out = pull_file(tmp_path, [task(1, [ann(1, 5)]), task(2, [ann(3, 5, result=result)], task_id=42)])
    assert out.exit_code == 2, out.output
    line = out.output.strip()
    assert "\n" not in line and f"row 2: task 42: annotation 3: unknown {name} choice {value!r}" in line
    assert not (tmp_path / "verdicts.csv").exists()


def test_bad_previous_raw_file_is_one_line(tmp_path):
    header = "id,task_id,annotation_id,annotator,verdict,corrected_nl,gold_labels_apply,created_at,updated_at\n"
    raw = tmp_path / RAW_FILE
    earlier_raw_file(tmp_path, header + "1,10,1,a,legal,,,2026-01-01T00:00:00Z,yesterday\n")
    with pytest.raises(Exception, match=r"annotations_raw.csv, row 2, id 1: updated_at 'yesterday' is not an ISO 8601 time"):
        read_raw(raw)
    earlier_raw_file(tmp_path, header + "1,10,1,a,wrong,,,,\n")
    result = pull_file(tmp_path, [task(1, [ann(1, 5)])])
    assert result.exit_code == 2 and "row 2, id 1: verdict 'wrong' is not one of correct, minor, legal" in result.output
    assert raw.read_text() == header + "1,10,1,a,wrong,,,,\n"  # the user's file is untouched


@pytest.mark.parametrize("text, reason", [
    ("x" * 200_000, "corrected_nl is 200,000 characters long, more than the 131,071 a cell may hold"),
    ("de huurder\x00", "corrected_nl holds a NUL character"),
    ("de huurder \ud800", "corrected_nl holds a lone surrogate (\\ud800)"),
])
def test_one_unstorable_correction_is_refused_alone_and_kept_verbatim(tmp_path, text, reason):
    """A long, NUL-bearing or lone-surrogate correction was written by pull and then refused by every
    reader, the next pull included (or a traceback on every pull): one annotation blocked them all."""
    from bbsard_audit.base.contracts.verdicts import read_verdicts

    bad = ann(2, {"id": 1, "email": "a@x"}, "legal",
              result=annotation_result("legal", text, gold_labels_apply="yes", layout=Layout()))
    tasks = [task(1, [ann(1, {"id": 1, "email": "a@x"})]), task(2, [bad]), task(3, [ann(3, {"id": 1, "email": "a@x"})])]
    for _ in range(2):  # and the next pull goes on
        ran = pull_file(tmp_path, tasks)
        assert ran.exit_code == 0 and "Traceback" not in ran.output, ran.output
        lines = [line for line in ran.output.splitlines() if line.startswith("warning: task 20 ")]
        assert len(lines) == 1 and reason in lines[0] and "annotations_refused.json" in lines[0], ran.output
    raw = read_raw(tmp_path / RAW_FILE)
    assert sorted(raw["id"]) == [1, 3]  # the others are pulled
    verdicts = read_verdicts(tmp_path / "verdicts.csv")
    assert verdicts.set_index("id").loc[2, "agreement_status"] == "unresolved"
    kept = json.loads((tmp_path / "annotations_refused.json").read_text(encoding="utf-8"))
    assert len(kept) == 1 and kept[0]["task_id"] == 20 and kept[0]["annotation"]["result"] == bad["result"]


def test_a_table_writer_never_writes_a_cell_its_reader_refuses(tmp_path):
    from bbsard_audit.base.contracts.verdicts import verdicts_spec
    from bbsard_audit.base.errors import InputError

    frame = pd.DataFrame({"id": [1], "verdict": ["legal"], "corrected_nl": ["a\x00b"]})
    with pytest.raises(InputError, match="corrected_nl holds a NUL character"):
        verdicts_spec(Layout()).write_file(tmp_path / "v.csv", frame)
    assert not (tmp_path / "v.csv").exists()


def test_an_annotation_on_a_task_without_a_question_id_is_kept_verbatim_and_said(tmp_path):
    """A task added to the project by hand carries no question_id: its annotation counts for no question,
    and was dropped without a word (never lose an annotation)."""
    by_hand = {"id": 99, "data": {"text": "a note the lead added by hand"},
               "annotations": [ann(7, {"id": 1, "email": "a@x"}, "legal"), {**ann(8, {"id": 1, "email": "a@x"}),
                                                                            "was_cancelled": True}]}
    tasks = [task(1, [ann(1, {"id": 1, "email": "a@x"})]), by_hand]
    for _ in range(2):  # a second pull keeps one copy
        ran = pull_file(tmp_path, tasks)
        assert ran.exit_code == 0 and "Traceback" not in ran.output, ran.output
        (line,) = [x for x in ran.output.splitlines() if "without a question_id" in x]
        assert line.startswith("warning: 1 annotation(s) on 1 task(s) without a question_id (task ids 99;") \
            and "annotations_refused.json" in line, line
    assert sorted(read_raw(tmp_path / RAW_FILE)["id"]) == [1]  # the campaign's own annotation is pulled
    kept = json.loads((tmp_path / "annotations_refused.json").read_text(encoding="utf-8"))
    assert [(k["task_id"], k["id"], k["annotation_id"]) for k in kept] == [(99, None, 7)]  # not the cancelled one
    assert kept[0]["annotation"]["result"] == by_hand["annotations"][0]["result"]
