"""`annotate pull` against a misbehaving HTTP server (docs/reliability.md, "Untrusted input").

A real Label Studio cannot be made to ignore `?page=`, answer HTML or truncate its export, so this
is a MISBEHAVING STAND-IN: a stdlib http.server on 127.0.0.1 answering the few endpoints pull uses,
each scenario broken in one way. The real `bbsard-audit` command runs in a subprocess with a time
limit (before the fix, the paging scenarios never ended). Every request loop here is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

TITLE = "bbsard-review"
TASKS = [{"id": 10, "data": {"question_id": 1, "question_nl": "x"},
          "annotations": [{"id": 70, "completed_by": 5, "was_cancelled": False, "created_at": "2026-01-02T09:00:00Z",
                           "updated_at": "2026-01-02T09:00:00Z",
                           "result": [{"from_name": "verdict", "to_name": "question_nl", "type": "choices",
                                       "value": {"choices": ["legal"]}}]}]}]


class MisbehavingLabelStudio(BaseHTTPRequestHandler):
    """The stand-in: `scenario` says what it gets wrong; `requests` counts what it was asked."""

    scenario = "ok"
    requests = 0

    def log_message(self, *args):  # quiet
        pass

    def send(self, body: bytes, kind: str = "application/json", trickle: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not trickle:
            self.wfile.write(body)
            return
        try:
            for i in range(len(body)):  # one byte at a time: each read is quick, the whole is not
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(trickle)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def do_GET(self):
        type(self).requests += 1
        if type(self).requests > 5000:  # bounded whatever the client does
            self.send_error(503)
            return
        url = urlparse(self.path)
        page = int(parse_qs(url.query).get("page", ["1"])[0])
        s = self.scenario
        if url.path == "/api/projects/":
            if s == "ignores-page":  # the same page whatever ?page= says, and a count that promises more
                results = [{"id": 1, "title": TITLE}, {"id": 2, "title": "other"}]
                self.send(json.dumps({"count": 250, "results": results}).encode())
            elif s == "endless":  # fresh items on every page, no count: never runs out by itself
                self.send(json.dumps({"results": [{"id": 1000 + page, "title": "other"}]
                                      + ([{"id": 1, "title": TITLE}] if page == 1 else [])}).encode())
            else:  # as Label Studio does: past the last page, no results
                results = [{"id": 1, "title": TITLE}] if page == 1 else []
                self.send(json.dumps({"count": 1, "results": results}).encode())
        elif url.path == "/api/projects/1/export":
            body = json.dumps(TASKS).encode()
            if s == "html-export":
                self.send(b"<!DOCTYPE html><html><body>Login required</body></html>", "text/html")
            elif s == "truncated-export":
                self.send(body[: len(body) // 2])
            elif s == "trickle-export":
                self.send(body, trickle=0.05)
            else:
                self.send(body)
        elif url.path == "/api/users/":
            if s == "html-users":
                self.send(b"<html>maintenance</html>", "text/html")
            else:
                self.send(json.dumps([{"id": 5, "email": "ann@x.org", "username": "ann"}]).encode())
        else:
            self.send_error(404)


@pytest.fixture
def stand_in():
    servers = []

    def start(scenario: str) -> tuple[str, type]:
        handler = type("Handler", (MisbehavingLabelStudio,), {"scenario": scenario, "requests": 0})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", handler

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def pull(url: str, out, *extra: str, limit: float = 60):
    (out.parent / "config.toml").write_text("")  # no user config: the URL and key below only
    env = {**os.environ, "LABEL_STUDIO_API_KEY": "stand-in-token", "BBSARD_AUDIT_CONFIG": str(out.parent / "config.toml")}
    env.pop("LABEL_STUDIO_URL", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "from bbsard_audit.app.cli import main; main()", "annotate", "pull", "--project", TITLE,
                           "--url", url, "--out", str(out / "verdicts.csv"), *extra],
                          capture_output=True, text=True, timeout=limit, env=env)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def test_the_stand_in_serves_a_good_pull(stand_in, tmp_path):
    url, _ = stand_in("ok")
    code, output, _ = pull(url, tmp_path)
    assert code == 0 and (tmp_path / "verdicts.csv").exists(), output


@pytest.mark.parametrize("scenario, needles", [
    ("ignores-page", ["list projects", "GET /api/projects/", "repeating items already received", "after 2 requests"]),
    ("endless", ["list projects", "still paging after"]),
    ("html-export", ["export tasks", "GET /api/projects/1/export", "not JSON", "<!DOCTYPE"]),
    ("truncated-export", ["export tasks", "GET /api/projects/1/export", "not JSON"]),
    ("html-users", ["list users", "GET /api/users/", "not the JSON expected", "text/html"]),
    ("trickle-export", ["export tasks", "timed out after 1 s"]),
])
def test_a_misbehaving_server_is_one_line_exit_2_and_nothing_written(stand_in, tmp_path, scenario, needles):
    url, handler = stand_in(scenario)
    out = tmp_path / "out"
    out.mkdir()
    code, output, seconds = pull(url, out, "--timeout", "1", "--retries", "0", limit=30)
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    for needle in needles:
        assert needle in output, output
    assert "stand-in-token" not in output and list(out.iterdir()) == []
    assert seconds < 15 and handler.requests < 5000
