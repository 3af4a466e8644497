"""Hostile inputs round 5 (part b), on copies of the real bBSARD runs and back-translations: JSON nested
thousands deep, Latin-1 bytes, ids mangled on the way (`775.0`, `" 775"`), negative ranks. Each test
fails on the code before its fix (a traceback, or exit 0 with every score 0 and a mere warning)."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from campaign_fixtures import campaign  # noqa: F401 (campaign: the fixture)

runner = CliRunner()
EVAL = ("--resamples", "1000", "--null-draws", "10")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(res, *expected: str) -> str:
    """The command failed with exit 2 and exactly one line naming what is expected, no traceback."""
    text = res.output.strip()
    assert res.exit_code == 2 and "\n" not in text and "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    for part in expected:
        assert part in text, (part, text)
    return text


@pytest.fixture
def runs(shared_runs, tmp_path) -> Path:
    """Writable copies of the real runs and qrels."""
    copy = tmp_path / "runs"
    shutil.copytree(shared_runs, copy)
    for p in copy.iterdir():
        p.chmod(0o644)
    return copy


def evaluate(runs: Path, run: Path, out: Path, qrels: Path | None = None):
    return invoke("eval", "--run", f"a={run}", "--qrels", qrels or runs / "qrels_test203.trec", "--out", out, *EVAL)


# ------------------------------------------------------------------ JSON nested deeper than Python recurses

def test_a_json_run_nested_thousands_deep_is_one_line(runs, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    one_line_error(evaluate(runs, deep, tmp_path / "out"), "deep.json", "nested too deeply")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("line, expected", [
    ("[" * 100_000 + "]" * 100_000, "row 4: not valid JSON (nested too deeply)"),
    ('{"id": ' + "9" * 5000 + ', "backtranslation": "x"}', "row 4: not valid JSON"),
])
def test_a_hostile_back_translation_line_is_one_line_naming_its_row(shared_dir, tmp_path, line, expected):
    lines = (shared_dir / "backtranslations_nl_fr.jsonl").read_text(encoding="utf-8").splitlines()
    bt = tmp_path / "bt.jsonl"
    bt.write_text("\n".join(lines[:3] + [line] + lines[3:]) + "\n", encoding="utf-8")
    one_line_error(invoke("audit", "--dataset", shared_dir, "--backtranslations", bt, "--out", tmp_path / "out"),
                   "bt.jsonl", expected)
    assert not (tmp_path / "out").exists()


def test_a_latin1_back_translation_file_is_one_line_naming_the_row(shared_dir, tmp_path):
    """Saved as Latin-1 by an editor: the first accented byte's row, not a UnicodeDecodeError traceback."""
    text = (shared_dir / "backtranslations_nl_fr.jsonl").read_text(encoding="utf-8")
    bt = tmp_path / "bt.jsonl"
    bt.write_bytes(text.encode("latin-1", "replace"))
    first = next(i for i, line in enumerate(text.splitlines(), 1) if not line.isascii())
    one_line_error(invoke("audit", "--dataset", shared_dir, "--backtranslations", bt, "--out", tmp_path / "out"),
                   f"bt.jsonl, row {first}: not valid UTF-8", "Latin-1")
    assert not (tmp_path / "out").exists()


def test_a_beir_queries_line_nested_thousands_deep_is_one_line(tmp_path):
    subprocess.run([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", "example", "beir", "--out",
                    tmp_path / "ex"],
                   check=True, capture_output=True)
    queries = tmp_path / "ex" / "nl" / "queries.jsonl"
    lines = queries.read_text(encoding="utf-8").splitlines()
    queries.write_text("\n".join(lines[:2] + ["[" * 100_000 + "]" * 100_000] + lines[2:]) + "\n", encoding="utf-8")
    res = invoke("audit", "--dataset", tmp_path / "ex" / "sample-beir.yaml", "--out", tmp_path / "out")
    one_line_error(res, "queries.jsonl, row 3", "nested too deeply")


# ------------------------------------------------------------------ ids mangled on the way: refused, not scored 0

