"""Output safety and no leaks: inputs are never modified, a command replaces or deletes only files it
wrote itself, `--out` of the wrong kind is one line, and credentials never reach a message or a report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.redact import redact, redact_record
from bbsard_audit.app.release import ReleasePolicy, build_release
from report_fixtures import write_workdir
from release_fixtures import make_dataset, write_review

runner = CliRunner()
MANIFEST_NAME = ".bbsard-audit-outputs.json"


def invoke(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def one_line_refusal(code: int, output: str, *needles: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    for needle in needles:
        assert needle in output, output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- release removes only its own files

def test_release_rerun_keeps_its_own_verdicts_input_and_unrelated_notes(tmp_path):
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    out = tmp_path / "rel"
    build_release(ds, write_review(tmp_path / "work"), out)
    verdicts = out / "verdicts.csv"  # the campaign keeps its verdicts inside the release folder
    verdicts.write_bytes((tmp_path / "work" / "verdicts.csv").read_bytes())
    (out / "notes.txt").write_text("reviewer notes")
    build_release(ds, verdicts, out, ReleasePolicy("keep-marked"))
    assert (out / "notes.txt").read_text() == "reviewer notes"
    assert verdicts.read_bytes() == (tmp_path / "work" / "verdicts.csv").read_bytes()
    assert len(pd.read_csv(out / "questions_nl_test.csv")) == 5  # the new release replaced the old one


def test_release_removes_its_own_stale_files_and_nothing_else(tmp_path):
    """An earlier release had a train split; the new one has only test: the old train files go."""
    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    verdicts = write_review(tmp_path / "work")
    out = tmp_path / "rel"
    build_release(ds, verdicts, out)
    assert (out / "questions_fr_train.csv").is_file()
    (out / "keep.csv").write_text("mine")
    test_only = tmp_path / "src2"
    make_dataset(test_only)
    for lang in ("fr", "nl"):
        (test_only / f"questions_{lang}_train.csv").unlink()
    pd.read_csv(verdicts).query("id <= 5").to_csv(tmp_path / "work" / "verdicts5.csv", index=False)
    build_release(load_dataset(str(test_only)), tmp_path / "work" / "verdicts5.csv", out)
    assert not (out / "questions_fr_train.csv").exists() and (out / "questions_fr_test.csv").is_file()
    assert (out / "keep.csv").read_text() == "mine"


def test_push_to_hub_uploads_only_the_release_files(tmp_path, monkeypatch):
    """The release folder may hold the campaign's verdicts and notes: they never go to the hub."""
    import huggingface_hub
    from huggingface_hub.utils import filter_repo_objects

    from bbsard_audit.app.release import push_to_hub

    ds = load_dataset(str(make_dataset(tmp_path / "src")))
    out = tmp_path / "rel"
    build_release(ds, write_review(tmp_path / "work"), out)
    (out / "verdicts.csv").write_text("id,verdict\n1,legal\n")
    (out / "notes.txt").write_text("private reviewer notes")
    uploaded: list[str] = []

    class Hub:  # the network end of HfApi: record what upload_folder would send
        def __init__(self, token):
            pass

        def create_repo(self, *args, **kwargs):
            pass

        def upload_folder(self, *, folder_path, allow_patterns=None, ignore_patterns=None, **kwargs):
            names = [p.relative_to(folder_path).as_posix() for p in Path(folder_path).rglob("*") if p.is_file()]
            uploaded.extend(filter_repo_objects(names, allow_patterns=allow_patterns, ignore_patterns=ignore_patterns))

    monkeypatch.setattr(huggingface_hub, "HfApi", Hub)
    monkeypatch.setenv("HF_TOKEN", "hf_test0123456789")
    push_to_hub(out, "me/clean")
    assert "README.md" in uploaded and "CHANGELOG.csv" in uploaded and "questions_nl_test.csv" in uploaded
    assert not {"verdicts.csv", "notes.txt", MANIFEST_NAME} & set(uploaded)
    assert not [n for n in uploaded if n.startswith("hf/")]


def test_release_refuses_to_write_over_its_dataset_input(tmp_path):
    src = make_dataset(tmp_path / "src")
    code, output = invoke("release", "--dataset", src, "--verdicts", write_review(tmp_path / "work"), "--out", src)
    one_line_refusal(code, output, "--out would overwrite the input")


