"""The source registry and the translated-benchmark sources: BEIR folders, HF datasets in MTEB/BEIR
layout, both bBSARD hub layouts, and the YAML manifest joining a source and a target side."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from benchmark_files import as_beir, en_nl, jsonl, qrels
from conftest import need
from test_dataset import ARTICLES, FR, NL
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import Dataset, load_dataset, sample_dir
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.languages import BBSARD, LanguagePair
from bbsard_audit.base.sources import SIDES, SOURCES, registry

runner = CliRunner()
SAMPLE_BT = sample_dir() / "backtranslations_nl_fr.jsonl"


def pair_fields(ds: Dataset):
    return [(p.id, p.split, p.source, p.target, p.article_ids, p.category, p.subcategory,
             p.extra_description, dict(p.target_meta)) for p in ds.pairs]


def test_every_source_declares_itself_in_the_registry():
    assert {s.name for s in SOURCES} >= {"sample", "csv", "hf", "manifest"}
    assert {(r.format, r.name) for r in SIDES} >= {("beir", "beir-folder"), ("beir", "beir-hf")}
    assert all(s.doc for s in SOURCES) and all(r.doc for r in SIDES)


def test_a_new_source_is_one_registration(monkeypatch):
    monkeypatch.setattr(registry, "SOURCES", list(registry.SOURCES))
    calls = []

    @registry.source("echo", "a test source", matches=lambda src: src.startswith("echo:"), order=1)
    def load(src, with_corpus):
        calls.append((src, with_corpus))
        return Dataset(source=src, revision="r", pairs=[], pair=BBSARD)

    assert load_dataset("echo:x", with_corpus=False).source == "echo:x" and calls == [("echo:x", False)]
    assert load_dataset("sample").source == "sample"


def test_manifest_of_two_beir_folders_loads_the_same_dataset_as_the_csv_folder(tmp_path):
    csv_ds = load_dataset(str(sample_dir()))
    ds = load_dataset(str(as_beir(csv_ds, tmp_path)))
    assert pair_fields(ds) == pair_fields(csv_ds) and ds.pair == BBSARD
    assert ds.corpus.ids == csv_ds.corpus.ids and ds.corpus.texts("nl") == csv_ds.corpus.texts("nl")
    meta = "Dutch metadata {} (category, subcategory, extra_description) are still in French in all {} rows ({})"
    assert [w.message for w in csv_ds.warnings] == [meta.format("columns", 28, "split train"),
                                                    meta.format("columns", 12, "split test")]
    assert [w.message for w in ds.warnings] == [meta.format("fields", 40, "train 28, test 12")]  # one queries.jsonl
    prov = ds.provenance()
    assert prov["source"] == "bbsard-beir" and prov["n_pairs"] == csv_ds.provenance()["n_pairs"]
    assert set(prov["files_sha256"]) >= {"bbsard-beir.yaml", "source/queries.jsonl", "target/qrels/test.tsv"}
    assert "languages" not in prov  # fr -> nl, as every sidecar before pairs existed
    assert str(tmp_path) not in json.dumps(prov)


def audit(dataset, out: Path, *extra) -> pd.DataFrame:
    result = runner.invoke(app, ["audit", "--dataset", str(dataset), "--backtranslations", str(SAMPLE_BT),
                                 "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return pd.read_csv(out / "audit.csv")


def same_audit(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a, b)


def test_audit_of_the_manifest_equals_the_audit_of_the_csv_folder(tmp_path):
    """Issue 16, item 7: the same data as two BEIR folders under a manifest gives the same audit,
    back-translations (`--backtranslations FILE`) included."""
    manifest = as_beir(load_dataset(str(sample_dir())), tmp_path / "beir")
    same_audit(audit(sample_dir(), tmp_path / "csv"), audit(manifest, tmp_path / "manifest"))
    assert (tmp_path / "manifest" / "audit.csv").read_text().count("\n") > 40
    meta = json.loads((tmp_path / "manifest" / "audit.meta.json").read_text())
    assert meta["dataset"]["source"] == "bbsard-beir" and meta["backtranslation"]["status"] == "used"


@pytest.mark.shared
def test_real_test_split_as_beir_gives_the_same_audit(shared_dir, tmp_path):
    manifest = as_beir(load_dataset(str(shared_dir), with_corpus=False), tmp_path / "beir")
    bt = shared_dir / "backtranslations_nl_fr.jsonl"
    outs = []
    for name, src in (("csv", shared_dir), ("manifest", manifest)):
        result = runner.invoke(app, ["audit", "--dataset", str(src), "--split", "test", "--backtranslations",
                                     str(bt), "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        outs.append(pd.read_csv(tmp_path / name / "audit.csv"))
    same_audit(*outs)
    assert len(outs[0]) == 222


def test_another_pair_validates_and_audits_with_its_own_codes(tmp_path):
    manifest = en_nl(tmp_path)
    ds = load_dataset(str(manifest))
    assert ds.pair == LanguagePair("en", "nl") and ds.corpus is None
    assert [(p.id, p.source, p.target, p.article_ids) for p in ds.pairs] == [
        (1, "What is the notice period?", "Wat is de opzegtermijn?", (101, 102)),
        (2, "How to divorce?", "Hoe scheiden?", (103,))]  # score 0: judged, not relevant (as beir reads it)
    assert ds.provenance()["languages"] == {"source": "en", "target": "nl"}
    result = runner.invoke(app, ["validate", "--dataset", str(manifest)])
    assert result.exit_code == 0 and "test   en: 2 questions  nl: 2 questions  gold links: 3" in result.output
    result = runner.invoke(app, ["audit", "--dataset", str(manifest), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    header = (tmp_path / "out" / "audit.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[3:5] == ["question_en", "question_nl"] and "qa_numbers_en" in header and "qa_numbers_fr" not in header
    meta = json.loads((tmp_path / "out" / "audit.meta.json").read_text(encoding="utf-8"))
    assert meta["languages"] == {"source": "en", "target": "nl"} and meta["ids"] == "integer"
    result = runner.invoke(app, ["audit", "selftest", "--dataset", str(manifest), "--split", "test",
                                 "--out", str(tmp_path / "st")])
    assert result.exit_code == 2 and "error: the self-test corrupts fr->nl pairs only" in result.output


@pytest.mark.parametrize("text, expected", [
    ("name: x\nsource: {path: en, lang: en, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\nextra: 1\n",
     "m.yaml: extra: unknown key (known: citation, license, name, source, target)"),
    ("name: x\nsource: {path: en, lang: en, format: beir, split: test}\ntarget: {path: nl, lang: nl, format: beir}\n",
     "m.yaml: source.split: unknown key"),
    ("name: x\nsource: {path: en, lang: en, format: trec}\ntarget: {path: nl, lang: nl, format: beir}\n",
     "m.yaml: source.format: unknown format 'trec' (known: beir)"),
    ("name: x\nsource: {path: en, lang: en, format: beir}\ntarget: {path: nl, lang: dutch, format: beir}\n",
     "m.yaml: target.lang: unknown language 'dutch'"),
    ("name: x\nsource: {path: en, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n",
     "m.yaml: source.lang: missing"),
    ("name: x\nsource: {path: en, lang: nl, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n",
     "m.yaml: source and target are both 'nl'"),
    ("- not a mapping\n", "m.yaml: a dataset manifest must be a mapping"),
])
def test_a_bad_manifest_is_one_line_exit_2_and_nothing_written(tmp_path, text, expected):
    en_nl(tmp_path)
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_dataset(str(tmp_path / "m.yaml"))
    assert expected in err.value.one_line()
    for command in (["validate"], ["audit", "--out", str(tmp_path / "out")]):
        result = runner.invoke(app, [*command, "--dataset", str(tmp_path / "m.yaml")])
        assert result.exit_code == 2 and expected in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target_rows, target_qrels, expected", [
    ([{"_id": "1", "text": "Wat is de opzegtermijn?"}], None,
     "nl/qrels/test.tsv, row 4, id 2: query id not in"),
    (None, [(1, 101, 1), (1, 102, 1), (2, 103, 2), (2, 104, 0)],
     "nl/qrels/test.tsv, row 4, id 2: qrels differ between source (103:1,104:0) and target (103:2,104:0)"),
    (None, [(1, 101, 1), (1, 102, 1)], "en/qrels/test.tsv, row 4, id 2: query id judged on the source side but not in"),
    ([{"_id": "1", "text": "Wat?"}, {"_id": "q2", "text": "Hoe?"}], None,  # string ids: "2" is not "q2"
     "nl/qrels/test.tsv, row 4, id 2: query id not in"),
    ([{"_id": "1", "text": "Wat?"}, {"_id": "q 2", "text": "Hoe?"}], None,
     "nl/queries.jsonl, row 2: query id 'q 2' is not a valid id (no white space, comma, semicolon or quote)"),
    ([{"_id": "1", "text": "Wat?"}, {"_id": "2"}], None, "nl/queries.jsonl, row 2, id 2: missing key(s) text"),
    (None, [(1, 101, "x")], "nl/qrels/test.tsv, row 2, id 1: score 'x' is not an integer"),
    (None, [(1, 101, 1), (1, 102, 1), (2, 103, 0), (2, 104, 0)], "nl/qrels/test.tsv, row 4, id 2: qrels differ"),
])
def test_source_and_target_that_disagree_are_one_line_each(tmp_path, target_rows, target_qrels, expected):
    manifest = en_nl(tmp_path, target_rows, target_qrels)
    with pytest.raises(InputError) as err:
        load_dataset(str(manifest))
    assert expected in err.value.one_line()
    result = runner.invoke(app, ["validate", "--dataset", str(manifest)])
    assert result.exit_code == 1 and expected in result.output and "Traceback" not in result.output


def test_bad_jsonl_line_and_one_sided_split(tmp_path):
    manifest = en_nl(tmp_path)
    path = tmp_path / "nl" / "queries.jsonl"
    path.write_text(path.read_text() + "{not json\n", encoding="utf-8")
    qrels(tmp_path / "en" / "qrels" / "dev.tsv", [(3, 101, 1)])
    ds = load_dataset(str(manifest), strict=False)
    lines = [e.one_line() for e in ds.errors]
    assert any(line.startswith(f"{path}, row 3: not a JSON line") for line in lines)
    assert any("en/qrels/dev.tsv: split 'dev' has no qrels on the target side" in line for line in lines)
    assert len(lines) == 2


def test_the_split_is_the_qrels_file_name(tmp_path):
    manifest = en_nl(tmp_path)
    for side, text in (("en", "Unjudged"), ("nl", "Niet beoordeeld")):
        path = tmp_path / side / "queries.jsonl"
        if side == "nl":
            path.write_text(path.read_text() + json.dumps({"_id": "3", "text": text}) + "\n")
        qrels(tmp_path / side / "qrels" / "dev.tsv", [(3, 105, 1)])
    ds = load_dataset(str(manifest))
    assert ds.splits == ["test", "dev"] and [p.id for p in ds.select("dev")] == [3]
    with pytest.raises(InputError, match="unknown split 'val'; use train, test, dev or all"):
        ds.select("val")


def test_hf_datasets_in_mteb_beir_layout(tmp_path):
    """One side a hub-style repo (card `configs` + files, read by `datasets.load_dataset`), the other
    `save_to_disk` copies; both as clips/beir-nl-* lay them out (configs corpus, queries, default)."""
    datasets = need("datasets")
    src = tmp_path / "hub-en"
    jsonl(src / "queries" / "queries.jsonl", [{"_id": "1", "text": "Notice period?"}, {"_id": "2", "text": "Divorce?"}])
    jsonl(src / "corpus" / "corpus.jsonl", [{"_id": str(a), "title": "T", "text": f"doc {a}"} for a in (101, 102, 103)])
    jsonl(src / "qrels" / "test.jsonl", [{"query-id": q, "corpus-id": d, "score": 1}  # one file format per repo
                                         for q, d in ((1, 101), (1, 102), (2, 103))])
    (src / "README.md").write_text(
        "---\nconfigs:\n- config_name: corpus\n  data_files:\n  - split: corpus\n    path: corpus/corpus.jsonl\n"
        "- config_name: queries\n  data_files:\n  - split: queries\n    path: queries/queries.jsonl\n"
        "- config_name: default\n  data_files:\n  - split: test\n    path: qrels/test.jsonl\n---\n")
    tgt = tmp_path / "saved-nl"
    D = datasets.Dataset.from_list
    datasets.DatasetDict({"queries": D([{"_id": "1", "text": "Opzegtermijn?"}, {"_id": "2", "text": "Scheiding?"}])}
                         ).save_to_disk(str(tgt / "queries"))
    datasets.DatasetDict({"corpus": D([{"_id": str(a), "title": "T", "text": f"doc-nl {a}"} for a in (101, 102, 103)])}
                         ).save_to_disk(str(tgt / "corpus"))
    datasets.DatasetDict({"test": D([{"query-id": q, "corpus-id": d, "score": 1} for q, d in
                                     ((1, 101), (1, 102), (2, 103))])}).save_to_disk(str(tgt / "default"))
    manifest = tmp_path / "m.yml"
    manifest.write_text(f"name: toy\nsource: {{path: {src.name}, lang: en, format: beir}}\n"
                        f"target: {{path: {tgt.name}, lang: nl, format: beir}}\n", encoding="utf-8")
    ds = load_dataset(str(manifest))
    assert [(p.id, p.target, p.article_ids) for p in ds.pairs] == [(1, "Opzegtermijn?", (101, 102)),
                                                                    (2, "Scheiding?", (103,))]
    assert ds.corpus.texts("en")[0] == "T doc 101" and ds.corpus.texts("nl")[2] == "T doc-nl 103"
    assert load_dataset(str(manifest), with_corpus=False).corpus is None
    prov = ds.provenance()
    assert set(prov["files_sha256"]) == {"m.yml", "source/hf:hub-en", "target/hf:saved-nl"}
    assert str(tmp_path) not in json.dumps(prov)
    (tgt / "default").rename(tgt / "qrels-elsewhere")
    result = runner.invoke(app, ["validate", "--dataset", str(manifest)])
    assert result.exit_code == 1 and "cannot load config 'default'" in result.output


def test_hf_bbsard_in_its_by_language_layout(tmp_path):
    """The card's other layout (configs fr/nl, splits corpus/train/test) gives the same dataset."""
    datasets = need("datasets")
    repo = tmp_path / "bBSARD"
    for lang in ("fr", "nl"):  # splits of one config differ in columns: `save_to_disk` copies, as the hub's parquet
        datasets.DatasetDict({"test": datasets.Dataset.from_list(FR if lang == "fr" else NL),
                              "corpus": datasets.Dataset.from_list(ARTICLES[lang])}).save_to_disk(str(repo / lang))
    ds = load_dataset(f"hf:{repo}")
    assert [(p.id, p.split, p.target, p.article_ids) for p in ds.pairs] == [
        (1, "test", NL[0]["question"], (101, 102)), (2, "test", NL[1]["question"], (103,))]
    assert ds.corpus.ids == (101, 102, 103) and ds.provenance()["source"] == "hf:bBSARD"
    (repo / "fr").rename(repo / "en")
    result = runner.invoke(app, ["validate", "--dataset", f"hf:{repo}"])
    assert result.exit_code == 2 and "matches no bBSARD layout (configs found: en, nl;" in result.output


