"""Hostile inputs, round 4, on the LLM judge (client, cache, parser, CLI options), the corpus
judge's dry run and the COMET worker (issue 23; docs/reliability.md "Hostile judge and QE worker").

`HostileJudgeServer` is a HOSTILE STAND-IN for an OpenAI-compatible server (no LLM server runs here):
a plain http.server on 127.0.0.1 whose `behave(handler, body)` misbehaves in one way per test
(trickling, endless bodies, echoing the key, odd Retry-After values, answers holding surrogates or
decomposed accents). Every misbehaviour is bounded in time and size, so a client that does not
defend itself fails the test instead of hanging it. The COMET tests run the real scorer against
HOSTILE STAND-IN WORKERS (small Python scripts in place of audit/qe/worker.py).
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import textwrap
import time
import unicodedata
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from local_http import JsonHandler, LocalServer
from bbsard_audit.app.cli import app
from bbsard_audit.audit.judge.cache import JudgeCache
from bbsard_audit.audit.judge.client import Backoff, ChatClient, RequestFailed, _retry_after_seconds
from bbsard_audit.audit.judge.judging import Judge
from bbsard_audit.audit.judge.parse import parse_answer
from bbsard_audit.base.errors import InputError

KEY = "sk-hostile-7d3e9b1a40c2f5"
PAIR = ("fr", "nl")
runner = CliRunner()


def _fragments(text: str, n: int = 6) -> list[str]:
    """Pieces of KEY at least n characters long that `text` holds."""
    return [KEY[i:i + n] for i in range(len(KEY) - n + 1) if KEY[i:i + n] in text]


def _answer(errors: list) -> dict:
    return {"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps({"errors": errors})}}]}


def _target(body: dict) -> str:
    user = body["messages"][1]["content"]
    return user.split("translation:\n```", 1)[1].split("```", 1)[0]


class HostileJudgeServer(LocalServer):
    """The hostile stand-in (module docstring). `behave(handler, body)` answers each request; the
    default answers {"errors": []}. `requests` records the request bodies."""

    def __init__(self, behave=None) -> None:
        self.behave = behave or (lambda h, body: h.send_json(200, _answer([])))
        self.requests: list[dict] = []
        self._serve()

    def _handler(self):
        server = self

        class Handler(JsonHandler):
            def trickle(self, data: bytes, seconds: float = 0.1, limit: float = 30.0) -> None:
                """A byte every `seconds`, for at most `limit` seconds (each read is quick, the whole is not)."""
                stop = time.monotonic() + limit
                try:
                    for i in range(len(data)):
                        if time.monotonic() > stop:
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(seconds)
                except OSError:
                    pass  # the client gave up, as it should

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                self.key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                server.behave(self, body)

        return Handler


@pytest.fixture
def hostile():
    servers = []

    def start(behave=None):
        servers.append(HostileJudgeServer(behave))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _client(server, **kw) -> ChatClient:
    kw = {"timeout": 5, "backoff": Backoff(attempts=2, base=0.01), **kw}
    return ChatClient(server.url, "m", KEY, **kw)


# ----------------------------------------------------------------------------- leaks


def test_an_error_body_echoing_the_key_shows_no_piece_of_it(hostile):
    """The key sits across the 200-character cut of the quoted body, and a second server cuts its own
    echo mid-key: the message is scrubbed before it is cut, and key pieces are masked too."""
    across = hostile(lambda h, body: h.send_json(400, ("x" * 185 + f" invalid api key {h.key} given").encode()))
    with pytest.raises(RequestFailed) as caught:
        _client(across).complete({"model": "m", "messages": []})
    assert "refused the request (400" in str(caught.value) and not _fragments(str(caught.value))
    cut = hostile(lambda h, body: h.send_json(404, f"no model for key {h.key[:14]}".encode()))
    with pytest.raises(Exception) as caught:
        _client(cut).complete({"model": "m", "messages": []})
    assert "404" in str(caught.value) and not _fragments(str(caught.value))


def test_an_answer_quoting_the_key_reaches_no_output_nor_the_cache(hostile, tmp_path, embedding_cache):
    def quote(h, body):
        word = _target(body).split()[0]
        h.send_json(200, _answer([{"span": word, "side": "target", "category": "other", "severity": "major",
                                   "explanation": f"The request was sent with the key {h.key}, see {h.key[3:]}."}]))

    server = hostile(quote)
    cache = embedding_cache
    result = runner.invoke(app, ["audit", "--dataset", "sample", "--cache-dir", str(cache), "--out", str(tmp_path / "out"),
                                 "--judge", f"llm:quote-{tmp_path.name}", "--judge-url", server.url, "--judge-on", "all"],
                           env={"BBSARD_AUDIT_JUDGE_API_KEY": KEY, "OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 40 and "the key ***" in (tmp_path / "out" / "audit.csv").read_text()
    reasons = " ".join(pq.read_table(tmp_path / "out" / "audit.parquet").column("reasons").to_pylist())
    assert "the key ***" in reasons and not _fragments(reasons)
    for path in [*(tmp_path / "out").rglob("*"), *cache.rglob("judge.sqlite*")]:
        if path.is_file():
            data = path.read_bytes().decode("latin-1")
            assert not _fragments(data), path.name
    assert not _fragments(result.output)


def test_a_corpus_dry_run_writes_nothing_not_even_its_work_folder(hostile, tmp_path):
    from corpus_synth import build
    from corpus_toy import corpus_manifest

    manifest = corpus_manifest(tmp_path, build("fr", 30, seed=3))
    server = hostile()
    out = tmp_path / "dry"
    result = runner.invoke(app, ["audit", "corpus", "--dataset", str(manifest), "--out", str(out),
                                 "--cache-dir", str(tmp_path / "cache"), "--judge", "llm:m", "--judge-url", server.url,
                                 "--judge-on", "all", "--judge-dry-run", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert result.stdout.count('"messages"') == 30 and not server.requests
    assert not out.exists(), sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    # beside an interrupted real run's work folder, the dry run leaves that folder as it was
    work = tmp_path / "kept" / ".bbsard-audit-corpus-work"
    work.mkdir(parents=True)
    (work / "key.json").write_text("{}")
    result = runner.invoke(app, ["audit", "corpus", "--dataset", str(manifest), "--out", str(tmp_path / "kept"),
                                 "--cache-dir", str(tmp_path / "cache"), "--judge", "llm:m", "--judge-url", server.url,
                                 "--judge-dry-run", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "kept").rglob("*")) == [".bbsard-audit-corpus-work", "key.json"]


# ----------------------------------------------------------------------------- hangs


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_server_trickling_a_byte_at_a_time_meets_the_total_deadline(hostile, where):
    payload = json.dumps(_answer([])).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()

    def trickle(h, body):
        h.close_connection = True
        if where == "headers":
            h.trickle(head + payload)
        else:
            h.wfile.write(head)
            h.trickle(payload)

    server = hostile(trickle)
    client = _client(server, deadline=1.5)  # each read gets a byte within 0.1 s: the 5 s read timeout never trips
    started = time.monotonic()
    with pytest.raises(RequestFailed, match=r"no complete answer from .* within 1.5 s .*BBSARD_AUDIT_JUDGE_DEADLINE"):
        client.complete({"model": "m", "messages": []})
    assert time.monotonic() - started < 4 and len(server.requests) == 1  # not retried


def test_an_endless_body_stops_at_the_size_limit(hostile):
    def endless(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()  # no Content-Length: the body ends when the connection does
        h.close_connection = True
        chunk = b"[" * 65536
        try:
            for _ in range(16_000):  # 1 GB at most
                h.wfile.write(chunk)
        except OSError:
            pass

    server = hostile(endless)
    started = time.monotonic()
    with pytest.raises(RequestFailed, match=r"more than the 1,048,576 bytes allowed; stopped reading"):
        _client(server, max_bytes=2**20).complete({"model": "m", "messages": []})
    assert time.monotonic() - started < 5
    announced = hostile(lambda h, body: (h.send_response(200), h.send_header("Content-Length", str(10**10)),
                                         h.end_headers()))
    with pytest.raises(RequestFailed, match=r"announced 10,000,000,000 bytes"):
        _client(announced, max_bytes=2**20).complete({"model": "m", "messages": []})


@pytest.mark.parametrize("name, value", [("BBSARD_AUDIT_JUDGE_DEADLINE", "nan"), ("BBSARD_AUDIT_JUDGE_DEADLINE", "-1"),
                                         ("BBSARD_AUDIT_JUDGE_MAX_BYTES", "1.5"), ("BBSARD_AUDIT_JUDGE_MAX_BYTES", "0")])
def test_bad_limits_in_the_environment_are_one_line(tmp_path, name, value):
    result = runner.invoke(app, ["audit", "--dataset", "sample", "--out", str(tmp_path / "out"), "--judge", "llm:m",
                                 "--judge-url", "http://127.0.0.1:9/v1"], env={name: value})
    assert result.exit_code == 2 and f"error: {name} must be" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- tracebacks


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "-5", "1e9", "9" * 5000, "1_0", "٣",
                                   "Fri, 31 Dec 9999 23:59:59 GMT", "Wed, 21 Oct 2015 07:28:00 GMT",
                                   "Mon, 99 Foo 2026 99:99:99 GMT", ""])
def test_any_retry_after_gives_a_bounded_finite_wait(value):
    seconds = _retry_after_seconds(value)
    assert seconds is None or math.isfinite(seconds)
    wait = Backoff(cap=30.0, retry_after_cap=60.0).delay(2, value)
    assert math.isfinite(wait) and 0.0 <= wait <= 60.0


def test_a_429_with_retry_after_nan_backs_off_and_then_answers(hostile):
    script = ["nan", "inf", "-3"]

    def slow_down(h, body):
        if script:
            return h.send_json(429, {"error": "slow down"}, {"Retry-After": script.pop(0)})
        h.send_json(200, _answer([]))

    waits: list[float] = []
    client = _client(hostile(slow_down), backoff=Backoff(attempts=4, base=0.01, cap=0.5, sleep=waits.append))
    assert client.complete({"model": "m", "messages": []}) == '{"errors": []}'
    assert len(waits) == 3 and all(math.isfinite(w) and 0 <= w <= 0.5 for w in waits)


def test_a_lone_surrogate_in_an_answer_is_refused_before_it_is_cached(hostile, tmp_path):
    bad = {"span": "huurder", "side": "target", "category": "role", "severity": "major", "explanation": "a\ud800b"}
    server = hostile(lambda h, body: h.send_json(200, _answer([bad])))
    judge = Judge(_client(server), JudgeCache(tmp_path / "judge.sqlite"), 1)
    [outcome] = judge.judge([("Le bailleur paie.", "De huurder betaalt.")], PAIR)
    assert outcome.status == "failed" and "lone surrogate" in outcome.reason and len(server.requests) == 2
    with sqlite3.connect(tmp_path / "judge.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone() == (0,)


def test_a_surrogate_answer_through_the_cli_is_one_pair_failed_not_a_traceback(hostile, tmp_path, embedding_cache):
    def answer(h, body):
        word = _target(body).split()[0]
        h.send_json(200, _answer([{"span": word, "side": "target", "category": "other", "severity": "minor",
                                   "explanation": "bad \udc80 char"}] if len(server.requests) % 2 else []))

    server = hostile(answer)
    args = ["audit", "--dataset", "sample", "--cache-dir", str(embedding_cache), "--out", str(tmp_path / "out"),
            "--judge", f"llm:surrogate-{tmp_path.name}", "--judge-url", server.url, "--judge-on", "all",
            "--judge-concurrency", "1"]
    first = runner.invoke(app, args, env={"OPENAI_API_KEY": "", "BBSARD_AUDIT_JUDGE_API_KEY": ""})
    assert first.exit_code == 0 and "Traceback" not in first.output, first.output
    assert "lone surrogate" in first.stderr
    again = runner.invoke(app, args, env={"OPENAI_API_KEY": "", "BBSARD_AUDIT_JUDGE_API_KEY": ""})
    assert again.exit_code == 0 and "Traceback" not in again.output, again.output


def test_a_bad_cache_entry_is_asked_again_with_one_line(hostile, tmp_path):
    server = hostile()
    judge = Judge(_client(server), JudgeCache(tmp_path / "judge.sqlite"), 1)
    texts = [("Le bailleur paie.", "De huurder betaalt."), ("Deux.", "Twee.")]
    broken = '{"errors": [{"span": "x", "category": "other", "severity": "minor", "explanation": "\\ud800"}]}'
    with sqlite3.connect(tmp_path / "judge.sqlite") as db:
        db.execute("INSERT INTO answers VALUES (?, 'm', ?)", (judge.key(*texts[0], PAIR), broken))
        db.execute("INSERT INTO answers VALUES (?, 'm', CAST(x'ff00fe' AS TEXT))", (judge.key(*texts[1], PAIR),))
    outcomes = judge.judge(texts, PAIR)
    assert [o.status for o in outcomes] == ["judged", "judged"] and len(server.requests) == 2
    assert "cached answer is unusable" in outcomes[0].notes[0] and "lone surrogate" in outcomes[0].notes[0]
    assert "cached answer cannot be read" in outcomes[1].notes[0]
    assert [o.status for o in judge.judge(texts, PAIR)] == ["cached", "cached"]  # replaced by the good answers


# ----------------------------------------------------------------------------- silent-wrong


def test_a_span_quoted_in_nfd_is_found_with_offsets_into_the_stored_text():
    source, target = "Le bailleur a résilié le bail.", "De verhuurder heeft de huur opgezegd, één keer."
    nfd = unicodedata.normalize("NFD", "één keer")
    answer = json.dumps({"errors": [{"span": nfd, "side": "target", "category": "addition", "severity": "minor",
                                     "explanation": "added"},
                                    {"span": unicodedata.normalize("NFD", "résilié"), "side": "source",
                                     "category": "omission", "severity": "major", "explanation": "missing"}]})
    errors, notes = parse_answer(answer, source, target)
    assert not notes and [e.side for e in errors] == ["target", "source"]
    assert [(e.start, e.end, e.text) for e in errors] == [(38, 46, "één keer"), (14, 21, "résilié")]
    decomposed = unicodedata.normalize("NFD", target)  # and an NFD text with an NFC span
    [error], _ = parse_answer(json.dumps({"errors": [{"span": "één", "category": "addition", "severity": "minor",
                                                      "explanation": "x"}]}), source, decomposed)
    assert decomposed[error.start:error.end] == error.text and unicodedata.normalize("NFC", error.text) == "één"


def test_the_cache_tells_servers_apart_by_their_endpoint(hostile, tmp_path):
    errors = [{"span": "huurder", "side": "target", "category": "role", "severity": "major", "explanation": "A"}]
    a = hostile(lambda h, body: h.send_json(200, _answer(errors)))
    b = hostile(lambda h, body: h.send_json(200, _answer([])))
    cache = JudgeCache(tmp_path / "judge.sqlite")
    texts = [("Le bailleur paie.", "De huurder betaalt.")]
    [first] = Judge(_client(a), cache, 1).judge(texts, PAIR)
    [other] = Judge(_client(b), cache, 1).judge(texts, PAIR)  # the same model name on another server
    assert (first.status, len(first.errors)) == ("judged", 1) and (other.status, other.errors) == ("judged", [])
    same = ChatClient(a.url.replace("http://127.0.0.1", "HTTP://127.0.0.1") + "/", "m", KEY, timeout=5)
    [again] = Judge(same, cache, 1).judge(texts, PAIR)  # the same endpoint written another way
    assert again.status == "cached" and len(again.errors) == 1 and len(a.requests) == 1


@pytest.mark.parametrize("command", [["audit"], ["audit", "corpus"]])
@pytest.mark.parametrize("args, message", [
    (["--judge-url", "http://127.0.0.1:9/v1"], "--judge-url needs --judge llm:MODEL"),
    (["--judge-on", "all"], "--judge-on needs --judge llm:MODEL"),
    (["--judge-on", "some"], "--judge-on must be one of flagged|uncertain|all, not 'some'"),
    (["--judge-concurrency", "2", "--judge-url", "http://x"], "--judge-url and --judge-concurrency need --judge"),
])
def test_judge_options_without_the_judge_are_usage_errors(tmp_path, command, args, message):
    result = runner.invoke(app, [*command, "--dataset", "sample", "--out", str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_judge_max_chars_without_the_judge_is_a_usage_error(tmp_path):
    result = runner.invoke(app, ["audit", "corpus", "--dataset", "sample", "--out", str(tmp_path / "out"),
                                 "--judge-max-chars", "10"])
    assert result.exit_code == 2 and "--judge-max-chars needs --judge" in result.stderr


# ----------------------------------------------------------------------------- the COMET worker


def _stand_in_worker(tmp_path, monkeypatch, script: str):
    """The scorer with a HOSTILE STAND-IN WORKER (`script`, run by this interpreter) and a checkpoint folder."""
    from bbsard_audit.audit.qe import signal
    from bbsard_audit.audit.qe.signal import CometScorer, QECache

    worker = tmp_path / "stand_in_worker.py"
    worker.write_text(textwrap.dedent(script))
    monkeypatch.setattr(signal, "WORKER", worker)
    monkeypatch.setattr(signal, "venv_python", lambda: Path(sys.executable))
    model = tmp_path / "model"
    (model / "checkpoints").mkdir(parents=True)
    (model / "checkpoints" / "model.ckpt").write_bytes(b"ckpt")
    (model / "hparams.yaml").write_text("x: 1\n")
    return CometScorer(str(model), QECache(tmp_path / "qe.sqlite"))


ECHO = """
    import json, sys
    lines = open(sys.argv[sys.argv.index("--input") + 1], encoding="utf-8").read().splitlines()
    print(json.dumps({"model_class": "Stand-in", "word_level": False, "checkpoint": "x", "gpus": 0}), flush=True)
    for line in lines:
        r = json.loads(line)
        print(json.dumps({"score": 1.0 if "\\ufffd" in r["mt"] else 0.5, "spans": None}), flush=True)
