"""Join groups (`JoinAtom`): EP-SPARQL's BGP and Join (§4.2) over triple occurrences, in
any temporal order.

A join group keeps the occurrences of its GPMs per partition key (`NfaState.joins`)
and computes, at each timestamp, the joins completed there with a delta join: every
combination of remembered occurrences with at least one of this timestamp's, the
interval the hull of theirs. Remembered occurrences are looked up by the values of
the variables they share with the mapping joined so far (a hash join,
`OccurrenceIndexes`), so a timestamp costs what it joins, not what is remembered.
`plugin/nfa/memory.py` says when occurrences may be forgotten.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence

from rsep.plugin.nfa.automaton import JoinAtom
from rsep.plugin.nfa.list_indexes import ListIndexes

Occurrence = tuple[int, int, dict[str, str], float, float]
"""(operand, event id, solution mapping, start, end) of one GPM row a join group remembers."""
Joined = tuple[tuple[Occurrence, ...], dict[str, str], float]
"""One join: the occurrences taken (one per operand), the joined mapping, the start of the hull."""
Fresh = Sequence[Sequence[tuple[int, dict[str, str], float]]]
"""Per operand, this timestamp's rows: (event id, mapping, start time)."""

JOIN_INDEX_FROM = 128
"""Below this many remembered occurrences, a join group's joins scan them (split per operand)."""


def fresh_occurrences(rows: Fresh, time: float) -> list[list[Occurrence]]:
    """This timestamp's rows of each operand as occurrences (ending at `time`)."""
    return [
        [(k, event, mapping, start, time) for event, mapping, start in found] for k, found in enumerate(rows)
    ]


def new_joins(
    atom: JoinAtom,
    memory: list[Occurrence],
    fresh: list[list[Occurrence]],
    indexes: OccurrenceIndexes,
    horizon: float | None = None,
) -> Iterator[Joined]:
    """The joins of `atom`'s operands with at least one of this timestamp's occurrences
    (`fresh`), each once: seeded by the first operand k that takes a fresh occurrence,
    operands before k take remembered ones only, those after k either. Each further
    operand (in `atom.orders[k]`) meets only the remembered occurrences that agree with
    the mapping so far on the variables they bind (a hash join, `OccurrenceIndexes`),
    and that start at or after `horizon` (the window's: `expire` drops the others only
    now and then, so that the index is not rebuilt at every timestamp).
    Yields (occurrences taken, mapping, start of the hull); every join ends now."""
    joins = _Joins(memory, fresh, indexes, horizon)
    seen: set[tuple[float, frozenset[tuple[str, str]]]] = set()
    for seed, rows in enumerate(fresh):
        order = atom.orders[seed]
        for row in rows:
            for taken, mapping, start in joins.extend(order, seed, (row,), row[2], row[3]):
                key = (start, frozenset(mapping.items()))
                if key not in seen:  # the same solution from other occurrences: reported once anyway
                    seen.add(key)
                    yield taken, mapping, start


def joined_events(taken: Sequence[Occurrence], time: float) -> tuple[int, ...]:
    """A join's events, those of earlier timestamps first: a match's last event is one of
    its last timestamp's."""
    return tuple(dict.fromkeys(o[1] for o in sorted(taken, key=lambda o: (o[4] == time, o[1]))))


def expire(memory: list[Occurrence], horizon: float) -> tuple[list[Occurrence], bool]:
    """`memory` without the occurrences that start before `horizon`, and whether some may be
    left. A memory small enough to be scanned (`JOIN_INDEX_FROM`) is filtered at once. A larger
    one is not scanned at every timestamp (that scan was half of a server's processor time with
    a few windowed EP-SPARQL queries, bench/README.md): the list holds occurrences in the order
    of their ends (each timestamp appends its own, and pruning keeps the order), so those that
    ended before `horizon`, and so started before it, are a prefix that a binary search counts;
    once they are a quarter of the list it is rebuilt, and meanwhile lookups skip whatever
    started before `horizon` (`new_joins`). The runtime's `forget`, at each step's end, drops
    the rest (`plugin/nfa/memory.py`)."""
    if len(memory) < JOIN_INDEX_FROM:
        kept = [occurrence for occurrence in memory if occurrence[3] >= horizon]
        return (kept if len(kept) < len(memory) else memory), False
    ended = bisect_left(memory, horizon, key=_end)
    if 4 * ended >= len(memory):
        return [occurrence for occurrence in memory if occurrence[3] >= horizon], False
    return memory, True


def _end(occurrence: Occurrence) -> float:
    return occurrence[4]


def remember_rows(atom: JoinAtom, joins: dict[int, list[Occurrence]], fresh: list[list[Occurrence]]) -> None:
    rows = [occurrence for found in fresh for occurrence in found]
    if rows:
        joins.setdefault(atom.memory, []).extend(rows)