def _rewrite_trec(src: Path, dst: Path, column: int) -> Path:
    """The run with one column's ids written as floats (`4` -> `4.0`), as a pandas float column writes them."""
    rows = [line.split() for line in src.read_text().splitlines()]
    for cols in rows:
        cols[column] += ".0"
    dst.write_text("".join(" ".join(c) + "\n" for c in rows))
    return dst


def test_a_run_with_float_query_ids_is_refused_not_scored_zero(runs, tmp_path):
    run = _rewrite_trec(runs / "bm25_fr.trec", tmp_path / "bm25_fr.trec", 0)
    one_line_error(evaluate(runs, run, tmp_path / "out"), "bm25_fr.trec, row 1, id 4.0", "'4.0' is written '4'")
    assert not (tmp_path / "out").exists()


def test_a_run_with_float_document_ids_is_refused_not_scored_zero(runs, tmp_path):
    run = _rewrite_trec(runs / "bm25_fr.trec", tmp_path / "bm25_fr.trec", 2)
    one_line_error(evaluate(runs, run, tmp_path / "out"), "bm25_fr.trec, row", "document id", "written")


def test_float_query_ids_in_the_qrels_are_refused_too(runs, tmp_path):
    qrels = _rewrite_trec(runs / "qrels_test203.trec", tmp_path / "qrels.trec", 0)
    res = evaluate(runs, runs / "bm25_fr.trec", tmp_path / "out", qrels=qrels)
    one_line_error(res, "bm25_fr.trec, row 1, id 4", "written '4.0' in the qrels")


def test_json_run_keys_with_spaces_are_refused(runs, tmp_path):
    data = json.loads((runs / "bm25_fr.json").read_text())
    run = tmp_path / "spaced.json"
    run.write_text(json.dumps({f"{q} ": docs for q, docs in data.items()}))
    one_line_error(evaluate(runs, run, tmp_path / "out"), "spaced.json", "written '775' in the qrels")


def test_real_runs_and_distinct_zero_padded_ids_still_pass(runs, tmp_path):
    """The check equates no two ids the qrels keep apart: `07817` is another document than `7817`."""
    lines = (runs / "bm25_fr.trec").read_text().splitlines()
    lines[4] = lines[4].replace(" 9057 ", " 07817 ")
    padded = tmp_path / "padded.trec"
    padded.write_text("\n".join(lines) + "\n")
    for run in (runs / "bm25_fr.trec", runs / "e5_nl.json", padded):
        res = evaluate(runs, run, tmp_path / run.stem)
        assert res.exit_code == 0, res.output


def test_a_negative_rank_is_one_line(runs, tmp_path):
    lines = (runs / "bm25_fr.trec").read_text().splitlines()
    lines[4] = lines[4].replace(" 5 96 ", " -5 96 ")
    run = tmp_path / "neg.trec"
    run.write_text("\n".join(lines) + "\n")
    one_line_error(evaluate(runs, run, tmp_path / "out"), "neg.trec, row 5, id 4", "rank '-5' is negative")


# ------------------------------------------------------------------ an input that changes while the command runs

def test_a_run_rewritten_after_it_was_read_is_refused_not_named_by_its_new_content(runs, tmp_path, monkeypatch):
    """Another process regenerates the run while eval scores the old one: eval.meta.json would name
    the new file's sha256 beside scores of the old content. Refused in one line, nothing written."""
    from bbsard_audit.base.contracts.runs import Run

    real_read = Run.read.__func__
    run = tmp_path / "bm25_fr.trec"
    shutil.copy(runs / "bm25_fr.trec", run)

    def read_then_rewritten(cls, path, name=None):
        result = real_read(cls, path, name)
        Path(path).write_text((runs / "bm25_nl.trec").read_text())  # the concurrent writer's new version
        return result

    monkeypatch.setattr(Run, "read", classmethod(read_then_rewritten))
    one_line_error(evaluate(runs, run, tmp_path / "out"), "bm25_fr.trec", "changed while this command ran")
    assert not (tmp_path / "out").exists()


