"""The LLM judge (audit/judge/): the real client, retries, cache and parser in every test, against an
HTTP server really listening on 127.0.0.1.

`RecordedAnswerServer` is a RECORDED-ANSWER STAND-IN for an OpenAI-compatible server (no LLM runs on
this machine or CI; llama-cpp-python's server was tried, see docs/audit.md "LLM judge"): a plain
http.server that replays recorded answers for known translations (`{"errors": []}` for the others)
and misbehaves on demand (429 with Retry-After, 500, 401, unknown model, non-JSON, schema-breaking,
refusing response_format), recording every request it gets.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from local_http import JsonHandler, LocalServer
from bbsard_audit.annotations.tasks import build_tasks, read_audit
from bbsard_audit.audit.judge.cache import JudgeCache
from bbsard_audit.audit.judge.client import Backoff, ChatClient, JudgeUnavailable, RequestFailed
from bbsard_audit.audit.judge.judging import Judge
from bbsard_audit.audit.judge.parse import parse_answer
from bbsard_audit.audit.judge import prompt
from bbsard_audit.audit.judge.prompt import PROMPT_VERSION, SCHEMA
from bbsard_audit.audit.signals import FLAG_SPECS
from bbsard_audit.app.cli import app
from bbsard_audit.base.dataset import load_dataset, sample_dir
from bbsard_audit.base.contracts.audit import Layout

KEY = "sk-judge-test-4f1c9a7e2b"  # a key no output may ever contain
PAIR = ("fr", "nl")


def _error(span, category, severity, explanation, side="target"):
    return {"span": span, "side": side, "category": category, "severity": severity, "explanation": explanation}


# Answers recorded for the sample's deliberately flawed translations (base/sample/flaws.csv),
# keyed by pair id.
RECORDED = {
    3: [_error("in Wallonië", "entity", "critical", "The source says Flanders; Wallonia is another region's law.")],
    10: [_error("al 6 maanden", "number", "critical", "3 months became 6 months.")],
    1: [_error("huurder", "role", "major", "'bailleur' is the landlord (verhuurder), not the tenant.")],
    16: [_error("mag de gerechtsdeurwaarder bij mij in beslag nemen", "negation", "major",
                "The French asks what may NOT be seized."),
         _error("goederen", "terminology", "minor", "Belgian law speaks of 'roerende goederen' here.")],
}


def _translation(user: str) -> str:
    return re.search(r"translation:\n```(.*?)```", user, re.DOTALL).group(1)


class RecordedAnswerServer(LocalServer):
    """Recorded-answer stand-in (see the module docstring). `answers`: target text -> error list;
    `script`: actions consumed one per request before answering normally ("429", "500", "401",
    "nonjson", "schema"); `refuse_response_format`, `key`, `models`, `delay` change every answer."""

    def __init__(self, answers: dict[str, list] | None = None) -> None:
        self.answers = answers or {}
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.refuse_response_format: str | None = None  # "any" (400) or "json_schema" (500, as llama-cpp-python)
        self.key: str | None = None
        self.models = {"recorded"}
        self.delay = 0.0
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self._serve()

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    action = server.script.pop(0) if server.script else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(server.delay)
                with server.lock:  # before the answer is sent: the client may send the next one at once
                    server.in_flight -= 1
                self._answer(body, action)

            def _answer(self, body: dict, action: str | None) -> None:
                if self.path.split("?")[0] != "/v1/chat/completions":
                    return self.send_json(404, {"error": "no such route"})
                if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                    return self.send_json(401, {"error": {"message": "Incorrect API key provided"}})
                if body["model"] not in server.models:
                    return self.send_json(404, {"error": {"message": f"model '{body['model']}' not found"}})
                if action == "429":
                    return self.send_json(429, {"error": "slow down"}, {"Retry-After": "1"})
                if action == "500":
                    return self.send_json(500, {"error": "overloaded"})
                form = body.get("response_format", {}).get("type")
                if server.refuse_response_format == "any" and form:
                    return self.send_json(400, {"error": {"message": "Unrecognized request argument: response_format"}})
                if server.refuse_response_format == "json_schema" and form == "json_schema":
                    return self.send_json(500, {"error": {"message": "1 validation error: ('body', 'response_format', "
                                                                 "'type') Input should be 'text' or 'json_object'"}})
                content = json.dumps({"errors": server.answers.get(_translation(body["messages"][1]["content"]), [])})
                if action == "nonjson":
                    content = "Sure! Here are the errors: none."
                elif action == "schema":
                    content = json.dumps({"errors": [{"span": "x", "category": "style", "severity": "huge",
                                                      "explanation": "?"}]})
                self.send_json(200, {"id": "cmpl-1", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}]})

        return Handler


@pytest.fixture
def server():
    s = RecordedAnswerServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample", with_corpus=False)


@pytest.fixture
def recorded_server(sample):
    by_id = sample.by_id()
    s = RecordedAnswerServer({by_id[i].target: errors for i, errors in RECORDED.items()})
    yield s
    s.close()


def _judge(server, tmp_path, *, concurrency=2, cache=True, backoff=Backoff(base=0.01)):
    client = ChatClient(server.url, "recorded", KEY, backoff=backoff, concurrency=concurrency, timeout=5)
    return Judge(client, JudgeCache(tmp_path / "judge.sqlite" if cache else None), concurrency)


def test_a_429_waits_its_retry_after_and_a_500_backs_off_then_the_answer_is_used(server, tmp_path):
    server.answers = {"De huurder betaalt.": [_error("huurder", "role", "major", "landlord, not tenant")]}
    server.script = ["429", "500"]
    judge = _judge(server, tmp_path)
    started = time.perf_counter()
    [outcome] = judge.judge([("Le bailleur paie.", "De huurder betaalt.")], PAIR)
    assert time.perf_counter() - started >= 1.0  # Retry-After: 1 was honoured
    assert outcome.status == "judged" and len(server.requests) == 3
    assert [(e.start, e.end, e.severity) for e in outcome.errors] == [(3, 10, "major")]


def test_a_server_that_never_answers_times_out_with_bounded_retries(tmp_path):
    """A listening socket that accepts and never answers (a hung server): the read timeout, retried,
    then that pair fails; nothing waits forever."""
    import socket

    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        client = ChatClient(f"http://127.0.0.1:{hung.getsockname()[1]}/v1", "recorded", None, timeout=0.3,
                            backoff=Backoff(attempts=2, base=0.01))
        started = time.perf_counter()
        with pytest.raises(RequestFailed, match="no answer .* within the timeout .*2 tries"):
            client.complete({"model": "recorded", "messages": []})
        assert time.perf_counter() - started < 5


def test_retries_are_bounded(server, tmp_path):
    server.script = ["500"] * 10
    client = ChatClient(server.url, "recorded", None, backoff=Backoff(attempts=3, base=0.01), timeout=5)
    with pytest.raises(RequestFailed, match="answered 500 3 times"):
        client.complete({"model": "recorded", "messages": [{"role": "user", "content": "translation:\n```x```"}]})
    assert len(server.requests) == 3


@pytest.mark.parametrize("action", ["nonjson", "schema"])
def test_a_malformed_answer_is_asked_again_once_then_the_pair_fails(server, tmp_path, action):
    judge = _judge(server, tmp_path, concurrency=1)
    server.script = [action]
    [ok] = judge.judge([("Une question ?", "Een vraag?")], PAIR)
    assert ok.status == "judged" and len(server.requests) == 2 and "asked again" in ok.notes[0]
    first, again = server.requests
    assert [m["role"] for m in again["messages"]] == ["system", "user", "assistant", "user"]  # not the same request
    assert again["messages"][:2] == first["messages"] and json.dumps(SCHEMA, separators=(",", ":")) in again["messages"][3]["content"]
    assert again["messages"][2]["content"] in ("Sure! Here are the errors: none.", json.dumps(
        {"errors": [{"span": "x", "category": "style", "severity": "huge", "explanation": "?"}]}))
    server.script = [action, action]
    [failed] = judge.judge([("Une autre ?", "Een andere?")], PAIR)
    assert failed.status == "failed" and len(server.requests) == 4
    assert failed.reason.startswith("judge failed:") and "asked twice" in failed.reason


def test_strict_parsing_drops_a_span_that_is_not_in_the_text():
    answer = json.dumps({"errors": [
        _error("6 maanden", "number", "critical", "3 became 6"),
        _error("drie maanden", "number", "major", "invented"),
        _error("3 mois", "omission", "major", "dropped", side="source"),
        {"span": "maanden", "category": "other", "severity": "minor", "explanation": "side defaults to target"}]})
    errors, notes = parse_answer(answer, "depuis 3 mois", "al 6 maanden")
    assert [(e.side, e.start, e.end, e.text) for e in errors] == [
        ("target", 3, 12, "6 maanden"), ("source", 7, 13, "3 mois"), ("target", 5, 12, "maanden")]
    assert notes == ["span 'drie maanden' is not in the target text; dropped"]


@pytest.mark.parametrize("refuse", ["json_schema", "any"])
def test_a_refused_response_format_falls_back_to_json_object_then_to_the_schema_in_the_prompt(server, tmp_path, refuse):
    """`json_schema` refused with a 500 naming response_format is what llama-cpp-python's server does
    (measured, docs/audit.md); `any` is a server that takes no response_format at all (400)."""
    server.refuse_response_format = refuse
    judge = _judge(server, tmp_path, concurrency=1)
    outcomes = judge.judge([("Une question ?", "Een vraag?"), ("Deux ?", "Twee?")], PAIR)
    assert [o.status for o in outcomes] == ["judged", "judged"]
    in_prompt = json.dumps(SCHEMA, separators=(",", ":"))
    first, second, *later = server.requests
    assert first["response_format"]["type"] == "json_schema" and first["response_format"]["json_schema"]["schema"] == SCHEMA
    assert in_prompt not in first["messages"][1]["content"]
    assert second["response_format"] == {"type": "json_object", "schema": SCHEMA} and in_prompt in second["messages"][1]["content"]
    if refuse == "json_schema":
        assert judge.form == "json_object" and len(later) == 1 and later[0]["response_format"]["type"] == "json_object"
    else:
        assert judge.form == "prompt" and len(later) == 2
        assert all("response_format" not in r and in_prompt in r["messages"][1]["content"] for r in later)
    assert "refused response_format json_schema" in outcomes[0].notes[0]


def test_the_concurrency_limit_holds(server, tmp_path):
    server.delay = 0.3
    judge = _judge(server, tmp_path, concurrency=3, cache=False)
    outcomes = judge.judge([(f"Question {i} ?", f"Vraag {i}?") for i in range(9)], PAIR)
    assert all(o.status == "judged" for o in outcomes)
    assert server.max_in_flight == 3  # never more, and it did run in parallel


def test_the_cache_means_a_rerun_sends_nothing_and_is_keyed_by_model_and_prompt_version(server, tmp_path):
    texts = [(f"Question {i} ?", f"Vraag {i}?") for i in range(5)]
    assert all(o.status == "judged" for o in _judge(server, tmp_path).judge(texts, PAIR))
    sent = len(server.requests)
    again = _judge(server, tmp_path).judge(texts, PAIR)
    assert [o.status for o in again] == ["cached"] * 5 and len(server.requests) == sent
    server.models.add("other")
    other = Judge(ChatClient(server.url, "other", None, timeout=5), JudgeCache(tmp_path / "judge.sqlite"))
    assert [o.status for o in other.judge(texts[:1], PAIR)] == ["judged"]  # another model is another key


def test_concurrent_runs_share_one_cache_file_safely(server, tmp_path):
    """Two processes judge overlapping pairs into the same cache at once; then nothing is asked again."""
    script = f"""
