"""The bBSARD loader: every source, every validation error and warning, via the library and the CLI."""

from __future__ import annotations

import contextlib
import csv
import os
import signal
from pathlib import Path

import pytest
from conftest import need
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import QUESTION_COLUMNS, load_dataset
from bbsard_audit.base.errors import InputError

runner = CliRunner()

FR = [
    {"id": "1", "category": "Logement", "subcategory": "Bail", "question": "Quel est le préavis du locataire ?",
     "extra_description": "", "article_ids": "101,102"},
    {"id": "2", "category": "Famille", "subcategory": "Divorce", "question": "Comment divorcer ?",
     "extra_description": "Divorce", "article_ids": "103"},
]
NL = [
    {**FR[0], "question": "Wat is de opzeggingstermijn van de huurder?"},
    {**FR[1], "question": "Hoe scheiden?"},
]
ARTICLES = {
    "fr": [{"id": str(i), "article": f"Article {i} en français."} for i in (101, 102, 103)],
    "nl": [{"id": str(i), "article": f"Artikel {i} in het Nederlands."} for i in (101, 102, 103)],
}


def write(path: Path, rows: list[dict], columns=QUESTION_COLUMNS) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns))
        w.writeheader()
        w.writerows(rows)


def make(tmp_path: Path, fr=FR, nl=NL, articles=True, split="test") -> Path:
    write(tmp_path / f"questions_fr_{split}.csv", fr)
    write(tmp_path / f"questions_nl_{split}.csv", nl)
    if articles:
        for lang, rows in ARTICLES.items():
            write(tmp_path / f"articles_{lang}.csv", rows, ("id", "article"))
    return tmp_path


def cli_validate(path) -> tuple[int, str]:
    result = runner.invoke(app, ["validate", "--dataset", str(path)])
    return result.exit_code, result.output


def test_valid_directory_loads_typed_pairs_corpus_and_qrels(tmp_path):
    ds = load_dataset(str(make(tmp_path)))
    assert [p.id for p in ds.pairs] == [1, 2]
    p = ds.pairs[0]
    assert (p.split, p.source, p.target, p.article_ids) == (
        "test", FR[0]["question"], NL[0]["question"], (101, 102))
    assert ds.corpus.ids == (101, 102, 103)
    assert ds.corpus.texts("nl")[0] == "Artikel 101 in het Nederlands."
    assert ds.qrels() == {"1": {"101": 1, "102": 1}, "2": {"103": 1}}
    assert ds.revision.startswith("sha256:") and set(ds.files) >= {"questions_fr_test.csv"}
    code, out = cli_validate(tmp_path)
    assert code == 0 and "test   fr: 2 questions  nl: 2 questions" in out and "corpus 3 articles" in out


def test_questions_only_directory_with_one_split(tmp_path):
    ds = load_dataset(str(make(tmp_path, articles=False, split="train")))
    assert ds.corpus is None and ds.splits == ["train"] and ds.select("test") == []


@pytest.mark.parametrize("mutate, expected", [
    (lambda fr, nl: nl.pop(), "id 2: question id present in French but missing from"),
    (lambda fr, nl: nl[0].update(article_ids="101,999"), "id 1: article_ids differ between French (101,102) and Dutch (101,999)"),
    (lambda fr, nl: fr.append(dict(fr[0])) or nl.append(dict(nl[0])), "row 4, id 1: duplicate question id"),
    (lambda fr, nl: nl[1].update(question="   "), "questions_nl_test.csv, row 3, id 2: empty question text"),
    (lambda fr, nl: fr[1].update(article_ids=""), "questions_fr_test.csv, row 3, id 2: article_ids is empty"),
    (lambda fr, nl: fr[1].update(article_ids="103,abc"), "row 3, id 2: article_ids has non-integer value(s) 'abc'"),
    (lambda fr, nl: fr[0].update(id="x1"), "questions_fr_test.csv, row 2: question id 'x1' is not an integer"),
    (lambda fr, nl: [r.update(article_ids="555") for r in (fr[1], nl[1])], "id 2: gold article id(s) 555 not in the corpus"),
])
def test_each_malformed_input_is_one_clear_line_and_exit_code(tmp_path, mutate, expected):
    fr, nl = [dict(r) for r in FR], [dict(r) for r in NL]
    mutate(fr, nl)
    make(tmp_path, fr, nl)
    with pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert expected in str(err.value)
    code, out = cli_validate(tmp_path)
    assert code == 1 and expected in out and "Traceback" not in out


