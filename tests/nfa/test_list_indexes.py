"""The caches of indexes over join memories and remembered solutions keep live indexes only: a list
the runtime replaced (pruned, compacted, copied) takes its index with it (the soak's creep, issue 15)."""

from __future__ import annotations

from rsep.plugin.nfa.joins import Occurrence, OccurrenceIndexes
from rsep.plugin.nfa.memory import RememberedIndexes


def _memory(start: int, size: int = 200) -> list[Occurrence]:
    return [(0, n, {"k": f"k{n % 7}"}, float(n), float(n)) for n in range(start, start + size)]


def test_a_replaced_join_memory_does_not_keep_its_index():
    indexes = OccurrenceIndexes()
    memory = _memory(0)
    for step in range(1, 1001):  # each step prunes: the state's list is replaced by a new one
        found = indexes.meeting(memory, 0, {"k": "k3"})
        assert {o[1] for o in found} == {o[1] for o in memory if o[2]["k"] == "k3"}
        memory = _memory(step)
    assert len(indexes) <= 64


def test_live_join_memories_keep_their_indexes():
    indexes = OccurrenceIndexes()
    live = [_memory(n) for n in range(300)]  # 300 partition keys, each its own memory
    for memory in live:
        indexes.meeting(memory, 0, {"k": "k1"})
    assert len(indexes) == 300
    live.append([*live.pop(0)])  # one list replaced by its copy
    for memory in live:
        indexes.meeting(memory, 0, {"k": "k1"})
    assert len(indexes) <= 302
    assert len(indexes) >= 300


def test_a_replaced_history_does_not_keep_its_index():
    indexes = RememberedIndexes()
    scope = frozenset({"k"})
    history = [({"k": f"k{n % 5}"}, (float(n), float(n))) for n in range(100)]
    for _ in range(1000):
        assert len(indexes.meeting(history, scope, {"k": "k2"})) == 20
        history = [*history]  # compacted or copied: a new list
    assert len(indexes) <= 64
