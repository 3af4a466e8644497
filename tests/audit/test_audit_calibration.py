"""Calibration maths on hand-checkable data, and the retrieval-consistency signal's run readers."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import audit_frame

from bbsard_audit.audit.calibration import best_f1_threshold, calibrate, roc_auc
from bbsard_audit.base.contracts.audit import BBSARD_LAYOUT
from bbsard_audit.base.contracts.verdicts import read_verdicts
from bbsard_audit.audit.retrieval_consistency import RetrievalConsistency, gold_rank, load_run
from bbsard_audit.base.errors import InputError


def test_roc_auc_counts_ties_half_and_matches_pairs():
    y = np.array([1, 1, 0, 0, 0], bool)
    score = np.array([0.9, 0.5, 0.5, 0.2, 0.1])
    # pairs (pos, neg): 0.9 beats all 3; 0.5 beats 2 and ties 1 -> (3 + 2.5) / 6
    assert roc_auc(y, score) == pytest.approx(5.5 / 6)
    assert np.isnan(roc_auc(np.zeros(3, bool), np.arange(3)))


def test_best_f1_threshold():
    y = np.array([1, 1, 0, 0], bool)
    t, p, r = best_f1_threshold(y, np.array([0.9, 0.7, 0.6, 0.1]))
    assert (t, p, r) == (0.7, 1.0, 1.0)


def test_calibrate_orients_signals_and_suggests_thresholds(tmp_path):
    audit = audit_frame(range(1, 7), [True, True, False, False, True, False]).assign(
        risk=[0.9, 0.8, 0.2, 0.1, 0.6, 0.05], flags=["term_rejected", "omission", "", "", "term_missing", ""],
        bt_chrf=[20.0, 35.0, 80.0, 90.0, 70.0, 95.0])
    audit.to_csv(tmp_path / "audit.csv", index=False)
    (tmp_path / "v.csv").write_text("id,verdict\n1,legal\n2,legal\n3,correct\n4,minor\n5,correct\n6,correct\n99,legal\n")
    result = calibrate(tmp_path / "audit.csv", tmp_path / "v.csv")
    s = result.summary
    assert s.n_matched == 6 and s.n_unmatched == 1 and s.n_positive == 2
    assert s.combined.roc_auc == 1.0 and s.combined.precision == pytest.approx(2 / 3)
    assert s.combined.recall == 1.0 and s.combined.suggested_threshold == 0.8
    chrf = result.table.set_index("signal").loc["bt_chrf"]
    assert chrf["direction"] == "lower_is_worse" and chrf["roc_auc"] == 1.0 and chrf["suggested_threshold"] == 35.0
    minor = calibrate(tmp_path / "audit.csv", tmp_path / "v.csv", positive="minor+legal").summary
    assert minor.n_positive == 3
    flag = result.table.set_index("signal").loc["term_missing"]
    assert flag["kind"] == "flag" and flag["precision"] == 0.0


def test_verdicts_errors_name_file_row_and_id(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("id,verdict\n1,correct\nx,legal\n")
    with pytest.raises(InputError, match=r"v.csv, row 3: id 'x' is not an integer"):
        read_verdicts(path)
    path.write_text("qid,verdict\n1,correct\n")
    with pytest.raises(InputError, match=r"v.csv: missing column\(s\) id"):
        read_verdicts(path)


def test_runs_trec_and_json_agree_and_give_gold_ranks(tmp_path):
    (tmp_path / "r.trec").write_text("7 Q0 100 2 0.5 x\n7 Q0 200 1 0.9 x\n7 Q0 300 3 0.1 x\n")
    (tmp_path / "r.json").write_text('{"7": ["200", "100", "300"]}')
    trec, js = load_run(tmp_path / "r.trec"), load_run(tmp_path / "r.json")
    assert trec == js == {"7": ["200", "100", "300"]}
    assert gold_rank(trec, 7, (100, 300)) == 2 and gold_rank(trec, 7, (999,)) == 4
    assert np.isnan(gold_rank(trec, 8, (100,)))
    (tmp_path / "nl.json").write_text('{"7": ["300", "999", "100", "200"]}')
    _, cols = RetrievalConsistency(tmp_path / "r.json", tmp_path / "nl.json").check([7], [(200,)])
    cols = cols.rename(columns=BBSARD_LAYOUT.column)  # its columns by role, named as bBSARD's files
    assert cols.loc[0, "rc_rank_fr"] == 1 and cols.loc[0, "rc_rank_nl"] == 4 and cols.loc[0, "rc_log2_rank_ratio"] == 2


def test_bad_trec_line_is_an_input_error(tmp_path):
    (tmp_path / "bad.trec").write_text("7 Q0 100 1 0.5 x\n7 Q0 100\n")
    with pytest.raises(InputError, match=r"bad.trec, row 2: expected 6 columns \(qid Q0 docid rank score tag\), found 3"):
        load_run(tmp_path / "bad.trec")


@pytest.mark.shared
def test_shared_runs_load(shared_runs):
    run = load_run(shared_runs / "bm25_nl.trec")
    assert len(run) == 203 and run == load_run(shared_runs / "bm25_nl.json")
