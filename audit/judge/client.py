"""OpenAI-compatible chat completions over httpx: one request per call, bounded retries, and errors
that say what went wrong without ever naming the API key.

A 429 waits for its Retry-After (capped) or an exponential backoff, a 5xx or a timeout backs off
exponentially, both a bounded number of times. An unreachable server (refused, or no connection
after the last try), a refused key (401/403) or an unknown model (404) is the same for every pair,
so it is `JudgeUnavailable` and the run stops asking. The server is not trusted to behave
(base/bounded_http.py): a request that takes longer than `deadline` seconds in all, or whose body is
longer than `max_bytes`, fails for its pair without a retry. The key is masked (with any piece of it)
in every message and in every answer before it is parsed, cached or written.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable

import httpx

from bbsard_audit.base.bounded_http import BoundedClient, DeadlineExceeded, ResponseTooLarge
from bbsard_audit.base.redact import redact, remember_secret, without_secret

DEADLINE = 300.0
"""Seconds one request may take in all (connecting to the body's last byte): a 7B model writes 1,024
tokens in well under a minute."""
MAX_BYTES = 4 * 2**20
"""Bytes of one response body: an answer is at most 1,024 tokens (a few kB)."""
SHOWN = 200
"""Characters of a server's body quoted in a message."""


class JudgeUnavailable(Exception):
    """The server cannot judge any pair (unreachable, key refused, model unknown)."""


class RequestFailed(Exception):
    """This pair's request failed for good (retries exhausted, or the server refused this request)."""


class Malformed(ValueError):
    """The answer is not what was asked for (not JSON, schema broken): the caller may retry once."""


class ResponseFormatRefused(Exception):
    """The server rejects `response_format`: the caller resends with the schema in the prompt."""


@dataclass(frozen=True)
class Backoff:
    """At most `attempts` tries per request; waits base * 2**k seconds (<= cap), or Retry-After (<= retry_after_cap),
    with `sleep` (tests give one that records the waits)."""

    attempts: int = 5
    base: float = 1.0
    cap: float = 30.0
    retry_after_cap: float = 60.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        waited = _retry_after_seconds(retry_after)
        if waited is not None:
            return min(max(waited, 0.0), self.retry_after_cap)
        return min(self.base * 2 ** attempt, self.cap)


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as delay-seconds (digits only) or an HTTP date (RFC 9110); None when absent or
    unreadable (`nan`, `inf`, `-1`, `1e9`, a broken date: the exponential backoff applies)."""
    value = (value or "").strip()
    if re.fullmatch(r"[0-9]{1,12}", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
        seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    return seconds if math.isfinite(seconds) else None


def endpoint(url: str) -> httpx.URL:
    """The chat-completions URL of a base URL (`http://host:11434/v1` -> `.../v1/chat/completions`;
    a query such as `?api-version=...` is kept)."""
    parsed = httpx.URL(url)
    path = parsed.path.rstrip("/")
    return parsed if path.endswith("/chat/completions") else parsed.copy_with(path=path + "/chat/completions")


def public_url(url: str | httpx.URL) -> str:
    """scheme://host[:port]/path of a URL: no user info, no query (either could hold a credential)."""
    parsed = httpx.URL(url)
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"


class ChatClient:
    """POSTs chat-completion bodies to `url` for `model`; `complete(body) -> message content`.
    `key` goes into the Authorization header only; every message this class makes is scrubbed of it."""

    def __init__(self, url: str, model: str, key: str | None = None, *, timeout: float = 120.0,
                 backoff: Backoff = Backoff(), concurrency: int = 4, deadline: float = DEADLINE,
                 max_bytes: int = MAX_BYTES) -> None:
        self.url, self.model, self.backoff = endpoint(url), model, backoff
        self._key = key or None
        remember_secret(key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = BoundedClient(headers=headers, timeout=timeout, total=deadline, max_bytes=max_bytes,
                                   max_connections=concurrency)
        self._lock = threading.Lock()
        self.requests = 0
        """Requests sent (each retry counts)."""

    def close(self) -> None:
        self._http.close()

    def _scrub(self, text: str) -> str:
        return redact(without_secret(text, self._key))

    def _said(self, response: httpx.Response) -> str:
        """The start of a body for a message: scrubbed first, then cut (a cut key would escape the mask)."""
        text = response.text[:SHOWN + 2 * len(self._key or "")]
        return self._scrub(text)[:SHOWN].replace("\n", " ").strip()

    def scrub_answer(self, answer: str) -> str:
        """An answer without the key (a model may quote its prompt's context, a server its request)."""
        return without_secret(answer, self._key)

    def complete(self, body: dict) -> str:
        """The first choice's message content; raises the exceptions above."""
        where = public_url(self.url)
        for attempt in range(self.backoff.attempts):
            last = attempt == self.backoff.attempts - 1
            try:
                with self._lock:
                    self.requests += 1
                response = self._http.post(self.url, json=body)
            except DeadlineExceeded:
                raise RequestFailed(f"no complete answer from {where} within {self._http.total:g} s "
                                    "(BBSARD_AUDIT_JUDGE_DEADLINE); not retried") from None
            except ResponseTooLarge as exc:
                raise RequestFailed(f"the answer from {where} {exc} (BBSARD_AUDIT_JUDGE_MAX_BYTES)") from None
            except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise JudgeUnavailable(self._scrub(f"cannot reach {where} ({exc or type(exc).__name__})")) from None
            except httpx.TimeoutException as exc:
                if last and isinstance(exc, httpx.ConnectTimeout):  # a host that never answers: same for every pair
                    raise JudgeUnavailable(f"cannot reach {where} (no connection within the timeout, "
                                           f"{self.backoff.attempts} tries)") from None
                if last:
                    raise RequestFailed(f"no answer from {where} within the timeout "
                                        f"({type(exc).__name__}, {self.backoff.attempts} tries)") from None
                self.backoff.sleep(self.backoff.delay(attempt))
                continue
            except httpx.HTTPError as exc:
                raise RequestFailed(self._scrub(f"request to {where} failed ({type(exc).__name__}: {exc})")) from None
            status = response.status_code
            if status >= 400 and status not in (401, 403, 404) and "response_format" in response.text:
                # a refusal of the schema's form (llama-cpp-python says so with a 500)
                raise ResponseFormatRefused(self._said(response))
            if status == 429 or status >= 500:
                if last:
                    raise RequestFailed(f"{where} answered {status} {self.backoff.attempts} times; gave up")
                self.backoff.sleep(self.backoff.delay(attempt, response.headers.get("retry-after") if status == 429 else None))
                continue
            return self._content(response, where)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _content(self, response: httpx.Response, where: str) -> str:
        status, said = response.status_code, self._said(response)
        if status in (401, 403):
            raise JudgeUnavailable(f"{where} refused the API key ({status}); set BBSARD_AUDIT_JUDGE_API_KEY "
                                   "(or OPENAI_API_KEY) to a key it accepts")
        if status == 404:
            raise JudgeUnavailable(f"{where} answered 404: no model {self.model!r} there, or not an "
                                   f"OpenAI-compatible /chat/completions URL ({said or 'no body'})")
        if status >= 400:
            raise RequestFailed(f"{where} refused the request ({status}: {said or 'no body'})")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Malformed(f"the response is not a chat completion ({said!r})") from None
        if not isinstance(content, str):
            raise Malformed(f"the message content is {type(content).__name__}, not text")
        return self.scrub_answer(content)


def request_json(body: dict) -> str:
    """A request body as one line (the dry run prints these; they hold no key)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