def test_an_input_read_twice_as_two_versions_is_refused(runs, tmp_path, monkeypatch):
    """Two readers of one command see two versions of the verdicts: refused, never a mix."""
    from bbsard_audit.base.contracts import files

    real = files.read_bytes
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("id,verdict\n4,correct\n")
    seen = []

    def racing(path):
        data = real(path)
        if Path(path) == verdicts:
            seen.append(1)
            verdicts.write_text(f"id,verdict\n4,{'major' if len(seen) == 1 else 'correct'}\n")
        return data

    monkeypatch.setattr(files, "read_bytes", racing)
    from bbsard_audit.base import io

    with io.reads_scope():
        files.read_text(verdicts)
        with pytest.raises(Exception, match="changed while this command ran"):
            files.read_text(verdicts)


def test_a_command_rereading_what_it_wrote_itself_is_not_refused(tmp_path):
    from bbsard_audit.base import io
    from bbsard_audit.base.contracts.files import read_text

    target = tmp_path / "x.txt"
    target.write_text("old\n")
    with io.reads_scope():
        read_text(target)
        io.write_text(target, "new\n")
        assert read_text(target) == "new\n" and io.file_ref(target)["sha256"]


# ------------------------------------------------------------------ impossible figures in estimate.json

@pytest.fixture(scope="module")
def demo_once(tmp_path_factory) -> Path:
    demo = tmp_path_factory.mktemp("demo") / "demo"
    assert invoke("demo", "--out", demo).exit_code == 0
    return demo


@pytest.mark.parametrize("change, expected", [
    ({"share_legal": 5.0}, "share_legal = 5.0 is not a share from 0 to 1"),
    ({"ci_low": 0.9, "ci_high": 0.1}, "ci_low = 0.9 is above ci_high = 0.1"),
    ({"population": -40}, "population = -40 is negative"),
    ({"level": 2.0}, "level = 2.0 is not a confidence level"),
])
def test_an_estimate_with_impossible_figures_is_refused_by_eval_report_and_release(demo_once, tmp_path, change,
                                                                                  expected):
    """A hand-edited estimate.json reached the fragility table, the report and the release card as if
    computed (a release card saying 500% of the pairs are legally wrong)."""
    demo = tmp_path / "demo"
    shutil.copytree(demo_once, demo)
    estimate = json.loads((demo / "estimate.json").read_text())
    (demo / "estimate.json").write_text(json.dumps({**estimate, **change}))
    for args in (["report", "--workdir", demo, "--out", tmp_path / "report"],
                 ["release", "--dataset", "sample", "--verdicts", demo / "verdicts.csv", "--out", tmp_path / "release"],
                 ["eval", "--dataset", "sample", "--verdicts", demo / "verdicts.csv", "--run", f"a={demo / 'runs' / 'bm25_nl.trec'}",
                  "--out", tmp_path / "eval", *EVAL]):
        one_line_error(invoke(*args), "estimate.json: not an estimate.json", expected)
    assert not any((tmp_path / name).exists() for name in ("report", "release", "eval"))


# ------------------------------------------------------------------ a Label Studio export of the wrong shape

def _export_tasks() -> list[dict]:
    from pull_fixtures import ann, task

    return [task(q, [ann(q * 10 + 1, {"id": 1, "email": "anna@x"}),
                     ann(q * 10 + 2, {"id": 2, "email": "bart@x"}, "legal" if q % 3 == 0 else "correct")])
            for q in (4, 7, 16)]


@pytest.mark.parametrize("damage, expected", [
    (lambda t: t[1].update(annotations=None), "row 2: task 70: annotations must be a list, not NoneType"),
    (lambda t: t[0]["annotations"][0].update(result="x"), "row 1: task 40: annotation 41: result must be a list"),
    (lambda t: t[0].update(data=[]), "row 1: task 40: data must be an object, not list"),
    (lambda t: t[2]["annotations"][1]["result"][0].update(value=[1]), "row 3: task 160: annotation 162: a region's value"),
])
def test_an_export_of_the_wrong_shape_is_one_line_naming_the_task(tmp_path, damage, expected):
    """Each was an AttributeError or TypeError traceback deep in the pull."""
    tasks = _export_tasks()
    damage(tasks)
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks))
    res = invoke("annotate", "pull", "--from-file", export, "--out", tmp_path / "camp" / "verdicts.csv")
    one_line_error(res, "export.json, " + expected)
    assert not (tmp_path / "camp").exists()


