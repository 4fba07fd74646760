"""CPython's cyclic garbage collector paused while a parser builds the tree of a large text.

lark allocates several tracked objects per token (tokens, trees, child lists, metas), all alive
until the tree is transformed. At CPython's default thresholds a young collection starts every 700
such allocations and, now and then, a full one walks everything alive: for an 800 KB query in a
bare process (`rsep run`, bench/bench_parse.py) that is about a third of the parse. A parse makes
no cycles worth collecting, so the collector waits until it ends. (`rsep serve` collects less
often, `rsep.endpoint.collector`, and a forked compile child not at all: less to gain there.)

The pause is process-wide (there is one collector), so it is bounded: it is counted, and
overlapping parses in a threaded server end it only when the last one finishes, but once it has
lasted `MAX_PAUSE_SECONDS` the next parse to start collects the young generations first, so that
clients sending large texts back to back cannot keep other threads' garbage from being collected.
It is taken only for texts large enough to gain from it, and a forked child starts unpaused.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PAUSE_SIZE = 32_768
"""Texts of fewer characters are parsed with the collector as it is (too few objects to matter)."""
MAX_PAUSE_SECONDS = 2.0

_lock = threading.Lock()
_pauses = 0
_resume = False
_since = 0.0


@contextmanager
def collector_paused(size: int) -> Iterator[None]:
    """The collector paused while the block runs, if `size` (the text's length) is at least
    `PAUSE_SIZE` and nothing else disabled it."""
    if size < PAUSE_SIZE:
        yield
        return
    global _pauses, _resume, _since
    with _lock:
        if _pauses == 0:
            _resume, _since = gc.isenabled(), time.monotonic()
            gc.disable()
        elif _resume and time.monotonic() - _since > MAX_PAUSE_SECONDS:
            gc.collect(1)
            _since = time.monotonic()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def pausing() -> bool:
    """Whether some parse holds the collector paused (for tests)."""
    return _pauses > 0


def _reset_in_child() -> None:
    """A forked child has none of the parent's other threads: their pauses, and a lock one of
    them held at the fork, are not its own."""
    global _lock, _pauses, _resume
    if _pauses > 0 and _resume:
        gc.enable()
    _lock, _pauses, _resume = threading.Lock(), 0, False


os.register_at_fork(after_in_child=_reset_in_child)