class _Joins:
    """One timestamp's joins of one join group: its remembered occurrences (split per
    operand when few, looked up by their bindings otherwise) and this timestamp's."""

    __slots__ = ("fresh", "horizon", "indexes", "memory", "split")

    def __init__(
        self,
        memory: list[Occurrence],
        fresh: list[list[Occurrence]],
        indexes: OccurrenceIndexes,
        horizon: float | None,
    ) -> None:
        self.memory = memory
        self.fresh = fresh
        self.indexes = indexes
        self.horizon = horizon
        self.split: list[list[Occurrence]] | None = None
        if len(memory) < JOIN_INDEX_FROM:
            self.split = [[] for _ in fresh]
            for occurrence in memory:
                self.split[occurrence[0]].append(occurrence)

    def extend(
        self,
        order: tuple[int, ...],
        seed: int,
        taken: tuple[Occurrence, ...],
        mapping: dict[str, str],
        start: float,
    ) -> Iterator[Joined]:
        """The joins of `taken` (mapping, hull start) with one occurrence of each operand
        still to take, in `order`."""
        if len(taken) == len(order):
            yield taken, mapping, start
            return
        k = order[len(taken)]
        for occurrence in self._candidates(k, k > seed, mapping):
            joined = _compatible_union(mapping, occurrence[2])
            if joined is not None:
                yield from self.extend(order, seed, (*taken, occurrence), joined, min(start, occurrence[3]))

    def _candidates(self, operand: int, with_fresh: bool, mapping: Mapping[str, str]) -> Sequence[Occurrence]:
        if self.split is not None:
            pool: Sequence[Occurrence] = self.split[operand]
        else:
            pool = self.indexes.meeting(self.memory, operand, mapping)
        if self.horizon is not None:
            pool = [occurrence for occurrence in pool if occurrence[3] >= self.horizon]
        return [*pool, *self.fresh[operand]] if with_fresh and self.fresh[operand] else pool


def _compatible_union(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str] | None:
    for name, value in b.items():
        bound = a.get(name)
        if bound is not None and bound != value:
            return None
    return {**a, **b}


class _OperandIndex:
    """The remembered occurrences of one operand of one join group, bucketed by the values
    of the variables a lookup binds (per set of such names, built on first use). Kept up
    with what is appended to the memory list (the runtime only appends to one, or
    replaces it)."""

    __slots__ = ("buckets", "count", "entries", "names", "operand", "rows")

    def __init__(self, entries: list[Occurrence], operand: int) -> None:
        self.entries = entries
        self.operand = operand
        self.count = 0
        self.rows: list[Occurrence] = []
        self.names: tuple[str, ...] = ()
        """The variables of the operand's first occurrence: what lookups may key on."""
        self.buckets: dict[
            tuple[str, ...], tuple[dict[tuple[str, ...], list[Occurrence]], list[Occurrence]]
        ] = {}
        """Per key names: the occurrences by their values, and those lacking one of the names."""

    def catch_up(self) -> None:
        added = [o for o in self.entries[self.count :] if o[0] == self.operand]
        self.count = len(self.entries)
        if not added:
            return
        if not self.rows:
            self.names = tuple(sorted(added[0][2]))
        self.rows.extend(added)
        for names, (buckets, loose) in self.buckets.items():
            _bucket(names, added, buckets, loose)

    def meeting(self, mapping: Mapping[str, str]) -> Sequence[Occurrence]:
        names = tuple(name for name in self.names if name in mapping)
        if not names:
            return self.rows
        found = self.buckets.get(names)
        if found is None:
            found = self.buckets[names] = ({}, [])
            _bucket(names, self.rows, *found)
        buckets, loose = found
        hit = buckets.get(tuple(mapping[name] for name in names), [])
        return [*hit, *loose] if loose else hit


def _bucket(
    names: tuple[str, ...],
    rows: Sequence[Occurrence],
    buckets: dict[tuple[str, ...], list[Occurrence]],
    loose: list[Occurrence],
) -> None:
    for occurrence in rows:
        mapping = occurrence[2]
        if all(name in mapping for name in names):
            buckets.setdefault(tuple(mapping[name] for name in names), []).append(occurrence)
        else:
            loose.append(occurrence)


class OccurrenceIndexes:
    """An index per join memory list and operand in use (`ListIndexes`: lists are replaced
    when pruned, consumed or copied, the replaced ones' indexes swept out, and an evicted
    index is rebuilt on demand)."""

    def __init__(self, limit: int = 4096) -> None:
        self._found: ListIndexes[_OperandIndex] = ListIndexes(limit)

    def __len__(self) -> int:
        return len(self._found)

    def meeting(
        self, entries: list[Occurrence], operand: int, mapping: Mapping[str, str]
    ) -> Sequence[Occurrence]:
        """The remembered occurrences of `operand` that may be compatible with `mapping`."""
        index = self._found.get(entries, operand)
        if index is None:
            index = self._found.put(entries, operand, _OperandIndex(entries, operand))
        index.catch_up()
        return index.meeting(mapping)