# ---------------------------------------------------------------- commands never overwrite their inputs

def test_estimate_out_equal_to_its_verdicts_input_is_refused(tmp_path):
    work = write_workdir(tmp_path / "w")
    before = snapshot(work)
    code, output = invoke("annotate", "estimate", "--audit", work / "audit.csv", "--verdicts", work / "verdicts.csv",
                          "--out", work / "verdicts.csv")
    one_line_refusal(code, output, "would overwrite the input")
    assert snapshot(work) == before


def test_export_tasks_out_equal_to_its_audit_input_is_refused(tmp_path):
    work = write_workdir(tmp_path / "w")
    before = snapshot(work)
    code, output = invoke("annotate", "export-tasks", "--audit", work / "audit.csv", "--out", work / "audit.csv")
    one_line_refusal(code, output, "would overwrite the input")
    assert snapshot(work) == before


def test_eval_retriever_never_overwrites_an_input_run(tmp_path):
    from bbsard_audit.eval.retrievers import make_retriever

    name = make_retriever("bm25", "fr", "stem").name
    run = tmp_path / "w" / "runs" / f"{name}.trec"
    run.parent.mkdir(parents=True)
    ds = load_dataset("sample")
    run.write_text("".join(f"{p.id} Q0 {p.article_ids[0]} 1 1.0 mine\n" for p in ds.select("test")))
    before = run.read_bytes()
    code, output = invoke("eval", "--dataset", "sample", "--split", "test", "--retriever", "bm25", "--lang", "fr",
                          "--run", f"mine={run}", "--resamples", "1000", "--null-draws", "1", "--out", tmp_path / "w")
    one_line_refusal(code, output, "would overwrite the input")
    assert run.read_bytes() == before


def test_out_folder_whose_output_would_land_on_an_input_is_refused(tmp_path):
    work = write_workdir(tmp_path / "w")
    out = tmp_path / "o"
    out.mkdir()
    raw = out / "disagreements.csv"  # the raw annotations, saved under a name agreement writes
    raw.write_bytes((work / "annotations_raw.csv").read_bytes())
    code, output = invoke("annotate", "agreement", "--raw", raw, "--n-boot", "20", "--out", out)
    one_line_refusal(code, output, "--out would overwrite the input")
    assert raw.read_bytes() == (work / "annotations_raw.csv").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["disagreements.csv"]


def test_glossary_mine_never_overwrites_its_glossary_input(tmp_path):
    from bbsard_audit.audit.glossary import SHIPPED

    glossary = tmp_path / "glossary.yaml"
    glossary.write_bytes(SHIPPED.read_bytes())
    code, output = invoke("audit", "glossary", "mine", "--glossary", glossary, "--out", glossary)
    one_line_refusal(code, output, "would overwrite the input")
    assert glossary.read_bytes() == SHIPPED.read_bytes()


# ---------------------------------------------------------------- --out of the wrong kind: one line

def _out_file_cases(tmp_path: Path) -> dict[str, list]:
    work = write_workdir(tmp_path / "w")
    src = make_dataset(tmp_path / "src")
    verdicts = write_review(tmp_path / "review")
    return {
        "audit": ["audit", "--dataset", src, "--out"],
        "eval": ["eval", "--qrels", tmp_path / "none.trec", "--out"],
        "report": ["report", "--workdir", work, "--out"],
        "calibrate": ["audit", "calibrate", "--audit", work / "audit.csv", "--verdicts", work / "verdicts.csv", "--out"],
        "agreement": ["annotate", "agreement", "--raw", work / "annotations_raw.csv", "--out"],
        "demo": ["demo", "--out"],
        "release": ["release", "--dataset", src, "--verdicts", verdicts, "--out"],
    }


@pytest.mark.parametrize("command", ["audit", "eval", "report", "calibrate", "agreement", "demo", "release"])
def test_out_pointing_at_an_existing_file_is_one_line(tmp_path, command):
    args = _out_file_cases(tmp_path)[command]
    target = tmp_path / "existing.txt"
    target.write_text("not a folder")
    code, output = invoke(*args, target)
    one_line_refusal(code, output, "--out must be a folder, but this is an existing file", str(target))
    assert target.read_text() == "not a folder"


