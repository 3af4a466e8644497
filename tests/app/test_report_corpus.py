"""The report's Corpus section (issue 17, "Done when"): artifacts by type and severity, examples side by
side with their spans highlighted and escaped, and the questions whose gold documents are flagged."""

from __future__ import annotations

import json
import shutil

import pytest

from bbsard_audit.audit.pipeline import write_audit
from bbsard_audit.app.report import build_report
from bbsard_audit.app.report.corpus_section import marks
from conftest import local_path_leaks
from corpus_fixtures import audit_sample, corpus_frame, documents, real_corpus_frame, write_corpus_audit

EVIL = "<script>alert(1)</script> [x](javascript:alert(1)) *b* | c"


@pytest.fixture(scope="module")
def linked_audit(tmp_path_factory, embedding_cache):
    """A work folder of `audit corpus` + `audit --corpus-audit` on the sample."""
    root = tmp_path_factory.mktemp("work")
    write_audit(audit_sample(embedding_cache, write_corpus_audit(root)), root)
    return root


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_corpus_section_counts_artifacts_examples_and_questions(linked_audit, tmp_path):
    work = _copy(linked_audit, tmp_path / "w")
    files = build_report(work)
    assert files.sections == ("Findings", "Audit", "Corpus", "Provenance")
    md = files.markdown.read_text()
    assert "- **documents audited**: 215" in md and "- **flagged**: 5 (2.3%)" in md
    assert "- **flagged documents by severity**: high 3, medium 2" in md
    assert "- **dataset**: sample (revision sha256:e06818c7c32b)" in md  # the revision of the articles read
    # per flag: documents, share of all documents, flagged, then high | medium | low | none
    assert "| doc_untranslated | 1 | 0.47% | 1 | 1 | 0 | 0 | 0 |" in md
    assert "| doc_duplicate_translation | 1 | 0.47% | 0 | 0 | 0 | 1 | 0 |" in md
    fr, nl, _ = documents()
    assert f"<mark>{nl['1020'][:20]}" in md  # the meta-text preface, highlighted in the target excerpt
    assert "D<mark>Ã©</mark> vr" in md  # mojibake span
    assert "<mark>30</mark>" in md  # a number that is not in the source, near the end of the document
    assert "- **with a flagged gold document**: 3 (7.5%)" in md
    assert "- **with every gold document flagged**: 2 (5.0%)" in md
    worst = next(line for line in md.splitlines() if line.startswith("| 3 | test | 2 of 2"))
    assert "| 2 of 2 | 0.930 |" in worst and "1027 (doc_untranslated), 1028 (doc_truncated)" in worst
    assert "5 of 215 translated documents (2.3%) are flagged by the corpus audit; 3 of 40 questions have a " \
           "flagged gold document, 2 of them with every gold document flagged" in md
    html = files.html.read_text()
    assert html.count("<mark>") >= 5 and 'id="corpus-questions"' in html
    assert "corpus_audit.meta.json" in html  # its sidecar under Provenance (Audit stage)
    assert local_path_leaks(work, work, tmp_path) == []


def test_excerpts_and_reasons_are_escaped_with_their_highlight(tmp_path):
    frame = corpus_frame()
    i = frame.index[frame["id"] == "1200"][0]
    text = "Vooraf " + EVIL + " einde"
    frame.loc[i, "target_excerpt"] = text
    frame.loc[i, "reasons"] = EVIL
    frame.loc[i, "spans"] = json.dumps([{"side": "nl", "start": 1007, "end": 1007 + len(EVIL), "text": EVIL,
                                         "category": "other", "flag": "doc_mojibake"}])
    files = build_report(write_corpus_audit(tmp_path / "w", frame).parent)
    html = files.html.read_text()
    assert "<script>alert" not in html
    assert "Vooraf <mark>&lt;script&gt;alert(1)&lt;/script&gt; [x](javascript:alert(1)) *b* | c</mark> einde" in html
    md = files.markdown.read_text()
    assert "<script" not in md and "](javascript" not in md
    assert "Vooraf <mark>&lt;script&gt;alert(1)&lt;/script&gt; [x]\\(javascript:alert(1)) \\*b\\* \\| c</mark> einde" in md


def test_a_corpus_without_a_flagged_document_says_so(tmp_path):
    frame = corpus_frame()
    frame["flagged"] = False
    frame["risk"] = frame["risk"].clip(upper=0.3)
    md = build_report(write_corpus_audit(tmp_path / "w", frame).parent).markdown.read_text()
    assert "- **flagged**: 0 (0.0%)" in md and "No document is flagged" in md


def test_a_corpus_only_folder_reports_and_says_how_to_see_the_questions(tmp_path):
    files = build_report(write_corpus_audit(tmp_path / "w").parent)
    assert files.sections == ("Findings", "Corpus", "Provenance")
    md = files.markdown.read_text()
    assert "There is no audit.csv here: run `bbsard-audit audit --corpus-audit corpus_audit.parquet`" in md
    assert "5 of 215 translated documents (2.3%) are flagged by the corpus audit." in md