import sys
from pathlib import Path
from bbsard_audit.audit.judge.cache import JudgeCache
from bbsard_audit.audit.judge.client import ChatClient
from bbsard_audit.audit.judge.judging import Judge
judge = Judge(ChatClient({server.url!r}, "recorded", None, timeout=10), JudgeCache(Path({str(tmp_path)!r}) / "judge.sqlite"), 4)
texts = [(f"Question {{i}} ?", f"Vraag {{i}}?") for i in range(int(sys.argv[1]), int(sys.argv[1]) + 30)]
outcomes = judge.judge(texts, ("fr", "nl"))
assert all(o.status in ("judged", "cached") for o in outcomes), [o.reason for o in outcomes]
"""
    runs = [subprocess.Popen([sys.executable, "-c", script, start]) for start in ("0", "15")]
    assert [r.wait(timeout=120) for r in runs] == [0, 0]
    sent = len(server.requests)
    outcomes = _judge(server, tmp_path).judge([(f"Question {i} ?", f"Vraag {i}?") for i in range(45)], PAIR)
    assert {o.status for o in outcomes} == {"cached"} and len(server.requests) == sent


def test_an_unreachable_server_or_a_refused_key_stops_asking(server, tmp_path):
    server.key = "the-right-key"
    judge = _judge(server, tmp_path, concurrency=1)
    outcomes = judge.judge([(f"Q{i} ?", f"V{i}?") for i in range(4)], PAIR)
    assert {o.status for o in outcomes} == {"failed"} and len(server.requests) == 1  # the first 401 stops it
    assert "refused the API key (401)" in judge.unavailable and KEY not in judge.unavailable
    with pytest.raises(JudgeUnavailable, match="cannot reach http://127.0.0.1:9/v1/chat/completions"):
        ChatClient("http://127.0.0.1:9/v1", "recorded", KEY, timeout=2).complete({"model": "recorded"})


runner = CliRunner()


def _audit(tmp_path, embedding_cache, *extra, env=None):
    env = {"BBSARD_AUDIT_JUDGE_API_KEY": KEY, "OPENAI_API_KEY": "", **(env or {})}
    return runner.invoke(app, ["audit", "--dataset", "sample", "--cache-dir", str(embedding_cache),
                               "--out", str(tmp_path / "out"), *map(str, extra)], env=env, catch_exceptions=False)


def _model(tmp_path, server) -> str:
    """A model name of this test's own (the judge cache lives in the session's cache folder)."""
    name = f"recorded-{tmp_path.name}"
    server.models.add(name)
    return name


def _leaks(result, *folders) -> list[str]:
    texts = [result.stdout, result.stderr] + [f.read_text(errors="replace") for d in folders if d.exists()
                                             for f in d.rglob("*") if f.is_file() and f.suffix != ".parquet"]
    return [t[:80] for t in texts if KEY in t]


def test_audit_with_the_judge_end_to_end(recorded_server, tmp_path, embedding_cache, sample):
    recorded_server.key = KEY
    model = _model(tmp_path, recorded_server)
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", recorded_server.url,
                    "--judge-on", "all", "--judge-concurrency", 3)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    frame = read_audit(out / "audit.csv", ["id"]).set_index("id")  # the contract checks every span's offsets
    assert (frame["judge_status"] == "judged").all() and len(recorded_server.requests) == len(frame) == 40
    assert frame.loc[3, "judge_mqm"] == 10 and frame.loc[1, "judge_mqm"] == 5 and frame.loc[7, "judge_mqm"] == 0
    assert frame.loc[16, "judge_mqm"] == 6  # major 5 + minor 1 (GEMBA-MQM weights)
    spans = [s for s in frame.loc[3, "spans"] if s["flag"] == "judge_errors"]
    assert spans == [{"side": "nl", "start": spans[0]["start"], "end": spans[0]["start"] + 11, "text": "in Wallonië",
                      "category": "entity", "flag": "judge_errors"}]
    assert "Wallonia is another region's law" in frame.loc[3, "reasons"] and "judge_errors" in frame.loc[3, "flags"]
    assert not frame.loc[7, "flags"] or "judge_errors" not in frame.loc[7, "flags"]
    meta = json.loads((out / "audit.meta.json").read_text())["judge"]
    assert meta["model"] == model and meta["url"] == recorded_server.url
    assert meta["prompt_version"] == PROMPT_VERSION and meta["response_format"] == "json_schema"
    assert (meta["judged"], meta["cached"], meta["failed"], meta["dropped_spans"]) == (40, 0, 0, 0)
    assert {h["Authorization"] for h in recorded_server.headers} == {f"Bearer {KEY}"}
    assert "French source" in recorded_server.requests[0]["messages"][1]["content"]
    assert "Belgian statutory law" in recorded_server.requests[0]["messages"][1]["content"]
    # Label Studio pre-annotations carry the judge's span
    tasks = build_tasks(frame.reset_index().loc[lambda f: f["id"] == 3], model_version="audit", layout=Layout.of(out))
    regions = [r for r in tasks[0]["predictions"][0]["result"] if r["type"] == "labels"]
    assert {"text": "in Wallonië", "labels": ["entity"]}.items() <= next(
        r["value"] for r in regions if r["value"]["text"] == "in Wallonië").items()
    # calibrate treats the judge as a signal
    calibrated = runner.invoke(app, ["audit", "calibrate", "--audit", str(out / "audit.csv"), "--verdicts",
                                     str(sample_dir() / "verdicts.csv"), "--out", str(tmp_path / "cal")])
    assert calibrated.exit_code == 0, calibrated.output
    table = pd.read_csv(tmp_path / "cal" / "calibration.csv").set_index("signal")
    assert table.loc["judge_mqm", "direction"] == "higher_is_worse" and "judge_errors" in table.index
    # a rerun asks nothing: every answer comes from the cache
    rerun = _audit(tmp_path / "again", embedding_cache, "--judge", f"llm:{model}", "--judge-url",
                   recorded_server.url, "--judge-on", "all")
    assert rerun.exit_code == 0 and len(recorded_server.requests) == 40, rerun.output
    assert json.loads((tmp_path / "again" / "out" / "audit.meta.json").read_text())["judge"]["cached"] == 40
    assert pd.read_csv(tmp_path / "again" / "out" / "audit.csv")["judge_mqm"].equals(
        pd.read_csv(out / "audit.csv")["judge_mqm"])
    assert not _leaks(result, out) and not _leaks(rerun, tmp_path / "again", tmp_path / "cal")


def test_judge_on_flagged_asks_only_about_flagged_pairs_and_the_key_falls_back_to_openai_api_key(
        recorded_server, tmp_path, embedding_cache):
    recorded_server.key = KEY
    model = _model(tmp_path, recorded_server)
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", recorded_server.url,
                    env={"BBSARD_AUDIT_JUDGE_API_KEY": "", "OPENAI_API_KEY": KEY})
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(tmp_path / "out" / "audit.csv")
    judged = frame["judge_status"].fillna("") == "judged"
    meta = json.loads((tmp_path / "out" / "audit.meta.json").read_text())["judge"]
    assert 0 < judged.sum() == meta["selected"] == len(recorded_server.requests) < len(frame)
    assert frame.loc[judged, "judge_mqm"].notna().all() and frame.loc[~judged, "judge_mqm"].isna().all()
    assert not _leaks(result, tmp_path / "out")


def test_failures_are_one_line_each_and_the_audit_goes_on(recorded_server, tmp_path, embedding_cache, sample):
    model = _model(tmp_path, recorded_server)
    recorded_server.script = ["nonjson", "nonjson"]  # the first pair asked fails twice
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", recorded_server.url,
                    "--judge-on", "all", "--judge-concurrency", 1)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("judge: pair")]
    failed = [line for line in lines if "judge failed" in line]
    assert len(failed) == 1 and "asked twice" in failed[0] and "Traceback" not in result.output
    meta = json.loads((tmp_path / "out" / "audit.meta.json").read_text())["judge"]
    assert (meta["judged"], meta["failed"]) == (39, 1) and len(meta["failed_ids"]) == 1
    frame = pd.read_csv(tmp_path / "out" / "audit.csv").set_index("id")
    assert frame.loc[meta["failed_ids"][0], "judge_status"] == "failed"


def test_a_made_up_span_is_dropped_with_one_line(recorded_server, tmp_path, embedding_cache, sample):
    model = _model(tmp_path, recorded_server)
    target = sample.by_id()[10].target
    recorded_server.answers[target] = [_error("al 9 maanden", "number", "critical", "invented quote"),
                                       _error("al 6 maanden", "number", "critical", "3 months became 6 months.")]
    recorded_server.answers[sample.by_id()[7].target] = [_error("vochtig", "mistranslation", "critical", "x")]
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", recorded_server.url,
                    "--judge-on", "all")
    assert result.exit_code == 0, result.output
    assert "judge: pair 10: span 'al 9 maanden' is not in the target text; dropped" in result.stderr.splitlines()
    frame = pd.read_csv(tmp_path / "out" / "audit.csv").set_index("id")
    assert frame.loc[10, "judge_mqm"] == 10 and "invented quote" not in frame.loc[10, "reasons"]
    # the judge's evidence enters the risk: one critical error alone flags a pair (0.6 / (1 + e^-5.5))
    assert frame.loc[7, "risk"] >= 0.597 and frame.loc[7, "flagged"] and frame.loc[7, "flags"] == "judge_errors"
    assert json.loads((tmp_path / "out" / "audit.meta.json").read_text())["judge"]["dropped_spans"] == 1


@pytest.mark.parametrize("problem", ["unreachable", "key", "model"])
def test_when_nothing_can_be_judged_the_audit_exits_2_with_one_line_and_writes_nothing(
        server, tmp_path, embedding_cache, problem):
    url, model = server.url, _model(tmp_path, server)
    if problem == "unreachable":
        url = "http://127.0.0.1:9/v1"
    elif problem == "key":
        server.key = "the-right-key"
    else:
        model = "no-such-model"
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", url, "--judge-on", "all")
    assert result.exit_code == 2, result.output
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    expected = {"unreachable": "cannot reach http://127.0.0.1:9/v1", "key": "refused the API key (401)",
                "model": "no model 'no-such-model'"}[problem]
    assert len(error) == 1 and "judged no pair" in error[0] and expected in error[0], result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "out" / "audit.csv").exists()
    assert len(server.requests) <= 4 and not _leaks(result, tmp_path)  # at most the first requests in flight


def test_the_dry_run_prints_the_requests_and_a_token_estimate_and_sends_nothing(server, tmp_path, embedding_cache):
    model = _model(tmp_path, server)
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", server.url,
                    "--judge-on", "all", "--judge-dry-run")
    assert result.exit_code == 0, result.output
    bodies = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(bodies) == 40 and all(b["model"] == model and b["response_format"]["type"] == "json_schema"
                                     for b in bodies)
    summary = result.stderr.strip().splitlines()[-1]
    tokens = int(re.search(r"about (\d+) prompt tokens", summary).group(1))
    assert "40 request(s)" in summary and 40 * 300 < tokens < 40 * 2000
    assert not server.requests and not (tmp_path / "out" / "audit.csv").exists() and not _leaks(result, tmp_path)


def test_a_key_or_url_with_credentials_never_reaches_an_output(server, tmp_path, embedding_cache):
    model = _model(tmp_path, server)
    host = server.url.removeprefix("http://")
    url = f"http://user:{KEY}@{host}?api_key={KEY}"
    result = _audit(tmp_path, embedding_cache, "--judge", f"llm:{model}", "--judge-url", url, "--judge-on", "all")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "out" / "audit.meta.json").read_text())["judge"]["url"] == server.url
    assert not _leaks(result, tmp_path / "out") and len(server.requests) == 40
    bad_key = runner.invoke(app, ["audit", "--dataset", "sample", "--out", str(tmp_path / "bad"), "--judge", f"llm:{model}",
                                  "--judge-url", server.url], env={"BBSARD_AUDIT_JUDGE_API_KEY": f"{KEY} {KEY}"})
    assert bad_key.exit_code == 2 and "cannot carry" in bad_key.stderr and not _leaks(bad_key)


@pytest.mark.parametrize("args, message", [
    (["--judge", "gpt-4o", "--judge-url", "http://127.0.0.1:9/v1"], "--judge takes llm:MODEL"),
    (["--judge", "llm:m"], "--judge needs --judge-url"),
    (["--judge", "llm:m", "--judge-url", "127.0.0.1:9"], "must be an http(s) URL"),
    (["--judge", "llm:m", "--judge-url", "http://[::1/v1"], "--judge-url is not a valid URL"),
    (["--judge", "llm:m", "--judge-url", "http://x", "--judge-concurrency", "0"], "--judge-concurrency must be >= 1"),
    (["--judge", "llm:m", "--judge-url", "http://x", "--judge-on", "some"], "--judge-on must be one of"),
    (["--judge-dry-run"], "--judge takes llm:MODEL"),
])
def test_bad_judge_options_are_one_line(tmp_path, args, message):
    result = runner.invoke(app, ["audit", "--dataset", "sample", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output


def test_the_judges_pairs_are_chosen_by_the_other_signals_risk(server, tmp_path):
    from bbsard_audit.audit.judge.signal import JudgeSignal
    from bbsard_audit.audit.risk import RiskConfig

    prior, config = pd.DataFrame({"risk": [0.1, 0.3, 0.6, 0.9]}), RiskConfig.load()
    chosen = {}
    for on in ("flagged", "uncertain", "all"):
        signal = JudgeSignal(_judge(server, tmp_path), server.url, on)
        signal.select(prior, config)
        chosen[on] = signal._selected.tolist()
    assert chosen == {"flagged": [False, False, True, True], "uncertain": [False, True, True, False],
                      "all": [True] * 4}


def test_the_judge_is_a_declared_signal_with_a_soft_rule():
    spec = FLAG_SPECS["judge_errors"]
    assert spec.module.endswith("audit.judge.signal") and spec.rule.column == "judge_mqm"
    assert spec.rule.direction == "above" and spec.category == "mistranslation"
    assert "judge_errors" in Path(__file__).parents[2].joinpath("docs", "flags.md").read_text()


def test_docs_show_the_prompt_and_the_schema_the_code_sends():
    doc = Path(__file__).parents[2].joinpath("docs", "audit.md").read_text()
    assert f'PROMPT_VERSION = "{PROMPT_VERSION}"' in doc
    assert prompt.SYSTEM in doc and prompt.INSTRUCTIONS in doc and json.dumps(SCHEMA, indent=2) in doc


def test_an_en_nl_benchmark_is_judged_in_its_languages_and_spans_carry_its_codes(tmp_path, embedding_cache):
    """The prompt names the pair's languages; a target-side and a source-side (omission) span reach
    audit.csv with sides `nl` and `en`, offsets into the stored texts."""
    from benchmark_files import EN_NL, beir_pair, jsonl


    manifest = beir_pair(tmp_path / "data", EN_NL, "en", "nl", name="toy-en-nl")
    bt = tmp_path / "bt.jsonl"
    jsonl(bt, [{"id": r[0], "backtranslation": r[3]} for r in EN_NL])
    answers = {EN_NL[1][2]: [_error("5 kinderen", "number", "critical", "3 children became 5."),
                             _error("a tenant", "omission", "minor", "Not a real omission; a source span.", "source")]}
    s = RecordedAnswerServer(answers)
    try:
        model = _model(tmp_path, s)
        res = runner.invoke(app, ["audit", "--dataset", str(manifest), "--split", "test", "--backtranslations",
                                  str(bt), "--cache-dir", str(embedding_cache), "--out", str(tmp_path / "out"),
                                  "--judge", f"llm:{model}", "--judge-url", s.url, "--judge-on", "all"],
                            env={"BBSARD_AUDIT_JUDGE_API_KEY": KEY}, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        assert "English source" in s.requests[0]["messages"][1]["content"]
        assert "Dutch" in s.requests[0]["messages"][1]["content"]
    finally:
        s.close()
    out = tmp_path / "out"
    frame = Layout.of(out / "audit.csv").audit.read(out / "audit.csv").set_index("id")
    spans = {(x["side"], x["text"]) for x in frame.loc["PLAIN-2", "spans"] if x["flag"] == "judge_errors"}
    assert spans == {("nl", "5 kinderen"), ("en", "a tenant")}
    assert frame.loc["PLAIN-2", "judge_mqm"] == 11
