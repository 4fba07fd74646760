"""`expire` (plugin/nfa/joins.py): a join group's memory under a window, checked at every
timestamp. It never drops an occurrence that may still join, says when some that may not are
left (lookups then skip them), rebuilds the list once those are a quarter of it, and does not
read a large memory through to find that out (the scan was half a server's processor time)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rsep.plugin.nfa.joins import JOIN_INDEX_FROM, Occurrence, expire


@st.composite
def memories(draw: Any) -> tuple[list[Occurrence], float]:
    """Occurrences in the order of their ends (how the runtime appends them), each starting at or
    before its end, and a horizon."""
    ends = sorted(draw(st.lists(st.integers(0, 1_000), min_size=0, max_size=400)))
    memory = [
        (draw(st.integers(0, 1)), i, {"x": str(i)}, float(end - draw(st.integers(0, 50))), float(end))
        for i, end in enumerate(ends)
    ]
    return memory, float(draw(st.integers(-10, 1_100)))


@given(memories())
def test_live_occurrences_are_kept_and_stale_ones_flagged(case: tuple[list[Occurrence], float]) -> None:
    memory, horizon = case
    kept, stale = expire(memory, horizon)
    live = [o for o in memory if o[3] >= horizon]
    assert [o for o in kept if o[3] >= horizon] == live  # none lost, order kept
    assert all(o in memory for o in kept)
    if not stale:
        assert kept == live
    if len(memory) < JOIN_INDEX_FROM:
        assert (kept, stale) == (live, False)
    if 4 * sum(o[4] < horizon for o in memory) >= len(memory) > 0:
        assert (kept, stale) == (live, False)  # rebuilt once a quarter has ended


class _Counting(list):  # type: ignore[type-arg]
    """A memory that counts how many of its items are read."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        _Counting.reads += 1
        return super().__getitem__(index)

    def __iter__(self) -> Any:
        for item in super().__iter__():
            _Counting.reads += 1
            yield item


def test_a_large_memory_is_not_read_through_at_every_timestamp() -> None:
    memory = _Counting((0, i, {"x": str(i)}, float(i), float(i)) for i in range(10_000))
    _Counting.reads = 0
    kept, stale = expire(memory, 100.0)  # 1% has ended: not worth a rebuild yet
    assert kept is memory and stale
    assert _Counting.reads < 50
    kept, stale = expire(memory, 3_000.0)
    assert kept == [o for o in memory if o[3] >= 3_000.0] and not stale
