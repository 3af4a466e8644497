"""The embedded sample: loads strictly, and its side files (flaws, verdicts, back-translations) agree
with the questions they describe. Most fast tests of other stages rely on these properties."""

from __future__ import annotations

import csv
import json
import re

import pytest

from bbsard_audit.base.dataset import load_dataset, sample_dir

ERROR_TYPES = {"legal_term", "netherlands_term", "party_role", "negation", "number",
               "region_institution", "omission", "untranslated"}
VERDICTS = {"correct", "minor", "legal"}
GOLD_APPLY = {"yes", "no", "unsure"}
STATUS = {"agreed", "adjudicated", "single"}


def _rows(name: str) -> list[dict]:
    with open(sample_dir() / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def ds():
    return load_dataset("sample", strict=True)


def test_sample_loads_with_expected_counts(ds):
    assert len(ds.select("train")) == 28
    assert len(ds.select("test")) == 12
    assert sorted(p.id for p in ds.pairs) == list(range(1, 41))
    assert ds.errors == []
    assert ds.corpus is not None and len(ds.corpus) >= 200
    assert min(ds.corpus.ids) > 40  # article ids never collide with question ids
    assert all(t.strip() for t in ds.corpus.texts("fr")) and all(t.strip() for t in ds.corpus.texts("nl"))
    known = set(ds.corpus.ids)
    assert all(1 <= len(p.article_ids) <= 4 and set(p.article_ids) <= known for p in ds.pairs)
    # the only warnings are the (realistic) French metadata in the Dutch files
    assert ds.warnings and all("still in French" in w.message for w in ds.warnings)


def test_flaws_cover_every_error_type_and_differ_from_the_fix(ds):
    by_id = ds.by_id()
    flaws = _rows("flaws.csv")
    assert {f["error_type"] for f in flaws} == ERROR_TYPES
    assert len(flaws) == len({f["id"] for f in flaws}) == 8
    assert sum(f["split"] == "test" for f in flaws) >= 3
    for f in flaws:
        pair = by_id[int(f["id"])]
        assert f["split"] == pair.split
        assert f["correct_nl"].strip() and f["description"].strip()
        assert pair.target != f["correct_nl"], f["id"]


def test_verdicts_and_raw_annotations_are_consistent(ds):
    ids = {p.id for p in ds.pairs}
    flawed = {int(f["id"]) for f in _rows("flaws.csv")}
    verdicts = _rows("verdicts.csv")
    raw = _rows("annotations_raw.csv")
    assert flawed <= {int(v["id"]) for v in verdicts}
    for v in verdicts:
        assert int(v["id"]) in ids
        assert v["verdict"] in VERDICTS and v["gold_labels_apply"] in GOLD_APPLY
        assert v["agreement_status"] in STATUS
        assert (v["verdict"] == "correct") == (v["corrected_nl"] == "")
        mine = [r for r in raw if r["id"] == v["id"]]
        assert len(mine) == int(v["n_annotations"]) == len(v["annotators"].split(";"))
        disagree = len({r["verdict"] for r in mine}) > 1
        assert disagree == (v["agreement_status"] == "adjudicated"), v["id"]
    for r in raw:
        assert int(r["id"]) in ids and r["verdict"] in VERDICTS and r["gold_labels_apply"] in GOLD_APPLY
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created_at"])
        assert r["updated_at"] >= r["created_at"]
    assert len({r["annotation_id"] for r in raw}) == len(raw)


def test_backtranslations_cover_every_pair(ds):
    lines = (sample_dir() / "backtranslations_nl_fr.jsonl").read_text(encoding="utf-8").splitlines()
    bt = {(rec := json.loads(line))["id"]: rec["backtranslation"] for line in lines}
    assert set(bt) == {p.id for p in ds.pairs} and len(lines) == 40
    assert all(text.strip() for text in bt.values())


def test_gold_articles_share_vocabulary_with_their_question(ds):
    """Lexical retrieval on the sample is meaningful: most questions share a content word with a gold article."""
    text = dict(zip(ds.corpus.ids, ds.corpus.texts("fr")))
    words = lambda s: {w for w in re.findall(r"\w+", s.lower()) if len(w) >= 5}
    hits = [bool(words(p.source) & set().union(*(words(text[a]) for a in p.article_ids)))
            for p in ds.pairs]
    assert sum(hits) / len(hits) >= 0.6
