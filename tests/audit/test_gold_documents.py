"""Questions meet their documents (issue 17, item 4): with a corpus audit, the question audit flags the
questions whose gold documents it flags, says which documents and why, and records which corpus audit
it used; a corpus audit of another dataset or with ids outside the corpus is one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bbsard_audit.audit.gold_documents import ALL, SOME, CorpusAuditInput, find, link
from bbsard_audit.audit.options import AuditOptions
from bbsard_audit.audit.pipeline import run_audit
from bbsard_audit.audit.registry import flag_specs
from bbsard_audit.app.cli import app
from bbsard_audit.base.errors import InputError
from conftest import local_path_leaks
from bbsard_audit.base.dataset import load_dataset
from corpus_fixtures import SAMPLE_CORPUS, audit_sample, corpus_frame, real_corpus_frame, write_corpus_audit

runner = CliRunner()


@pytest.fixture(scope="module")
def audits(tmp_path_factory, embedding_cache):
    """The sample audited with and without the fixture's corpus audit (same embedder, same cache)."""
    path = write_corpus_audit(tmp_path_factory.mktemp("corpus"))
    return audit_sample(embedding_cache), audit_sample(embedding_cache, path), path


def _row(frame, qid):
    return frame[frame["id"] == qid].iloc[0]


def test_questions_whose_gold_documents_are_flagged_are_flagged_with_reasons_and_counts(audits):
    plain, linked, _ = audits
    frame = linked.frame
    assert {"gold_n", "gold_flagged", "gold_max_risk"} <= set(frame.columns)
    assert not {"gold_n", "gold_flagged"} & set(plain.frame.columns)  # without a corpus audit: nothing changes
    hit = frame[frame["gold_flagged"] > 0]
    assert sorted(hit["id"]) == [2, 3, 7]  # 18's gold 1086 raised a flag but is not flagged: not counted
    q3, q7, q2 = _row(frame, 3), _row(frame, 7), _row(frame, 2)
    assert (q3["gold_n"], q3["gold_flagged"], q3["gold_max_risk"]) == (2, 2, 0.93)
    assert ALL in q3["flags"].split(";") and SOME not in q3["flags"].split(";")
    assert ("both of its gold documents are flagged in the corpus audit, so its relevance labels may be unusable: "
            "1027 (doc_untranslated), 1028 (doc_truncated)") in q3["reasons"].split(" | ")
    assert q7["flags"].split(";")[-1] == SOME and (q7["gold_n"], q7["gold_flagged"]) == (2, 1)
    assert "1 of its 2 gold documents is flagged in the corpus audit: 1029 (doc_numbers_changed)" in q7["reasons"]
    assert ALL in q2["flags"] and "its gold document is flagged in the corpus audit" in q2["reasons"]
    q18 = _row(frame, 18)
    assert (q18["gold_n"], q18["gold_flagged"]) == (3, 0) and "gold_" not in q18["flags"]


def test_the_soft_weight_enters_the_risk_as_one_more_piece_of_evidence(audits):
    plain, linked, _ = audits
    weights = {f: flag_specs()[f].weight for f in (SOME, ALL)}
    assert 0 < weights[SOME] < weights[ALL] < 0.5  # alone, neither makes a question `flagged`
    for qid, flag in ((3, ALL), (7, SOME), (2, ALL)):
        before, after = float(_row(plain.frame, qid)["risk"]), float(_row(linked.frame, qid)["risk"])
        assert after == pytest.approx(1 - (1 - before) * (1 - weights[flag]))
    untouched = linked.frame["gold_flagged"] == 0
    assert (linked.frame.loc[untouched, "risk"].to_numpy() == plain.frame.loc[untouched, "risk"].to_numpy()).all()


def test_the_sidecar_says_which_corpus_audit_and_how_many_questions_it_affects(audits):
    plain, linked, path = audits
    record = linked.meta["corpus_audit"]
    assert plain.meta["corpus_audit"] is None
    assert record["name"] == "corpus_audit.parquet" and len(record["sha256"]) == 64 and record["how"] == "--corpus-audit"
    assert record["dataset"]["source"] == "sample"
    assert (record["documents"], record["flagged_documents"], record["gold_documents_flagged"]) == (215, 5, 4)
    assert (record["questions_with_flagged_gold"], record["questions_all_gold_flagged"]) == (3, 2)
    assert str(path.parent) not in json.dumps(record)


def test_flags_are_declared_and_documented():
    spec = flag_specs()[SOME]
    assert spec.module == "bbsard_audit.audit.gold_documents" and spec.category == "other"
    from bbsard_audit.audit.flagdoc import DOC

    doc = DOC.read_text(encoding="utf-8")
    assert f"| `{SOME}` | bbsard_audit.audit.gold_documents | other | 0.1 |" in doc and f"`{ALL}`" in doc


