"""Connection to a Label Studio server: where, with which key, and what a failure looks like.

The key comes from `LABEL_STUDIO_API_KEY` or a TOML config file, never from a command-line flag
(shell history) and never into a message: every failure becomes one `LabelStudioError` line
built from the status code and the server's `detail`, not from the SDK's exception text (which
carries the response headers, cookies included). The URL is only ever shown as `shown_url`, with
any credentials in it (userinfo, token query parameters) masked. Legacy tokens (`Authorization: Token`) and
personal access tokens (JWT refresh tokens, exchanged for access tokens by the SDK) both work.
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

from bbsard_audit.config import check_against, read_toml
from bbsard_audit.errors import InputError
from bbsard_audit.redact import redact

DEFAULT_CONFIG = Path("~/.config/bbsard-audit/config.toml")
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}


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
        raise InputError(f"label_studio must be a table ([label_studio]), not {section!r}", file=str(path))
    check_against(section, {"url": "", "api_key": ""}, file=str(path), prefix="label_studio.")
    return dict(section)


@dataclass
class Connection:
    url: str = field(repr=False)  # may carry credentials: shown only as `shown_url`
    api_key: str = field(repr=False)
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5

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
        return cls(url.rstrip("/"), key, **kwargs)

    def client(self) -> LabelStudio:
        # max_retries=0: retries happen here, where we know which calls are safe to repeat.
        return self.call("connect", lambda: LabelStudio(base_url=self.url, api_key=self.api_key,
                                                         timeout=self.timeout, max_retries=0))

    def call(self, what: str, fn: Callable[[], Any], *, retry: bool = True) -> Any:
        """Run `fn`; retry transient failures with exponential backoff; fail as one line."""
        attempt = 0
        while True:
            try:
                return fn()
            except (ApiError, httpx.HTTPError) as exc:
                error = self._describe(what, exc)
            if not (retry and error.transient and attempt < self.retries):
                raise error
            time.sleep(self.backoff * 2**attempt)
            attempt += 1

    def _describe(self, what: str, exc: Exception) -> LabelStudioError:
        where = f"Label Studio at {self.shown_url}"
        if isinstance(exc, httpx.TimeoutException):
            return LabelStudioError(f"{what}: {where} timed out after {self.timeout:.0f} s", transient=True)
        if isinstance(exc, httpx.HTTPError):
            return LabelStudioError(f"{what}: cannot reach {where} ({type(exc).__name__})", transient=True)
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = str(body.get("detail") or body.get("validation_errors") or "")[:200]
        if status in (401, 403):
            return LabelStudioError(f"{what}: {where} rejected the API key (HTTP {status})"
                                    + (f": {detail}" if detail else ""))
        return LabelStudioError(f"{what}: {where} answered HTTP {status}" + (f": {detail}" if detail else ""),
                                transient=status in TRANSIENT_STATUS)
