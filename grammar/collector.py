"""CPython's cyclic garbage collector paused while a parser builds the tree of a large text.

lark allocates several tracked objects per token (tokens, trees, child lists, metas), all alive
until the tree is transformed. CPython 3.11's generational collector starts a young collection
every 700 such allocations and, now and then, a full one that walks everything alive: for an
800 KB query that is about a third of the parse (bench/bench_parse.py). A parse makes no cycles
worth collecting, so the collector waits until it ends.

The pause is process-wide (there is one collector): it is counted, so overlapping parses in a
threaded server end it only when the last one finishes, and it is taken only for texts large
enough to gain from it. Garbage made meanwhile by other threads is collected right after.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

PAUSE_SIZE = 32_768
"""Texts of fewer characters are parsed with the collector as it is (too few objects to matter)."""

_lock = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def collector_paused(size: int) -> Iterator[None]:
    """The collector paused while the block runs, if `size` (the text's length) is at least
    `PAUSE_SIZE` and nothing else disabled it."""
    if size < PAUSE_SIZE:
        yield
        return
    global _pauses, _resume
    with _lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