@pytest.mark.parametrize("recorded, used", [
    (None, True),  # what `audit corpus` records: source id + the revision of the corpus files it read
    ("provenance", True),  # a dataset's own provenance record (its files' sha256)
    ({"source": "sample", "revision": "sha256:000000000000"}, False),  # the corpus changed since
    ({"source": "sample", "revision": "sha256:000000000000", "files_sha256": {"articles_nl.csv": "0" * 64}}, False),
    ({"source": "bsard-other", "revision": SAMPLE_CORPUS["revision"]}, False),  # another dataset's name
])
def test_a_corpus_audit_in_out_is_linked_only_when_its_sidecar_names_this_dataset(tmp_path, recorded, used):
    ds = load_dataset("sample")
    path = write_corpus_audit(tmp_path, dataset=ds.provenance() if recorded == "provenance" else recorded)
    found = link(CorpusAuditInput(path, False), ds)
    assert (found.link is not None, found.record["used"]) == (used, used)
    if not used:
        assert found.record["why"].endswith(f"not sample (revision {ds.revision})")


def test_find_prefers_the_given_file_then_the_out_folder(tmp_path):
    assert find(None, tmp_path) is None
    path = write_corpus_audit(tmp_path)
    assert find(None, tmp_path) == CorpusAuditInput(path, False)
    assert find(tmp_path / "x.parquet", tmp_path) == CorpusAuditInput(tmp_path / "x.parquet", True)


def test_ids_outside_the_corpus_are_one_line_naming_file_row_and_id(tmp_path):
    frame = corpus_frame()
    frame.loc[7, "id"], frame.loc[9, "id"] = "9999", "X12"
    path = write_corpus_audit(tmp_path, frame)
    with pytest.raises(InputError) as err:
        run_audit("sample", AuditOptions(corpus_audit=CorpusAuditInput(path, True), embedder="none-such"))
    assert err.value.one_line() == f"{path}, row 8, id 9999: not in the corpus of sample (and 1 more id(s))"


def test_a_given_corpus_audit_of_another_dataset_is_refused(tmp_path):
    path = write_corpus_audit(tmp_path, dataset={"source": "beir-nl-nq", "revision": "sha256:abc"})
    with pytest.raises(InputError, match=r"corpus_audit.parquet: this corpus audit names dataset beir-nl-nq "
                                         r"\(revision sha256:abc\), not sample \(revision sha256:"):
        run_audit("sample", AuditOptions(corpus_audit=CorpusAuditInput(path, True), embedder="none-such"))


def _audit(out, *extra):
    return runner.invoke(app, ["audit", "--dataset", "sample", "--split", "test", "--out", str(out), *map(str, extra)])


def test_cli_links_a_corpus_audit_found_in_out_and_leaves_another_datasets_alone(tmp_path, embedding_cache):
    out = tmp_path / "out"
    write_corpus_audit(out)
    res = _audit(out, "--cache-dir", embedding_cache)
    assert res.exit_code == 0, res.output
    assert ("corpus audit corpus_audit.parquet (found in --out): 2 question(s) with a flagged gold document, "
            "1 with all of them flagged") in " ".join(res.stderr.split())  # test split: questions 3 and 7
    meta = json.loads((out / "audit.meta.json").read_text())
    assert meta["corpus_audit"]["how"] == "found in --out" and meta["corpus_audit"]["used"] is True
    assert local_path_leaks(out, tmp_path) == []

    other = tmp_path / "other"
    write_corpus_audit(other, dataset={"source": "sample", "revision": "sha256:000000000000",
                                       "files_sha256": {"articles_fr.csv": "0" * 64}})
    res = _audit(other, "--cache-dir", embedding_cache)
    assert res.exit_code == 0, res.output
    assert "corpus audit corpus_audit.parquet in --out not used: it names dataset sample (revision " \
           "sha256:000000000000), not sample" in " ".join(res.stderr.split())
    meta = json.loads((other / "audit.meta.json").read_text())
    assert meta["corpus_audit"]["used"] is False and "gold_flagged" not in (other / "audit.csv").read_text()


def test_cli_bad_corpus_audit_is_one_line_exit_2_and_nothing_written(tmp_path):
    frame = corpus_frame()
    frame.loc[0, "id"] = "77777"
    bad = write_corpus_audit(tmp_path / "in", frame)
    res = _audit(tmp_path / "out", "--corpus-audit", bad)
    assert res.exit_code == 2
    assert res.stderr.strip() == f"error: {bad}, row 1, id 77777: not in the corpus of sample"
    assert not (tmp_path / "out" / "audit.csv").exists()


def test_a_corpus_audit_made_by_the_document_checks_links_the_same_questions(tmp_path, embedding_cache):
    """Real document checks on the fixture's texts flag the injected documents, and the link follows."""
    frame = real_corpus_frame()
    assert sorted(frame.loc[frame["flagged"], "id"]) == ["1020", "1027", "1028", "1029", "1200"]
    result = audit_sample(embedding_cache, write_corpus_audit(tmp_path, frame), split="test")
    hit = result.frame[result.frame["gold_flagged"] > 0].set_index("id")
    assert sorted(hit.index) == [3, 7] and ALL in hit.loc[3, "flags"] and SOME in hit.loc[7, "flags"]
    assert "1027 (doc_untranslated), 1028 (doc_truncated)" in hit.loc[3, "reasons"]