@pytest.mark.parametrize("encode, expected", [
    (lambda text: b"\xef\xbb\xbf" + text.encode(), None),
    (lambda text: text.replace("anna", "ann\u00e9").encode("latin-1"), "row 1: not valid UTF-8"),
])
def test_an_export_saved_with_a_bom_is_read_and_one_in_latin1_is_one_line(tmp_path, encode, expected):
    export = tmp_path / "export.json"
    export.write_bytes(encode(json.dumps(_export_tasks(), ensure_ascii=False)))
    res = invoke("annotate", "pull", "--from-file", export, "--out", tmp_path / "camp" / "verdicts.csv")
    if expected is None:
        assert res.exit_code == 0 and "6 annotation(s) on 3 question(s)" in res.output, res.output
    else:
        one_line_error(res, "export.json, " + expected)


# ------------------------------------------------------------------ a glossary that is a FIFO, or Latin-1

def test_a_glossary_that_is_a_fifo_is_one_line_not_a_wait_forever(tmp_path):
    """The glossary was read with read_bytes() before any check: `audit` hung on a named pipe."""
    fifo = tmp_path / "glossary.yaml"
    os.mkfifo(fifo)
    done = {}
    worker = threading.Thread(target=lambda: done.update(res=invoke("audit", "--dataset", "sample", "--glossary",
                                                                       fifo, "--out", tmp_path / "out")), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # release the reader so the test process can end
        with open(fifo, "w") as pipe:
            pipe.write("")
        pytest.fail("audit waited on a FIFO glossary")
    one_line_error(done["res"], "glossary.yaml: is a FIFO, not a regular file")
    assert not (tmp_path / "out").exists()


def test_a_latin1_glossary_names_the_row_of_its_first_bad_byte(tmp_path):
    from bbsard_audit.audit.glossary import SHIPPED

    text = SHIPPED.read_text(encoding="utf-8")
    glossary = tmp_path / "glossary.yaml"
    glossary.write_bytes(text.encode("latin-1", "replace"))
    first = next(i for i, line in enumerate(text.splitlines(), 1) if not line.isascii())
    res = invoke("audit", "--dataset", "sample", "--glossary", glossary, "--out", tmp_path / "out")
    one_line_error(res, f"glossary.yaml, row {first}: not a readable YAML glossary: not valid UTF-8")


def test_two_glossary_entries_whose_ids_differ_only_in_case_are_one_line(tmp_path):
    """`JUGE_DE_PAIX` beside `juge_de_paix` was a second entry: the same concept checked and flagged twice."""
    from bbsard_audit.audit.glossary import SHIPPED

    text = SHIPPED.read_text(encoding="utf-8")
    start = text.index("- id: juge_de_paix")
    end = text.index("- id:", start + 5)
    glossary = tmp_path / "glossary.yaml"
    glossary.write_text(text[:end] + text[start:end].replace("juge_de_paix", "JUGE_DE_PAIX") + text[end:],
                        encoding="utf-8")
    res = invoke("audit", "--dataset", "sample", "--glossary", glossary, "--out", tmp_path / "out")
    one_line_error(res, "glossary.yaml, row 2, id JUGE_DE_PAIX: duplicate entry id")


# ------------------------------------------------------------------ an edited campaign.json, read by eval

@pytest.mark.parametrize("edit, expected", [
    (lambda b: b["risk"].append(b["risk"][0]), "batches[0].risk lists the same pair twice"),
    (lambda b: b["control"].append(b["risk"][0]), "batches[0] is not the batch as it was drawn"),
    (lambda b: b.update(batch=-1), "batches[-1] is not the batch as it was drawn"),
])
def test_eval_refuses_a_campaign_edited_after_its_draw_as_annotate_does(campaign, edit, expected):
    """`annotate estimate` refused these edits; `eval --campaign` (read_draws) estimated the cleaned
    benchmark from them, a pair drawn twice counted twice."""
    from bbsard_audit.base.contracts.campaign_design import read_draws

    camp = campaign[3]
    record = json.loads((camp / "campaign.json").read_text())
    edit(record["batches"][0])
    (camp / "campaign.json").write_text(json.dumps(record))
    with pytest.raises(Exception, match=re.escape(expected)):
        read_draws(camp)


def test_an_mteb_file_with_only_its_model_meta_says_it_holds_no_predictions(runs, tmp_path):
    """It said "several subsets/splits: choose one ... (it holds: none)"."""
    run = tmp_path / "preds.json"
    run.write_text(json.dumps({"mteb_model_meta": {"name": "m"}, "default": [1]}))
    one_line_error(evaluate(runs, run, tmp_path / "out"), "preds.json: an MTEB predictions file without predictions")


def test_a_dictionary_index_that_is_a_fifo_is_one_line_not_a_wait_forever(tmp_path):
    """The lexical check hashed the index with read_bytes() before any check: the audit hung."""
    from bbsard_audit.audit.checks.lexical import _table
    from bbsard_audit.base.errors import InputError

    index = tmp_path / "freedict-fra-nld.index"
    os.mkfifo(index)
    outcome = {}

    def read():
        try:
            _table(index)
        except InputError as exc:
            outcome["error"] = exc.one_line()

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        with open(index, "w") as pipe:
            pipe.write("")
        pytest.fail("the lexical check waited on a FIFO dictionary")
    assert outcome["error"].endswith("freedict-fra-nld.index: is a FIFO, not a regular file")


def test_a_real_dictd_dictionary_with_its_binary_data_file_still_reads(tmp_path):
    from bbsard_audit.base.contracts.dictionary import read_dictionary

    index = Path("/usr/share/dictd/freedict-fra-nld.index")
    if not index.is_file():
        pytest.skip("dict-freedict-fra-nld is not installed")
    assert len(read_dictionary(index).entries) > 1000


# ------------------------------------------------------------------ a key of the wrong type in the config file

SECRET = "Vq3ZkR8mXw2TnL6p"


@pytest.mark.parametrize("config", [
    f'[label_studio]\nurl = "http://127.0.0.1:9"\napi_key = ["{SECRET}"]\n',
    '[label_studio]\nurl = "http://127.0.0.1:9"\napi_key = 918273645546372819\n',
    f'label_studio = "{SECRET}"\n',
])
def test_a_label_studio_key_of_the_wrong_type_is_not_echoed_in_the_error(tmp_path, config):
    """The strict config reader quoted the bad value: the key itself (no redaction pattern knew it)."""
    path = tmp_path / "config.toml"
    path.write_text(config)
    res = invoke("annotate", "pull", "--project", "p", "--ls-config", path, "--out", tmp_path / "camp" / "verdicts.csv")
    text = one_line_error(res, "config.toml", "label_studio")
    assert SECRET not in text and "918273645546372819" not in text and "64637" not in text


def test_a_question_file_replaced_between_its_hash_and_its_parse_is_named_by_what_was_parsed(shared_dir, tmp_path,
                                                                                             monkeypatch):
    """The loader hashed each question CSV, then read it again to parse it: a file replaced in between
    gave a dataset revision (files_sha256) naming content the audit never read."""
    import hashlib

    from bbsard_audit.base.dataset import load_dataset
    from bbsard_audit.base.sources import bsard_csv

    data = tmp_path / "bbsard"
    data.mkdir()
    for p in shared_dir.glob("questions_*.csv"):
        shutil.copy(p, data / p.name)
        (data / p.name).chmod(0o644)
    target = data / "questions_nl_test.csv"
    real = bsard_csv.read_csv

    def replaced_then_read(path, checker, required):
        if Path(path) == target:  # another process rewrites it (a question corrected) just before the parse
            target.write_text(target.read_text(encoding="utf-8").replace("?", " ?", 1), encoding="utf-8")
        return real(path, checker, required)

    monkeypatch.setattr(bsard_csv, "read_csv", replaced_then_read)
    dataset = load_dataset(str(data))
    parsed = hashlib.sha256(target.read_bytes()).hexdigest()
    assert dataset.provenance()["files_sha256"]["questions_nl_test.csv"] == parsed