def test_out_pointing_at_a_folder_where_a_file_is_expected_is_one_line(tmp_path):
    work = write_workdir(tmp_path / "w")
    code, output = invoke("annotate", "estimate", "--audit", work / "audit.csv", "--verdicts", work / "verdicts.csv",
                          "--out", work)
    one_line_refusal(code, output, "--out must be a file, but this is a folder")


# ---------------------------------------------------------------- ownership: own outputs yes, others' never

def test_demo_refuses_a_folder_holding_a_campaigns_files(tmp_path):
    work = write_workdir(tmp_path / "campaign")  # verdicts.csv, annotations_raw.csv of a real review
    before = snapshot(work)
    code, output = invoke("demo", "--out", work)
    one_line_refusal(code, output, "was not written by bbsard-audit", "never replaces it")
    assert snapshot(work) == before


def test_the_demo_may_replace_a_report_rendered_from_its_folder(tmp_path):
    from bbsard_audit.base.io import guard_outputs, write_text

    with guard_outputs(tmp_path, command="demo"):
        write_text(tmp_path / "audit.csv", "id\n1\n")
    with guard_outputs(tmp_path, command="report"):
        write_text(tmp_path / "report.md", "# report\n")
    with guard_outputs(tmp_path, command="demo", names=["report.md", "audit.csv"]):
        write_text(tmp_path / "report.md", "# demo report\n")
    assert (tmp_path / "report.md").read_text() == "# demo report\n"
    with guard_outputs(tmp_path, command="annotate pull"):
        write_text(tmp_path / "verdicts.csv", "id,verdict\n1,legal\n")
    with pytest.raises(InputError, match="was written by `bbsard-audit annotate pull`"):
        with guard_outputs(tmp_path, command="demo", names=["verdicts.csv"]):
            pass


def test_a_command_replaces_its_own_outputs_but_not_a_foreign_or_edited_file(tmp_path):
    from bbsard_audit.base.io import MANIFEST

    work = write_workdir(tmp_path / "w")
    out = tmp_path / "agree"
    args = ("annotate", "agreement", "--raw", work / "annotations_raw.csv", "--n-boot", "50", "--out", out)
    assert invoke(*args)[0] == 0
    assert invoke(*args)[0] == 0  # a rerun replaces its own earlier outputs
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert manifest["agreement.json"]["command"] == "annotate agreement"
    (out / "disagreements.csv").write_text("id\n1\n")  # a person edited it since
    code, output = invoke(*args)
    one_line_refusal(code, output, "disagreements.csv exists and was changed since `bbsard-audit annotate agreement`")
    assert (out / "disagreements.csv").read_text() == "id\n1\n"
    other = tmp_path / "other"
    other.mkdir()
    (other / "agreement.json").write_text("{}")  # someone else's file of the same name
    code, output = invoke(*args[:-1], other)
    one_line_refusal(code, output, "agreement.json exists and was not written by bbsard-audit")
    assert (other / "agreement.json").read_text() == "{}"


def test_a_file_written_by_another_command_is_not_replaced(tmp_path):
    from bbsard_audit.base.io import guard_outputs, write_text

    with guard_outputs(tmp_path, command="annotate pull"):
        write_text(tmp_path / "verdicts.csv", "id,verdict\n1,legal\n")
    with pytest.raises(InputError, match="was written by `bbsard-audit annotate pull`"):
        with guard_outputs(tmp_path, command="demo", names=["verdicts.csv"]):
            pass
    with pytest.raises(InputError, match="verdicts.csv exists"):  # also caught at write time
        with guard_outputs(tmp_path, command="demo"):
            write_text(tmp_path / "verdicts.csv", "id,verdict\n1,correct\n")
    assert (tmp_path / "verdicts.csv").read_text() == "id,verdict\n1,legal\n"


# ---------------------------------------------------------------- no leaks

