"""Issue 23, hostile inputs round 4, on the data side: manifests, BEIR sources, ids, qrels, the corpus
reader (titles, resume fingerprint), the corpus run's work folder, question text bounds (NUL, lone
surrogates, size) and JSON line separators. Each test fails on the code before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from test_sources import jsonl, qrels
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset

runner = CliRunner()

PADDED = [("001", "What is the notice period?", "Wat is de opzegtermijn?", "010"),
          ("002", "Who pays for the roof?", "Wie betaalt het dak?", "020")]


def padded_benchmark(root: Path, rows=PADDED) -> Path:
    """An English -> Dutch BEIR benchmark whose ids are all digits with leading zeros."""
    for lang, col in (("en", 1), ("nl", 2)):
        jsonl(root / lang / "queries.jsonl", [{"_id": r[0], "text": r[col]} for r in rows])
        qrels(root / lang / "qrels" / "test.tsv", [(r[0], r[3], 1) for r in rows])
        jsonl(root / lang / "corpus.jsonl", [{"_id": r[3], "title": "", "text": f"{lang} document {r[3]} on rent."}
                                             for r in rows] + [{"_id": "030", "title": "", "text": f"{lang} other."}])
    manifest = root / "padded.yaml"
    manifest.write_text("name: padded\nsource: {path: en, lang: en, format: beir}\n"
                        "target: {path: nl, lang: nl, format: beir}\n", encoding="utf-8")
    return manifest


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------ b. zero-padded ids stay strings

def test_zero_padded_ids_stay_strings_and_a_perfect_run_scores_one(tmp_path):
    manifest = padded_benchmark(tmp_path)
    ds = load_dataset(str(manifest))
    assert [p.id for p in ds.pairs] == ["001", "002"] and ds.pairs[0].article_ids == ("010",)
    assert ds.corpus.ids == ("010", "020", "030")
    runs = tmp_path / "runs"
    runs.mkdir()
    for lang in ("en", "nl"):
        (runs / f"bm25_{lang}.trec").write_text("".join(f"{q} Q0 {d} 1 2.0 bm25_{lang}\n{q} Q0 030 2 1.0 bm25_{lang}\n"
                                                        for q, _, _, d in PADDED), encoding="utf-8")
    res = invoke("eval", "--dataset", manifest, "--split", "test", "--run", f"bm25_en={runs / 'bm25_en.trec'}",
                 "--run", f"bm25_nl={runs / 'bm25_nl.trec'}", "--out", tmp_path / "ev")
    assert res.exit_code == 0, res.output
    metrics = pd.read_csv(tmp_path / "ev" / "metrics.csv")
    full = metrics[metrics.subset == "full"]
    assert len(full) and (full["value"] == 1.0).all(), full[["system", "metric", "value"]]
    # the tool accepts its own corpus audit of the benchmark, and a release keeps the ids as written
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", tmp_path / "corpus", "--workers", "1")
    assert res.exit_code == 0, res.output
    res = invoke("audit", "--dataset", manifest, "--split", "test", "--out", tmp_path / "audit",
                 "--corpus-audit", tmp_path / "corpus" / "corpus_audit.parquet")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "audit" / "audit.csv").read_text(encoding="utf-8").splitlines()[1].startswith("001,")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict,corrected_nl\n001,correct,\n002,legal,Wie betaalt de herstelling van het dak?\n",
                        encoding="utf-8")
    res = invoke("release", "--dataset", manifest, "--verdicts", verdicts, "--audit", tmp_path / "audit" / "audit.csv",
                 "--out", tmp_path / "rel")
    assert res.exit_code == 0, res.output
    released = pd.read_csv(tmp_path / "rel" / "questions_nl_test.csv", dtype=str)
    assert released["id"].tolist() == ["001", "002"] and released["article_ids"].tolist() == ["010", "020"]
    assert (tmp_path / "rel" / "CHANGELOG.csv").read_text(encoding="utf-8").splitlines()[1].startswith("002,")


# ------------------------------------------------------------------ c, d. manifest paths and keys

def _manifest(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_relative_path_is_read_beside_the_manifest_only(tmp_path, monkeypatch):
    padded_benchmark(tmp_path)  # en/ and nl/ in tmp_path, the current folder
    monkeypatch.chdir(tmp_path)
    manifest = _manifest(tmp_path / "sub" / "m.yaml", "name: x\nsource: {path: en, lang: en, format: beir}\n"
                                                      "target: {path: nl, lang: nl, format: beir}\n")
    for command in (["validate"], ["audit", "corpus", "--out", str(tmp_path / "out")]):
        res = invoke(*command, "--dataset", manifest)
        assert res.exit_code == 2 and res.output.strip().splitlines() == [
            f"error: {manifest}: source.path: path does not exist: en (looked for {tmp_path / 'sub' / 'en'}; "
            "a hub dataset id is owner/name)"], res.output
    assert not (tmp_path / "out").exists()


def test_a_missing_local_side_is_not_taken_for_a_hub_id(tmp_path):
    padded_benchmark(tmp_path)
    for path in ("scifact-nl", "./nl-missing", "../elsewhere/nl", str(tmp_path / "absent"), "a/b/c"):
        manifest = _manifest(tmp_path / "m.yaml", f"name: x\nsource: {{path: en, lang: en, format: beir}}\n"
                                                  f"target: {{path: {path!r}, lang: nl, format: beir}}\n")
        res = invoke("validate", "--dataset", manifest)
        assert res.exit_code == 2 and f"target.path: path does not exist: {path} (" in res.output, res.output
        assert "hf:" not in res.output and "ConnectionError" not in res.output


def test_a_side_holding_only_a_corpus_is_a_beir_folder(tmp_path):
    padded_benchmark(tmp_path)
    (tmp_path / "nl" / "queries.jsonl").unlink()
    for p in (tmp_path / "nl" / "qrels").iterdir():
        p.unlink()
    res = invoke("validate", "--dataset", tmp_path / "padded.yaml")
    assert res.exit_code == 1 and f"error: {tmp_path / 'nl' / 'queries.jsonl'}: cannot read file: not found" in res.output
    assert "hf:" not in res.output, res.output
    res = invoke("audit", "corpus", "--dataset", tmp_path / "padded.yaml", "--out", tmp_path / "out", "--workers", "1")
    assert res.exit_code == 0 and "audited 3 documents" in res.output, res.output


def test_a_key_written_twice_in_a_manifest_is_refused_naming_key_and_line(tmp_path):
    padded_benchmark(tmp_path)
    base = "name: x\nsource: {path: en, lang: en, format: beir}\ntarget: {path: nl, lang: nl, format: beir}\n"
    for text, key, line, first in ((base + "name: y\n", "name", 4, 1),
                                   (base.replace("format: beir}", "format: beir, path: nl}", 1), "path", 2, 2),
                                   (base.replace("target: {path: nl, lang: nl, format: beir}",
                                                 "target:\n  path: nl\n  lang: nl\n  lang: en\n  format: beir"), "lang", 6, 5)):
        manifest = _manifest(tmp_path / "m.yaml", text)
        res = invoke("validate", "--dataset", manifest)
        assert res.exit_code == 2 and res.output.strip() == (
            f"error: {manifest}, row {line}: dataset manifest: key {key!r} appears twice (first on line {first}); "
            "write it once"), res.output


# ------------------------------------------------------------------ e. a qrels file without header

def test_a_qrels_file_without_header_keeps_its_first_judgment(tmp_path):
    manifest = padded_benchmark(tmp_path)
    for lang in ("en", "nl"):  # no header line: the first line is a judgment
        (tmp_path / lang / "qrels" / "test.tsv").write_text("001\t010\t1\n002\t020\t1\n", encoding="utf-8")
    ds = load_dataset(str(manifest))
    assert [(p.id, p.article_ids) for p in ds.pairs] == [("001", ("010",)), ("002", ("020",))]
    for header in ("query-id\tcorpus-id\tscore\n", "qid\tdocid\trel\n", "q\td\tscore\n"):
        for lang in ("en", "nl"):
            (tmp_path / lang / "qrels" / "test.tsv").write_text(header + "001\t010\t1\n002\t020\t1\n", encoding="utf-8")
        assert len(load_dataset(str(manifest)).pairs) == 2, header


# ------------------------------------------------------------------ g. text no output can hold; line ends

def _edit_query(root: Path, lang: str, index: int, text: str) -> Path:
    path = root / lang / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[index] = json.dumps({"_id": PADDED[index][0], "text": text})  # ASCII JSON: \u0000, \ud800 escaped
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_a_question_with_an_escaped_nul_or_a_lone_surrogate_is_one_line_and_nothing_written(tmp_path):
    manifest = padded_benchmark(tmp_path)
    for bad, problem in (("\x00", "a NUL character (\\u0000) at character 11"),
                         ("\ud800", "a lone surrogate (\\ud800) at character 11, not a character")):
        path = _edit_query(tmp_path, "nl", 1, f"Wie betaalt{bad} het dak?")
        for command in ("validate", "audit"):
            res = invoke(command, "--dataset", manifest, *(["--out", tmp_path / "out"] if command == "audit" else []))
            assert res.exit_code == (1 if command == "validate" else 2), res.output
            assert f"error: {path}, row 2, id 002: question holds {problem}" in res.output
            assert "Traceback" not in res.output and not isinstance(res.exception, UnicodeError)
        assert not (tmp_path / "out").exists()


def test_a_document_with_a_lone_surrogate_is_one_line_and_leaves_no_work_folder(tmp_path):
    manifest = padded_benchmark(tmp_path)
    corpus = tmp_path / "en" / "corpus.jsonl"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("en other", "en \\udc80 other"), encoding="utf-8")
    out = tmp_path / "out"
    res = invoke("audit", "corpus", "--dataset", manifest, "--out", out, "--workers", "1")
    assert res.exit_code == 2 and res.output.strip() == (
        f"error: {corpus}, row 3, id 030: text holds a lone surrogate (\\udc80) at character 3, not a character"), res.output
    assert not out.exists()


def test_line_and_paragraph_separators_inside_a_json_string_are_text_not_line_ends(tmp_path):
    manifest = padded_benchmark(tmp_path)
    _edit_query(tmp_path, "nl", 0, "Wat is de\u2028opzeg\x85termijn\x0c?")
    bad = _edit_query(tmp_path, "en", 1, "")  # an error on line 2 must be named line 2
    res = invoke("validate", "--dataset", manifest)
    assert f"error: {bad}, row 2, id 002: empty question text" in res.output, res.output
    assert "not a JSON line" not in res.output
    _edit_query(tmp_path, "en", 1, PADDED[1][1])
    ds = load_dataset(str(manifest))
    assert ds.pairs[0].question_nl == "Wat is de\u2028opzeg\x85termijn\x0c?"
    bt = tmp_path / "bt.jsonl"
    bt.write_text(json.dumps({"id": "001", "backtranslation": "What is the\u2028notice period?"}, ensure_ascii=False)
                  + "\n" + json.dumps({"id": "002", "backtranslation": "Who pays the roof?"}) + "\n", encoding="utf-8")
    res = invoke("audit", "--dataset", manifest, "--backtranslations", bt, "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ a question too long to embed

def test_an_over_long_question_is_refused_before_any_work_unless_the_bound_is_raised(tmp_path):
    manifest = padded_benchmark(tmp_path)
    _edit_query(tmp_path, "nl", 1, "Wie betaalt het dak? " * 2_000)  # 41,999 characters once stripped
    res = invoke("audit", "--dataset", manifest, "--out", tmp_path / "out")
    assert res.exit_code == 2 and res.output.strip() == (
        "error: padded, id 002: nl question of 41,999 characters is longer than --max-question-chars 20,000; "
        "refused (raise --max-question-chars if it is one)"), res.output
    assert not (tmp_path / "out").exists()
    res = invoke("audit", "--dataset", manifest, "--out", tmp_path / "out", "--max-question-chars", "50000")
    assert res.exit_code == 0, res.output