def test_a_hub_side_fails_fast_in_one_line_when_the_hub_is_unreachable(tmp_path, monkeypatch):
    need("datasets")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    en_nl(tmp_path)
    (tmp_path / "m.yaml").write_text("name: x\nsource: {path: en, lang: en, format: beir}\n"
                                     "target: {path: clips/beir-nl-nothere, lang: nl, format: beir}\n")
    result = runner.invoke(app, ["validate", "--dataset", str(tmp_path / "m.yaml")])
    assert result.exit_code == 2 and "hf:clips/beir-nl-nothere: the Hugging Face hub (127.0.0.1) is not reachable" in result.output


def test_a_query_with_no_relevant_document_is_one_line(tmp_path):
    zero = [(1, 101, 1), (1, 102, 1), (2, 103, 0)]
    manifest = en_nl(tmp_path, target_qrels=zero)
    qrels(tmp_path / "en" / "qrels" / "test.tsv", zero)
    ds = load_dataset(str(manifest), strict=False)
    assert [e.one_line() for e in ds.errors] == [
        f"{tmp_path / 'en' / 'qrels' / 'test.tsv'}, row 4, id 2: no relevant corpus id (every score is 0)"]
    assert [p.id for p in ds.pairs] == [1]


def test_a_folder_in_no_known_layout_is_one_line(tmp_path):
    manifest = en_nl(tmp_path)
    for p in sorted((tmp_path / "nl").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    ds = load_dataset(str(manifest), strict=False)
    assert [e.one_line() for e in ds.errors] == [
        f"{tmp_path / 'nl'}: neither a BEIR folder (no queries.jsonl) nor an HF dataset (no README.md configs, "
        "no save_to_disk folders)"]


def test_every_stage_names_one_revision_whether_it_reads_the_corpus_or_not(tmp_path):
    """validate (which reads the corpus) printed one revision for a manifest, and every later stage
    (audit, simulate: questions only) recorded another. The corpus files are hashed either way."""
    from bbsard_audit.app.example import write_beir_example
    from release_fixtures import make_dataset

    manifest = write_beir_example(tmp_path / "beir")
    folder = make_dataset(tmp_path / "csv")
    for src in (str(manifest), str(folder)):
        full, questions = load_dataset(src), load_dataset(src, with_corpus=False)
        assert questions.corpus is None and full.corpus is not None
        assert questions.revision == full.revision, src
        shown = CliRunner().invoke(app, ["validate", "--dataset", src]).output
        assert f"(revision {questions.revision})" in shown, shown
