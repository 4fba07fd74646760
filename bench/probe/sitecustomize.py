"""A memory probe inside a benchmarked `rsep serve` (bench/bench_soak.py --probe FILE): where RSS goes.

Python imports `sitecustomize` at start-up from its path; bench_soak.py puts this folder on the
server's PYTHONPATH with RSEP_PROBE_OUT set, and nothing else loads it (it is no part of rsep). In
the process whose arguments include `serve`, a daemon thread appends to RSEP_PROBE_OUT every
RSEP_PROBE_EVERY seconds (default 60):

- glibc's heap (`mallinfo2`): `used` is what native code and Python's large objects hold now,
  `free` what the arenas keep (fragmentation: `malloc_trim` gives some back);
- Python's small-object allocator (`sys._debugmallocstats`): its 1 MiB arenas and the bytes
  in use;
- the number of Python objects, the types whose count grew since the first sample after
  warm-up, and the largest containers (over 3,000 items) and `functools.lru_cache`s (over 500),
  those at the top level of rsep's modules included (`gc.freeze()` hides them from
  `gc.get_objects`): a structure that grows for ever shows there.

So a creep in RSS splits into Python's objects, native allocations (Oxigraph, RocksDB) and the
allocators' free memory. Each sample walks every object (`gc.get_objects`): a few hundred ms.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import gc
import os
import sys
import tempfile
import threading
import time

WARM_S = 90.0
"""Seconds after which the first sample is the baseline of the growth columns."""


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]  # fmt: skip


def _heap() -> str:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return "glibc heap: unavailable"
    mb = 2**20
    return (f"glibc heap: arenas {info.arena / mb:.0f} MB, used {info.uordblks / mb:.0f} MB, "
            f"free {info.fordblks / mb:.0f} MB, mmapped {info.hblkhd / mb:.0f} MB")  # fmt: skip


def _pymalloc() -> str:
    """`sys._debugmallocstats` writes to the C stderr: read back through a temporary file."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    wanted = ("# arenas allocated current", "# bytes in allocated blocks", "# bytes in available blocks")
    lines = [" ".join(line.split()) for line in text.splitlines() if line.startswith(wanted)]
    return "pymalloc: " + "; ".join(lines)


def _status() -> str:
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return " ".join(
        f"{name} {fields[name].strip()}" for name in ("VmRSS", "RssAnon", "Threads") if name in fields
    )


def _module_level() -> list[object]:
    """What rsep's modules hold at their top level (caches among them): `rsep serve` moves what
    start-up built out of the collector's sight (`gc.freeze()`, rsep/endpoint/collector.py), and
    `gc.get_objects` does not list it."""
    return [value for name, module in list(sys.modules.items()) if name.startswith("rsep.") and module
            for value in list(vars(module).values())]  # fmt: skip


def _objects() -> tuple[collections.Counter[str], list[str], list[str]]:
    counts: collections.Counter[str] = collections.Counter()
    caches: dict[int, tuple[int, str]] = {}
    big: dict[int, tuple[int, str]] = {}
    tracked = gc.get_objects()
    for obj in tracked:
        counts[type(obj).__name__] += 1
    for obj in [*tracked, *_module_level()]:
        kind = type(obj)
        if isinstance(obj, functools._lru_cache_wrapper):
            size = obj.cache_info().currsize
            if size > 500:
                caches[id(obj)] = (size, f"{obj.__module__}.{obj.__qualname__}")
        elif kind in (dict, list, set, collections.deque) and len(obj) > 3000:
            first = next(iter(obj), None)
            text = f"{kind.__name__}[{len(obj)}] of {type(first).__name__} {repr(first)[:50]}"
            big[id(obj)] = (len(obj), text)
    largest = sorted(caches.values(), reverse=True)[:10]
    return (
        counts,
        [f"{name}={size}" for size, name in largest],
        [t for _, t in sorted(big.values(), reverse=True)[:12]],
    )


def _run(path: str, every: float) -> None:
    began = time.monotonic()
    baseline: collections.Counter[str] | None = None
    with open(path, "a") as out:
        while True:
            time.sleep(every)
            elapsed = time.monotonic() - began
            counts, caches, big = _objects()
            grown = ""
            if baseline is None and elapsed >= WARM_S:
                baseline = counts
            elif baseline is not None:
                grown = ", ".join(f"{name} +{n}" for name, n in (counts - baseline).most_common(12))
            lines = [f"== {elapsed:.0f} s: {_status()}", _heap(), _pymalloc(),
                     f"objects {sum(counts.values()):,}; grown since warm-up: {grown or '-'}",
                     f"lru caches: {', '.join(caches) or '-'}",
                     f"containers: {'; '.join(big) or '-'}"]  # fmt: skip
            out.write("\n  ".join(lines) + "\n")
            out.flush()


def _start() -> None:
    path = os.environ.get("RSEP_PROBE_OUT")
    if path and "serve" in sys.argv:
        every = float(os.environ.get("RSEP_PROBE_EVERY", "60"))
        threading.Thread(target=_run, args=(path, every), name="rsep-memory-probe", daemon=True).start()


_start()
