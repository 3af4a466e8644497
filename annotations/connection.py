"""Connection to a Label Studio server: where, with which key, and what a failure looks like.

The key comes from `LABEL_STUDIO_API_KEY` or a TOML config file, never from a command-line flag
(shell history) and never into a message: every failure becomes one `LabelStudioError` line
built from the status code and the server's `detail`, not from the SDK's exception text (which
carries the response headers, cookies included). The URL is only ever shown as `shown_url`, with
any credentials in it (userinfo, token query parameters) masked. Legacy tokens (`Authorization: Token`) and
personal access tokens (JWT refresh tokens, exchanged for access tokens by the SDK) both work.

The server is not trusted to behave (docs/reliability.md, "Untrusted input"): one request, from
connecting to the body's last byte, takes at most `timeout` seconds; one operation (a call with
its retries, or a paged listing with all its pages) at most `budget` = (retries + 1) x timeout
and `MAX_PAGES` requests; a listing whose page repeats items already received (a server that
ignores `?page=`) stops at once; a body that is not the JSON expected is one line naming the
endpoint (`GET /api/...`, never the query string), like every other failure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError
from label_studio_sdk.core.parse_error import ParsingError

from bbsard_audit.base.config import check_against, read_toml
from bbsard_audit.base.errors import InputError
from bbsard_audit.base.redact import redact, remember_secret, without_secret

DEFAULT_CONFIG = Path("~/.config/bbsard-audit/config.toml")
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}
MAX_PAGES = 10_000
"""Requests of one paged listing: 10 million tasks at the page sizes used here."""


class LabelStudioError(InputError):
    """A failed Label Studio call, as one line; `transient` ones are worth retrying."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


def _read_config(path: Path | None) -> dict:
    explicit = path is not None or "BBSARD_AUDIT_CONFIG" in os.environ
    path = Path(path or os.environ.get("BBSARD_AUDIT_CONFIG", DEFAULT_CONFIG)).expanduser()
    if not path.exists():
        if explicit:
            raise InputError("config file not found", file=str(path))
        return {}
    section = read_toml(path).get("label_studio", {})
    if not isinstance(section, Mapping):
        raise InputError("label_studio must be a table ([label_studio]) holding url and api_key, not a "
                         f"{type(section).__name__} (its value is not shown: it may be the key)", file=str(path))
    check_against(section, {"url": "", "api_key": ""}, file=str(path), prefix="label_studio.")
    return dict(section)