"""


def test_a_worker_that_never_answers_is_stopped_at_the_idle_timeout(tmp_path, monkeypatch):
    scorer = _stand_in_worker(tmp_path, monkeypatch, "import time\ntime.sleep(120)\n")
    monkeypatch.setenv("BBSARD_AUDIT_QE_IDLE_TIMEOUT", "1")
    started = time.monotonic()
    with pytest.raises(InputError, match=r"the COMET worker wrote nothing for 1 s \(BBSARD_AUDIT_QE_IDLE_TIMEOUT\)"):
        scorer.score([("a", "b")])
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("script, message", [
    ("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe{\\n')\n", "not JSON"),
    ("print('[1, 2]')\n", "not a {score, spans} result"),
    ("print('{\"score\": NaN, \"spans\": null}')\n", "not a {score, spans} result"),
    ("print('{\"score\": 0.5, \"spans\": [{\"start\": \"a\"}]}')\n", "not a {score, spans} result"),
])
def test_a_worker_writing_garbage_is_one_line(tmp_path, monkeypatch, script, message):
    scorer = _stand_in_worker(tmp_path, monkeypatch, script)
    with pytest.raises(InputError, match="the COMET worker wrote .*" + message.replace("{", r"\{").replace("}", r"\}")):
        scorer.score([("a", "b")])


def test_texts_with_lone_surrogates_reach_the_worker_as_replacement_characters(tmp_path, monkeypatch):
    scorer = _stand_in_worker(tmp_path, monkeypatch, ECHO)
    results = scorer.score([("a\ud800", "b\udc00c")])
    assert results == [{"score": 1.0, "spans": None}]  # the stand-in saw U+FFFD in the translation


def test_a_damaged_qe_cache_entry_is_scored_again(tmp_path, monkeypatch):
    scorer = _stand_in_worker(tmp_path, monkeypatch, ECHO)
    assert scorer.score([("a", "b")]) == [{"score": 0.5, "spans": None}]
    with sqlite3.connect(tmp_path / "qe.sqlite") as db:
        db.execute("UPDATE results SET payload = CAST(x'ff7b' AS TEXT)")
    assert scorer.score([("a", "b")]) == [{"score": 0.5, "spans": None}] and scorer.meta["n_scored"] == 1
