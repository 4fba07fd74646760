"""A cache of indexes over lists the runtime replaces: join memories (`joins.OccurrenceIndexes`)
and anti-joins' remembered solutions (`memory.RememberedIndexes`).

An index is found by its list's identity. The runtime replaces a list when it prunes, compacts or
copies it, and then nothing but the cache refers to the old list: its index is dead, yet it holds
the list and its buckets. Keeping dead indexes until a count limit (4,096) made the in-process
engine creep by tens of MB a minute under a steady stream (bench/bench_soak.py, issue 15): each
one held a whole window's occurrences. So the cache sweeps out the indexes whose list only the
cache still holds, whenever it has doubled since the last sweep (amortised O(1) a lookup). A
list's referrers are counted with `sys.getrefcount` (CPython's reference count, which is exact).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Hashable
from typing import Any, Generic, Protocol, TypeVar


class ListIndex(Protocol):
    entries: list[Any]
    """The list the index is built over (the cache's key is its identity)."""


I = TypeVar("I", bound=ListIndex)  # noqa: E741

SWEEP_FROM = 64
"""Below this many indexes, no sweep."""


class ListIndexes(Generic[I]):
    """Indexes by (identity of their list, a key), live ones only (see the module)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        """A hard bound on live indexes too: past it the cache starts afresh (rebuilt on demand)."""
        self._found: dict[tuple[int, Hashable], I] = {}
        self._sweep_at = SWEEP_FROM

    def __len__(self) -> int:
        return len(self._found)

    def get(self, entries: list[Any], key: Hashable) -> I | None:
        index = self._found.get((id(entries), key))
        return index if index is not None and index.entries is entries else None

    def put(self, entries: list[Any], key: Hashable, index: I) -> I:
        if len(self._found) >= self._sweep_at:
            self._sweep()
        if len(self._found) >= self.limit:
            self._found.clear()
        self._found[(id(entries), key)] = index
        return index

    def _sweep(self) -> None:
        holders = Counter(id(index.entries) for index in self._found.values())
        self._found = {key: index for key, index in self._found.items() if _referred(index, holders)}
        self._sweep_at = max(SWEEP_FROM, 2 * len(self._found))


def _referred(index: ListIndex, holders: Counter[int]) -> bool:
    """Whether something besides the cache's indexes refers to the index's list: its count less
    the indexes' attributes and `getrefcount`'s own argument."""
    entries = index.entries
    return sys.getrefcount(entries) - 2 - holders[id(entries)] > 0
