"""How many page runs this server is running now, every session's (a visitor's, and the start's own warm-up
visits: ``app/serve.py``). The warm-up visits one page at a time and waits between visits while a visitor's run
goes on (:func:`wait_idle`), so that a speaker's first key after a restart never queues behind the pages the
server prepares for later.

>>> with running():
...     busy()
True
>>> busy(), wait_idle(quiet=0.0)
(False, 0.0)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

__all__ = ["busy", "running", "wait_idle"]

_lock = threading.Lock()
_runs = 0


@contextlib.contextmanager
def running() -> Iterator[None]:
    """Count a page's run while it goes on (however it ends: a rerun or a stop raises through here)."""
    global _runs
    with _lock:
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _runs -= 1


def busy() -> bool:
    """Whether a page's run is going on now."""
    return _runs > 0


def wait_idle(quiet: float = 0.5, most: float = 120.0, poll: float = 0.05) -> float:
    """Wait until no page has run for ``quiet`` seconds (at most ``most`` seconds in all); the seconds waited (to
    a tenth)."""
    start = last = time.monotonic()
    while time.monotonic() - start < most:
        now = time.monotonic()
        if busy():
            last = now
        elif now - last >= quiet:
            break
        time.sleep(poll)
    return round(time.monotonic() - start, 1)
