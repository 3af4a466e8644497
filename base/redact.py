"""Credentials never reach a message, a sidecar or a report: redaction by value, not only by key name.

`redact(text)` masks URL userinfo (`http://user:pw@host`), secret query parameters (`?token=`,
`access_token`, `api_key`, ...), `Bearer`/`Token`/`Basic` authorisation values and Hugging Face
`hf_...` tokens. `redact_record(obj)` also drops mapping keys that name a credential, however
deeply nested (sidecars hold configs).
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Any, Iterator, Mapping

MASK = "***"
SECRET_KEYS = ("token", "api_key", "apikey", "api-key", "password", "passwd", "secret", "authorization",
               "credential", "private_key", "cookie")
_QUERY_KEYS = (r"access_token|refresh_token|id_token|token|api_key|apikey|api-key|key|secret|client_secret|"
               r"password|passwd|pwd|auth|sig|signature|private_token|x-amz-signature|x-amz-credential")
_PATTERNS = (
    # scheme://user:password@host -> scheme://***@host (the user name can identify an account too)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@"), rf"\1{MASK}@"),
    # ?token=...&api_key=... -> ?token=***
    (re.compile(rf"(?i)([?&;](?:{_QUERY_KEYS})=)[^&#\s'\"]+"), rf"\1{MASK}"),
    # Authorization values: Bearer / Token / Basic followed by something token-like (has a digit, or long)
    (re.compile(r"(?i)\b(bearer|token|basic)(\s+|=|:\s*)(?=[A-Za-z0-9._~+/=\-]*\d|[A-Za-z0-9._~+/=\-]{20})"
                r"[A-Za-z0-9._~+/=\-]{8,}"), rf"\1\2{MASK}"),
    # Hugging Face user access tokens
    (re.compile(r"\bhf_[A-Za-z0-9]{8,}\b"), f"hf_{MASK}"),
)


_KNOWN: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar("bbsard_known_secrets", default=None)


def remember_secret(value: str | None) -> None:
    """Inside a `secrets_scope` (a command run), mask `value` (a key read from the environment or a
    config) in every later `redact`, whatever its shape: a server may quote the key it rejects."""
    known = _KNOWN.get()
    if value and len(value) >= 4 and known is not None:
        _KNOWN.set(known | {value})


@contextlib.contextmanager
def secrets_scope() -> Iterator[None]:
    """The secrets remembered inside are masked by `redact` until the scope ends (one command's keys)."""
    token = _KNOWN.set(frozenset())
    try:
        yield
    finally:
        _KNOWN.reset(token)


def redact(text: str) -> str:
    """`text` with every known secret and every credential-looking value masked."""
    for secret in sorted(_KNOWN.get() or ()):
        text = without_secret(text, secret)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_record(obj: Any) -> Any:
    """A JSON-like value with credential-named keys dropped and credential-looking strings masked."""
    if isinstance(obj, Mapping):
        return {k: redact_record(v) for k, v in obj.items() if not is_secret_key(k)}
    if isinstance(obj, (list, tuple)):
        return [redact_record(v) for v in obj]
    if isinstance(obj, str):
        return redact(obj)
    return obj


def is_secret_key(key: object) -> bool:
    name = str(key).lower()
    return any(marker in name for marker in SECRET_KEYS)


def without_secret(text: str, secret: str | None, fragment: int = 6) -> str:
    """`text` with `secret` masked, and every piece of it at least `fragment` characters long (a body
    the server cut mid-key, a key quoted in parts): mask before cutting a text, never after."""
    if not secret:
        return text
    m = min(fragment, len(secret))
    grams = sorted({secret[i:i + m] for i in range(len(secret) - m + 1)})
    starts = [hit.start() for hit in re.finditer(f"(?=(?:{'|'.join(map(re.escape, grams))}))", text)]
    if not starts:
        return text
    out, end = [], 0
    for start in starts:  # merge the m-long windows into runs, each masked once
        if start > end:
            out += [text[end:start], MASK]
        elif not out:
            out.append(MASK)
        end = max(end, start + m)
    return "".join(out) + text[end:]
