"""A stand-in HTTP server on 127.0.0.1 for the judge tests: a free port, served from a daemon thread."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON (or raw bytes): the stand-in servers' handlers subclass it."""

    def log_message(self, *args):  # quiet
        pass

    def send_json(self, status: int, payload, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LocalServer:
    """Subclasses give `_handler()` (a BaseHTTPRequestHandler class) and call `_serve()`; `url` ends in /v1."""

    def _serve(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