@pytest.mark.parametrize("url, secret", [
    ("http://reviewer:s3cr3t-pass@127.0.0.1:9", "s3cr3t-pass"),
    ("http://127.0.0.1:9/?token=abcd1234efgh5678", "abcd1234efgh5678"),
    ("http://127.0.0.1:9/?access_token=zyx987654321", "zyx987654321"),
])
def test_label_studio_url_credentials_never_printed(monkeypatch, url, secret):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "the-api-key-0123")
    monkeypatch.delenv("BBSARD_AUDIT_CONFIG", raising=False)
    code, output = invoke("annotate", "status", "--project", "p", "--url", url, "--retries", "0", "--timeout", "2")
    assert code == 2 and "Traceback" not in output, output
    assert "127.0.0.1:9" in output and secret not in output and "the-api-key-0123" not in output, output
    from bbsard_audit.annotations.connection import Connection

    conn = Connection.resolve(url)
    assert secret not in repr(conn) and secret not in conn.shown_url and "127.0.0.1:9" in conn.shown_url


def test_redact_masks_values_not_only_key_names():
    text = ("GET http://anna:pw123456@ls.example.org/api?token=tok0123456789&page=2 "
            "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9x header Token 0123abcdef4567 hf_AbCdEfGhIjKlMnOp")
    clean = redact(text)
    for secret in ("anna", "pw123456", "tok0123456789", "eyJhbGciOi", "0123abcdef4567", "AbCdEfGhIjKlMnOp"):
        assert secret not in clean, clean
    assert "ls.example.org/api?token=***&page=2" in clean
    assert redact("Token rejected; the tokenizer is fine") == "Token rejected; the tokenizer is fine"
    record = redact_record({"source": {"label_studio_url": "https://u:p4ss@h/x", "api_key": "k"},
                            "note": ["hf_abcdefghijklmnop"]})
    assert record == {"source": {"label_studio_url": "https://***@h/x"}, "note": ["hf_***"]}


def test_report_provenance_redacts_credential_values_and_markdown_escapes_html(tmp_path):
    from bbsard_audit.app.report import build_report

    work = write_workdir(tmp_path / "w")
    meta = json.loads((work / "verdicts.meta.json").read_text())
    meta["source"] = {"label_studio_url": "http://anna:hunter2pass@ls.local:8080", "header": "Bearer abcdef0123456789",
                      "hub": "hf_QwErTyUiOpAsDfGh"}
    (work / "verdicts.meta.json").write_text(json.dumps(meta))
    audit = pd.read_csv(work / "audit.csv")
    audit.loc[audit["risk"].idxmax(), "question_nl"] = "<script>alert(1)</script> Wat?"
    audit.to_csv(work / "audit.csv", index=False)
    files = build_report(work)
    for path in (files.html, files.markdown):
        text = path.read_text()
        for secret in ("hunter2pass", "abcdef0123456789", "QwErTyUiOpAsDfGh"):
            assert secret not in text, (path.name, secret)
    markdown = files.markdown.read_text()
    assert "<script>" not in markdown and "&lt;script&gt;alert(1)&lt;/script&gt; Wat?" in markdown


# ---------------------------------------------------------------- a symlink out of --out is never written through

def test_a_symlinked_subfolder_leading_out_of_out_is_refused_and_its_files_kept(tmp_path):
    """`example beir` (and `eval`, whose runs/ go the same way) wrote fr/queries.jsonl through
    `out/fr -> ../victim`, replacing the user's file outside --out with exit 0."""
    victim, out = tmp_path / "victim", tmp_path / "out"
    victim.mkdir(), out.mkdir()
    (victim / "queries.jsonl").write_text("precious")
    (out / "fr").symlink_to("../victim")
    code, output = invoke("example", "beir", out)
    one_line_refusal(code, output, "fr is a symlink that leads out of the output folder")
    assert snapshot(victim) == {"queries.jsonl": b"precious"}
    assert sorted(p.name for p in out.iterdir()) == ["fr"]  # nothing half-written


def test_the_guard_writes_through_a_symlink_that_stays_inside_out(tmp_path):
    from bbsard_audit.base.io import guard_outputs, write_text
    (tmp_path / "out" / "real").mkdir(parents=True)
    (tmp_path / "out" / "alias").symlink_to("real")
    with guard_outputs(tmp_path / "out", command="x"):
        write_text(tmp_path / "out" / "alias" / "a.txt", "ok")
    assert (tmp_path / "out" / "real" / "a.txt").read_text() == "ok"
