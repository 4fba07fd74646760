"""Handing the heap's free memory back to the system (glibc's `malloc_trim`), now and then.

The in-process engine allocates and frees a great deal per batch (parsed events, per-batch
Oxigraph stores, window contents). glibc keeps what is freed in its arenas, fragmented, and
returns little of it on its own: in the soak (bench/bench_soak.py, issue 15) the server's RSS crept
by a few MB a minute and did not come down when idle, though Python's objects did not grow; after
`malloc_trim(0)` it stood where it had started. So the engine trims at most once a minute, after a
cycle in which it caught up, idle cycles included (memory comes back once the load stops). No-op
where the C library has no `malloc_trim` (musl, macOS).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

TRIM_INTERVAL_S = 60.0


def _malloc_trim() -> Callable[[], bool] | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: bool(trim(0))


class HeapTrim:
    """`maybe()` trims when `interval` seconds have passed since the last trim."""

    def __init__(
        self,
        interval: float = TRIM_INTERVAL_S,
        trim: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.trim = trim if trim is not None else _malloc_trim()
        self.clock = clock
        self._last = clock()
        self.count = 0

    def maybe(self) -> bool:
        """Whether it trimmed now."""
        now = self.clock()
        if self.trim is None or now - self._last < self.interval:
            return False
        self._last = now
        self.trim()
        self.count += 1
        return True