def test_missing_columns(tmp_path):
    make(tmp_path)
    write(tmp_path / "questions_nl_test.csv", [{"id": "1", "question": "x"}], ("id", "question"))
    with pytest.raises(InputError, match=r"questions_nl_test.csv: missing column\(s\) article_ids"):
        load_dataset(str(tmp_path))


def test_ill_encoded_file_names_the_row(tmp_path):
    make(tmp_path)
    path = tmp_path / "questions_fr_test.csv"
    path.write_bytes(path.read_bytes().replace("préavis".encode(), "pr\xe9avis".encode("latin-1")))
    with pytest.raises(InputError, match=r"questions_fr_test.csv, row 2: not valid UTF-8"):
        load_dataset(str(tmp_path))


def test_unreadable_file(tmp_path):
    make(tmp_path)
    (tmp_path / "questions_nl_test.csv").unlink()
    (tmp_path / "questions_nl_test.csv").mkdir()
    with pytest.raises(InputError, match="questions_nl_test.csv: cannot read file"):
        load_dataset(str(tmp_path))


@pytest.mark.parametrize("raw_id", ["7_75", "\u0663", " 7", "+7", "7 ", "-7"])
def test_question_ids_must_be_plain_ascii_integers(tmp_path, raw_id):
    """int() accepts all of these; an id is only ASCII digits, so `7_75` is never read as 775."""
    fr, nl = [dict(r) for r in FR], [dict(r) for r in NL]
    fr[0]["id"] = nl[0]["id"] = raw_id
    make(tmp_path, fr, nl)
    with pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert f"questions_fr_test.csv, row 2: question id {raw_id!r} is not an integer" in err.value.one_line()


@pytest.mark.parametrize("value", ["101,\u00b2", "\u0661\u0660\u0661"])
def test_article_ids_must_be_plain_ascii_integers(tmp_path, value):
    fr, nl = [dict(r) for r in FR], [dict(r) for r in NL]
    fr[0]["article_ids"] = nl[0]["article_ids"] = value
    make(tmp_path, fr, nl)
    code, out = cli_validate(tmp_path)
    assert code == 1 and "row 2, id 1: article_ids has non-integer value(s)" in out and "Traceback" not in out


