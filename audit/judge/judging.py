"""Judge a list of pairs: the cache first, then one request per remaining pair on a bounded thread
pool, a malformed answer asked once more (with what was wrong and the schema), and an outcome per
pair whatever happens.

When the server turns out unusable for every pair (`JudgeUnavailable`) the pairs not yet asked fail
with that reason and no further request is sent. When it refuses the way `response_format` is sent,
every later request uses the next way (prompt.FORMATS).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

from . import prompt
from .cache import BadEntry, JudgeCache, cache_endpoint, cache_key
from .client import ChatClient, JudgeUnavailable, Malformed, RequestFailed, ResponseFormatRefused
from .parse import JudgedError, parse_answer


@dataclass
class Outcome:
    """One pair's result: status judged | cached | failed; `notes` are one line each (dropped spans,
    a retried answer); `reason` says why a failed pair failed."""

    status: str
    errors: list[JudgedError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str | None = None
    dropped: int = 0
    """Errors dropped because their span is not in the text."""


class Judge:
    """Asks `client` about (source, target) pairs of one language pair, through `cache`."""

    def __init__(self, client: ChatClient, cache: JudgeCache, concurrency: int = 4,
                 domain: prompt.Domain = prompt.Domain()) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.client, self.cache, self.concurrency, self.domain = client, cache, concurrency, domain
        self.form = prompt.FORMATS[0]
        """How the schema is sent (prompt.FORMATS); the next one once the server refuses it."""
        self._lock = threading.Lock()
        self._unavailable: str | None = None

    @property
    def unavailable(self) -> str | None:
        """Why the server can judge no pair (set by the first such error), else None."""
        return self._unavailable

    @property
    def model(self) -> str:
        return self.client.model

    def key(self, source: str, target: str, pair: tuple[str, str]) -> str:
        return cache_key(cache_endpoint(str(self.client.url)), self.model, self.domain.version(), pair, source, target)

    def request(self, source: str, target: str, pair: tuple[str, str]) -> dict:
        return prompt.body(self.model, source, target, pair, form=self.form, domain=self.domain)

    def cached(self, source: str, target: str, pair: tuple[str, str]) -> Outcome | None:
        return self._lookup(source, target, pair)[0]

    def _lookup(self, source: str, target: str, pair: tuple[str, str]) -> tuple[Outcome | None, str | None]:
        """(the cached Outcome or None, a note when the stored entry was unusable and is asked again)."""
        try:
            answer = self.cache.get(self.key(source, target, pair))
        except BadEntry as exc:
            return None, f"its cached answer cannot be read ({exc}); asked again"
        if answer is None:
            return None, None
        try:
            errors, notes = parse_answer(self.client.scrub_answer(answer), source, target)
        except Malformed as exc:  # stored by an older parser or version: ask again
            return None, f"its cached answer is unusable ({exc}); asked again"
        return Outcome("cached", errors, notes, dropped=len(notes)), None

    def judge(self, texts: Sequence[tuple[str, str]], pair: tuple[str, str],
              advance: Callable[[int, int], None] | None = None) -> list[Outcome]:
        """One Outcome per (source, target), in order; `advance(asked, to_ask)` after each request."""
        looked = [self._lookup(s, t, pair) for s, t in texts]
        outcomes: list[Outcome | None] = [o for o, _ in looked]
        todo = [i for i, o in enumerate(outcomes) if o is None]
        done = [0]

        def one(i: int) -> None:
            outcomes[i] = self._ask(*texts[i], pair)
            if looked[i][1]:
                outcomes[i].notes.insert(0, looked[i][1])
            with self._lock:
                done[0] += 1
                if advance:
                    advance(done[0], len(todo))

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(one, todo))
        return outcomes  # type: ignore[return-value]

    def _ask(self, source: str, target: str, pair: tuple[str, str]) -> Outcome:
        notes: list[str] = []
        bad: tuple[str | None, str] | None = None  # the malformed answer and its problem, once
        while True:
            if self._unavailable:
                return Outcome("failed", notes=notes, reason=self._unavailable)
            form, answer = self.form, None
            request = prompt.body(self.model, source, target, pair, form=form, domain=self.domain)
            try:
                answer = self.client.complete(prompt.repair(request, *bad) if bad else request)
                errors, dropped = parse_answer(answer, source, target)
            except ResponseFormatRefused as exc:
                with self._lock:
                    if form == prompt.FORMATS[-1]:  # no response_format was sent: nothing else to try
                        return Outcome("failed", notes=notes, reason=f"judge failed: the server refused the request ({exc})")
                    if self.form == form:
                        self.form = prompt.FORMATS[prompt.FORMATS.index(form) + 1]
                        notes.append(f"the server refused response_format {form}; {self.form} from now on")
                continue
            except Malformed as exc:
                if bad:
                    return Outcome("failed", notes=notes, reason=f"judge failed: {exc} (asked twice)")
                notes.append(f"{exc}; asked again")
                bad = (answer, str(exc))
                continue
            except RequestFailed as exc:
                return Outcome("failed", notes=notes, reason=f"judge failed: {exc}")
            except JudgeUnavailable as exc:
                with self._lock:
                    self._unavailable = self._unavailable or str(exc)
                return Outcome("failed", notes=notes, reason=self._unavailable)
            self.cache.put(self.key(source, target, pair), self.model, answer)
            return Outcome("judged", errors, notes + dropped, dropped=len(dropped))