def test_an_audit_made_without_the_corpus_audit_is_said(linked_audit, tmp_path):
    import pandas as pd

    work = _copy(linked_audit, tmp_path / "w")
    audit = pd.read_csv(work / "audit.csv").drop(columns=["gold_n", "gold_flagged", "gold_max_risk"])
    audit.to_csv(work / "audit.csv", index=False)
    (work / "audit.meta.json").unlink()
    md = build_report(work).markdown.read_text()
    assert "audit.csv was made without a corpus audit" in md


def test_an_audit_made_with_another_corpus_audit_is_said(linked_audit, tmp_path):
    work = _copy(linked_audit, tmp_path / "w")
    write_corpus_audit(work, corpus_frame({"1001": {"risk": 0.7, "severity": "medium", "flagged": True,
                                                     "flags": "doc_wrong_language", "reasons": "German", "spans": []}}))
    md = build_report(work).markdown.read_text()
    assert "audit.csv was made with another corpus audit (corpus_audit.parquet, sha256" in md


@pytest.mark.parametrize("excerpt, spans, expected", [
    ("xx12 ab 12", [{"start": 108, "end": 110, "text": "12"}, {"start": 111, "end": 113, "text": "ab"}],
     ((2, 4), (5, 7))),  # the first '12' is the one the second span agrees with
    ("…hello world", [{"start": 50, "end": 55, "text": "hello"}], ((1, 6),)),  # text before the window's own
    ("cdefgh", [{"start": 10, "end": 14, "text": "abcd"}, {"start": 16, "end": 20, "text": "ghij"}],
     ((0, 2), (4, 6))),  # the window starts and ends inside spans
    ("abcdef", [{"start": 0, "end": 10, "text": "zzzzabcdef"}], ((0, 6),)),  # a span reaching into the window: clipped
    ("abcdef", [{"start": 3, "end": 5, "text": "qq"}], ()),  # not in the window
    ("abcdef", [{"start": 3, "end": 3, "text": ""}], ()),  # empty span (an empty document)
])
def test_spans_are_placed_in_an_excerpt_whose_offset_is_not_stored(excerpt, spans, expected):
    assert marks(excerpt, spans) == expected


def test_the_document_checks_own_output_gets_every_example_highlighted(tmp_path):
    """On a corpus audit the real document checks wrote, each example's evidence is found in its excerpt."""
    frame = real_corpus_frame()
    files = build_report(write_corpus_audit(tmp_path / "w", frame).parent)
    md = files.markdown.read_text()
    rows = [line for line in md.split("### Examples side by side")[1].split("### ")[0].splitlines()
            if line.startswith("| doc_")]
    assert len(rows) == 5 and all("<mark>" in row for row in rows), rows
    assert "<mark>Hier is de vertaling" in md


def test_the_report_holds_the_texts_of_flagged_documents_only_and_still_checks_them(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bbsard_audit.app.report.loaders import load_workdir
    from bbsard_audit.base.errors import InputError

    path = write_corpus_audit(tmp_path / "w")
    table = load_workdir(tmp_path / "w").tables["corpus_audit.parquet"]
    flagged = table["flagged"].astype(bool)
    assert len(table) == 215 and flagged.sum() == 5
    assert table.loc[flagged, "source_excerpt"].map(lambda v: isinstance(v, str) and v != "").all()
    assert table.loc[~flagged, ["reasons", "spans", "source_excerpt", "target_excerpt"]].isna().all().all()
    broken = pq.read_table(path).to_pandas()
    first = int(broken.index[broken["flagged"]][0])
    unflagged = int(broken.index[~broken["flagged"]][0])
    broken.loc[unflagged, "spans"] = "not json"  # not read: no text of an unflagged document is shown
    pq.write_table(pa.Table.from_pandas(broken, schema=pq.read_schema(path), preserve_index=False), path)
    assert len(load_workdir(tmp_path / "w").tables["corpus_audit.parquet"]) == 215
    broken.loc[first, "spans"] = "not json"
    pq.write_table(pa.Table.from_pandas(broken, schema=pq.read_schema(path), preserve_index=False), path)
    with pytest.raises(InputError) as err:
        load_workdir(tmp_path / "w")
    assert err.value.one_line() == f"corpus_audit.parquet, id {broken.loc[first, 'id']}: spans is not JSON"


def test_checks_that_did_not_run_or_ran_without_a_resource_are_said(tmp_path):
    path = write_corpus_audit(tmp_path / "w")
    md = build_report(path.parent).markdown.read_text()
    assert "checks not run" not in md and "checks run without" not in md  # the sidecar lists none
    meta_path = path.parent / "corpus_audit.meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(checks_unavailable=["doc_misaligned: not run (no embedder)"],
                checks_partial=["doc_misaligned: its word evidence (doc_align_words) not available: install "
                                "dict-freedict-fra-nld (apt-get install; FreeDict, the pair's bilingual dictionaries)"])
    meta_path.write_text(json.dumps(meta))
    md = build_report(path.parent).markdown.read_text()
    assert "- **checks not run**: doc_misaligned: not run (no embedder)" in md
    assert "- **checks run without a resource**: doc_misaligned: its word evidence (doc_align_words) not available: " \
           "install dict-freedict-fra-nld" in md