@dataclass
class Connection:
    url: str = field(repr=False)  # may carry credentials: shown only as `shown_url`
    api_key: str = field(repr=False)
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    endpoint: str = field(default="", init=False, repr=False)
    """The last request's method and path (no query string: it may carry a token)."""

    @property
    def shown_url(self) -> str:
        """The URL as it may appear in a message or a sidecar: credentials masked."""
        return redact(self.url)

    @classmethod
    def resolve(cls, url: str | None = None, config: Path | None = None, **kwargs) -> "Connection":
        """--url, else $LABEL_STUDIO_URL, else the config file; the key from env or config."""
        cfg = _read_config(config)
        url = url or os.environ.get("LABEL_STUDIO_URL") or cfg.get("url")
        key = os.environ.get("LABEL_STUDIO_API_KEY") or cfg.get("api_key")
        if not url:
            raise InputError("no Label Studio URL: give --url, set LABEL_STUDIO_URL or add "
                             "[label_studio] url to the config file")
        if not key:
            raise InputError("no Label Studio API key: set LABEL_STUDIO_API_KEY or add "
                             "[label_studio] api_key to the config file")
        remember_secret(key)
        return cls(url.rstrip("/"), key, **kwargs)

    @property
    def budget(self) -> float:
        """Seconds one operation (with its retries, or a listing with all its pages) may take."""
        return (self.retries + 1) * self.timeout

    def client(self) -> LabelStudio:
        # max_retries=0: retries happen here, where we know which calls are safe to repeat.
        def record(request: httpx.Request) -> None:
            self.endpoint = f"{request.method} {request.url.path}"

        http = httpx.Client(timeout=self.timeout, follow_redirects=True, transport=_WallClock(self.timeout),
                            event_hooks={"request": [record]})
        return self.call("connect", lambda: LabelStudio(base_url=self.url, api_key=self.api_key, timeout=self.timeout,
                                                         max_retries=0, httpx_client=http))

    def call(self, what: str, fn: Callable[[], Any], *, retry: bool = True) -> Any:
        """Run `fn`; retry transient failures with exponential backoff; fail as one line."""
        attempt = 0
        while True:
            try:
                return fn()
            except (ApiError, httpx.HTTPError, ParsingError) as exc:
                error = self._describe(what, exc)
            if not (retry and error.transient and attempt < self.retries):
                raise error
            time.sleep(self.backoff * 2**attempt)
            attempt += 1

    def listing(self, what: str, first: Callable[[], Any]) -> list:
        """Every item of a paged SDK listing (`first()` is its first page), each page fetched by `call`;
        a page of items already received, more than MAX_PAGES pages or more than `budget` seconds
        stop it as one line. Items are told apart by `id`; the response's count/total ends it."""
        started = time.monotonic()
        page, requests, items, seen = self.call(what, first), 1, [], set()
        while True:
            batch = list(page.items or [])
            if not all(isinstance(getattr(item, "id", None), int) for item in batch):
                raise self.bad_body(what, f"page {requests} holding items without an integer id")
            fresh = [item for item in batch if item.id not in seen]
            if batch and not fresh:
                raise self.bad_body(what, f"page {requests} repeating items already received (does the server "
                                          f"ignore ?page=?); stopped after {requests} requests")
            items += fresh
            seen.update(item.id for item in fresh)
            total = next((n for n in (getattr(page.response, k, None) for k in ("count", "total"))
                          if isinstance(n, int) and not isinstance(n, bool)), None)
            if not batch or not page.has_next or page.get_next is None or (total is not None and len(items) >= total):
                return items
            elapsed = time.monotonic() - started
            if requests >= MAX_PAGES or elapsed > self.budget:
                raise LabelStudioError(f"{what}: Label Studio at {self.shown_url} still paging after {requests} "
                                       f"requests and {elapsed:.0f} s (limits {MAX_PAGES:,} and {self.budget:.0f} s, "
                                       f"from --timeout and --retries); stopped")
            page = self.call(what, page.get_next)
            requests += 1

    def bad_body(self, what: str, problem: str) -> LabelStudioError:
        """A 2xx answer we cannot use, as one line naming the endpoint."""
        return LabelStudioError(f"{what}: Label Studio at {self.shown_url} answered {self.endpoint or 'a request'} "
                                f"with {problem}")

    def _describe(self, what: str, exc: Exception) -> LabelStudioError:
        where = f"Label Studio at {self.shown_url}"
        if isinstance(exc, httpx.TimeoutException):
            return LabelStudioError(f"{what}: {where} timed out after {self.timeout:.0f} s"
                                    + (f" ({self.endpoint})" if self.endpoint else ""), transient=True)
        if isinstance(exc, httpx.HTTPError):
            return LabelStudioError(f"{what}: cannot reach {where} ({type(exc).__name__})", transient=True)
        if isinstance(exc, ParsingError) or 200 <= exc.status_code < 300:  # the SDK could not parse a 2xx body
            kind = (exc.headers or {}).get("content-type", "") if isinstance(exc, ApiError) else ""
            return self.bad_body(what, "a body that is not the JSON expected" + (f" ({kind})" if kind else ""))
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = str(body.get("detail") or body.get("validation_errors") or "")  # may quote the key: masked before cut
        detail = redact(without_secret(detail, self.api_key))[:200]
        if status in (401, 403):
            return LabelStudioError(f"{what}: {where} rejected the API key (HTTP {status})"
                                    + (f": {detail}" if detail else ""))
        return LabelStudioError(f"{what}: {where} answered HTTP {status}" + (f": {detail}" if detail else ""),
                                transient=status in TRANSIENT_STATUS)


class _WallClock(httpx.HTTPTransport):
    """httpx's timeouts bound each read; this bounds a whole request, its body included, to `seconds`
    (a server trickling bytes cannot hold a command forever)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        until = time.monotonic() + self.seconds
        response = super().handle_request(request)
        response.stream = _Until(response.stream, until, request)
        return response


class _Until(httpx.SyncByteStream):
    def __init__(self, stream, until: float, request: httpx.Request) -> None:
        self.stream, self.until, self.request = stream, until, request

    def __iter__(self):
        for chunk in self.stream:
            if time.monotonic() > self.until:
                raise httpx.ReadTimeout("the whole response took longer than the timeout", request=self.request)
            yield chunk

    def close(self) -> None:
        self.stream.close()