def test_duplicated_column_name_is_an_error_not_last_copy_wins(tmp_path):
    make(tmp_path)
    (tmp_path / "questions_nl_test.csv").write_text(
        "id,question,article_ids,question\n1,Wat is de termijn?,\"101,102\",Hoe?\n2,Hoe scheiden?,103,x\n",
        encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert "questions_nl_test.csv, row 1: duplicated column name(s) 'question'" in err.value.one_line()


def test_nul_byte_names_the_row(tmp_path):
    make(tmp_path)
    path = tmp_path / "questions_fr_test.csv"
    path.write_bytes(path.read_bytes().replace(b"Comment divorcer", b"Comment\x00divorcer"))
    with pytest.raises(InputError, match=r"questions_fr_test.csv, row 3: NUL byte"):
        load_dataset(str(tmp_path))


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail instead of hanging: reading a FIFO with no writer blocks forever."""
    def expire(signum, frame):
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_fifo_is_rejected_without_hanging(tmp_path):
    make(tmp_path)
    (tmp_path / "questions_nl_test.csv").unlink()
    os.mkfifo(tmp_path / "questions_nl_test.csv")
    with deadline(20), pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert "questions_nl_test.csv: cannot read file: is a FIFO, not a regular file" in err.value.one_line()
    (tmp_path / "articles_fr.csv").unlink()
    os.mkfifo(tmp_path / "articles_fr.csv")
    (tmp_path / "questions_nl_test.csv").unlink()
    write(tmp_path / "questions_nl_test.csv", NL)
    with deadline(20):
        code, out = cli_validate(tmp_path)
    assert code == 1 and "articles_fr.csv: cannot read file: is a FIFO" in out


def test_device_is_rejected(tmp_path):
    make(tmp_path)
    (tmp_path / "articles_nl.csv").unlink()
    (tmp_path / "articles_nl.csv").symlink_to("/dev/null")
    with deadline(20), pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert "articles_nl.csv: cannot read file: is a character device, not a regular file" in err.value.one_line()


def test_self_referencing_symlink_is_named_not_taken_for_missing(tmp_path):
    make(tmp_path)
    path = tmp_path / "questions_nl_test.csv"
    path.unlink()
    path.symlink_to(path.name)
    with deadline(20), pytest.raises(InputError) as err:
        load_dataset(str(tmp_path))
    assert "questions_nl_test.csv: cannot read file: is a symlink loop" in err.value.one_line()
    for lang in ("fr", "nl"):  # both files loops: the split is not silently skipped
        (tmp_path / f"questions_{lang}_test.csv").unlink()
        (tmp_path / f"questions_{lang}_test.csv").symlink_to(f"questions_{lang}_test.csv")
    code, out = cli_validate(tmp_path)
    assert code == 1 and out.count("is a symlink loop") == 2


def test_one_language_missing(tmp_path):
    make(tmp_path)
    (tmp_path / "questions_nl_test.csv").unlink()
    with pytest.raises(InputError, match="questions_nl_test.csv is missing"):
        load_dataset(str(tmp_path))


def test_not_a_dataset(tmp_path):
    with pytest.raises(InputError, match="no questions_"):
        load_dataset(str(tmp_path))
    result = runner.invoke(app, ["validate", "--dataset", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "not a directory" in result.output


def test_warnings_are_reported_not_fatal(tmp_path):
    fr, nl = [dict(r) for r in FR], [dict(r) for r in NL]
    fr[1]["article_ids"] = nl[1]["article_ids"] = "103,103"
    nl[1]["question"] = fr[1]["question"]
    make(tmp_path, fr, nl)
    ds = load_dataset(str(tmp_path))
    assert ds.pairs[1].article_ids == (103,)
    messages = [w.one_line() for w in ds.warnings]
    assert any("row 3, id 2: article id(s) 103 listed twice" in m for m in messages)
    assert any("id 2: Dutch question is identical to the French one" in m for m in messages)
    assert any("Dutch metadata columns (category, subcategory, extra_description) are still in French in all 2 rows"
               in m for m in messages)
    code, out = cli_validate(tmp_path)
    assert code == 0 and out.count("warning:") == len(messages)


def test_hf_source_through_datasets(tmp_path):
    """The hub layout (configs corpus/train/test, splits fr/nl as CSV) loaded by `datasets` itself."""
    need("datasets")
    repo = tmp_path / "bBSARD"
    for lang in ("fr", "nl"):
        (repo / lang).mkdir(parents=True)
        write(repo / lang / "test.csv", FR if lang == "fr" else NL)
        write(repo / lang / "corpus.csv", ARTICLES[lang], ("id", "article"))
    configs = "\n".join(
        f"- config_name: {cfg}\n  data_files:\n" + "".join(
            f"  - split: {lang}\n    path: {lang}/{cfg}.csv\n" for lang in ("fr", "nl"))
        for cfg in ("corpus", "test"))
    (repo / "README.md").write_text(f"---\nconfigs:\n{configs}---\n# test copy\n")
    ds = load_dataset(f"hf:{repo}")
    assert [p.id for p in ds.pairs] == [1, 2] and ds.pairs[0].article_ids == (101, 102)
    assert ds.pairs[1].target == "Hoe scheiden?" and ds.corpus.ids == (101, 102, 103)
    assert ds.source == f"hf:{repo}" and ds.revision.startswith("sha256:")  # a local copy: pinned by content
    assert ds.provenance()["source"] == "hf:bBSARD"  # named by folder, never by its local path


def test_hf_unreachable_is_one_line(monkeypatch, tmp_path):
    datasets = need("datasets")
    import huggingface_hub.constants

    # the libraries read HF_HUB_OFFLINE at import time; without it they retry the network for a minute
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    result = runner.invoke(app, ["validate", "--dataset", "hf:clips/bBSARD@main"])
    assert result.exit_code == 1 and "cannot load config 'train'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.shared
def test_real_bbsard_counts_and_warnings(shared_dir):
    code, out = cli_validate(shared_dir)
    assert code == 0
    assert "train  fr: 886 questions  nl: 886 questions" in out
    assert "test   fr: 222 questions  nl: 222 questions" in out
    assert "total  1108 question pairs" in out
    assert "id 274: article id(s) 1102 listed twice" in out
    assert "still in French in all 886 rows" in out and "still in French in all 222 rows" in out
