"""The LLM judge in the corpus audit, against the RecordedAnswerServer stand-in (tests/audit/test_judge.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from bbsard_audit.audit.corpus.judge import CorpusJudge
from bbsard_audit.audit.corpus.run import AUDIT, run_corpus_audit
from bbsard_audit.audit.judge import prompt
from bbsard_audit.audit.judge.cache import JudgeCache
from bbsard_audit.audit.judge.client import ChatClient
from bbsard_audit.audit.judge.judging import Judge
from corpus_synth import build
from corpus_toy import corpus_manifest
from test_judge import KEY, RecordedAnswerServer, _error


def test_spans_land_at_their_offsets_and_a_rerun_sends_nothing(tmp_path):
    corpus = build("fr", 30, seed=1, artifacts=())
    doc = corpus.table.to_pylist()[3]
    word = doc["target_text"].split()[2]
    server = RecordedAnswerServer({doc["target_text"]: [_error(word, "terminology", "major", "wrong term")]})
    try:
        manifest = corpus_manifest(tmp_path, corpus)
        for run in range(2):
            judge = CorpusJudge(Judge(ChatClient(server.url, "recorded", KEY), JudgeCache(tmp_path / "j.sqlite"), 2,
                                      prompt.ARTICLES), server.url, "all")
            said = []
            run_corpus_audit(str(manifest), tmp_path / f"out{run}", judge=judge, say=said.append)
            assert KEY not in " ".join(said)
            if run == 0:
                assert len(server.requests) == 30
        assert len(server.requests) == 30  # the rerun came from the cache
        rows = {r["id"]: r for r in pq.read_table(tmp_path / "out1" / AUDIT).to_pylist()}
        row = rows[doc["id"]]
        [span] = [s for s in json.loads(row["spans"]) if s["flag"] == "doc_judge_errors"]
        assert span["side"] == "nl" and doc["target_text"][span["start"]:span["end"]] == word
        assert row["judge_mqm"] == 5 and "wrong term" in row["reasons"] and row["judge_status"] == "judged"
        meta = (tmp_path / "out1" / "corpus_audit.meta.json").read_text()
        assert KEY not in meta and '"cached": 30' in meta.replace(" ", "").replace('"cached":30', '"cached": 30')
    finally:
        server.close()


def test_cli_judge_on_flagged_dry_run_and_an_unreachable_server(tmp_path):
    """Through `audit corpus`: the dry run prints requests and writes no audit; --judge-on flagged asks
    about the flagged documents only; an unreachable judge is one line, exit 2, no corpus audit."""
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

    corpus = build("fr", 40, seed=2)
    manifest = corpus_manifest(tmp_path, corpus)
    server = RecordedAnswerServer()
    runner = CliRunner()
    env = {"BBSARD_AUDIT_JUDGE_API_KEY": KEY}
    base = ["audit", "corpus", "--dataset", str(manifest), "--cache-dir", str(tmp_path / "cache"),
            "--judge", "llm:recorded", "--judge-url"]
    try:
        dry = runner.invoke(app, [*base, server.url, "--judge-on", "all", "--judge-dry-run",
                                  "--out", str(tmp_path / "dry")], env=env)
        assert dry.exit_code == 0, dry.output
        assert not server.requests and not (tmp_path / "dry" / AUDIT).exists()
        assert '"messages"' in dry.output and KEY not in dry.output
        real = runner.invoke(app, [*base, server.url, "--judge-on", "flagged", "--out", str(tmp_path / "out")],
                             env=env)
        assert real.exit_code == 0, real.output
        rows = pq.read_table(tmp_path / "out" / AUDIT).to_pylist()
        judged = {r["id"] for r in rows if r["judge_status"] == "judged"}
        assert judged and len(server.requests) == len(judged) < len(rows)
    finally:
        server.close()
    fresh = [a if a != str(tmp_path / "cache") else str(tmp_path / "cache2") for a in base]  # nothing cached
    down = runner.invoke(app, [*fresh, "http://127.0.0.1:9/v1", "--judge-on", "all", "--out", str(tmp_path / "down")],
                         env=env)
    assert down.exit_code == 2 and "Traceback" not in down.output and KEY not in down.output
    assert not (tmp_path / "down" / AUDIT).exists()
