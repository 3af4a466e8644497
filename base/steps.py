"""A long step of a set-up command, said as it goes: its name when it starts, a line every `every`
seconds while it runs (a pip install or Label Studio's migrations print nothing for minutes), and its
time when it is done. Nothing more is said on failure: the caller's error line follows."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Callable, Iterator

Say = Callable[[str], None]


def to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def step(say: Say | None, what: str, every: float = 30.0) -> Iterator[None]:
    if say is None:
        yield
        return
    started = time.monotonic()
    say(f"{what} ...")
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            say(f"  ... {what}: {time.monotonic() - started:.0f} s so far")

    beating = threading.Thread(target=beat, name="step-heartbeat", daemon=True)
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()
    say(f"{what}: done in {time.monotonic() - started:.0f} s")
