"""What the shared buffer (`plugin/nfa/shared_buffer.py`) keeps per key: the groups of the
window, not runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rsep.plugin.nfa.runs import NfaState, Run

Rows = dict[int, list[tuple[tuple[int, ...], Any, Any]]]
"""A group's rows by GPM, as the lean runtime's candidates: ((event,), mapping, shape)."""
Saved = list[tuple[int, float, dict[int, list[tuple[int, Any]]]]]
"""Groups as plain data: (rank, time, rows (event, mapping) by GPM)."""


@dataclass(frozen=True, slots=True)
class Truncated:
    """A timestamp at which a key's enumeration stopped at the limit: `reported` matches were
    reported, others were not (docs/semantics.md, "Which runtime runs an automaton, and the
    shared buffer")."""

    rank: int
    time: float
    reported: int


class Buffered:
    """One group (timestamp) of a key in the buffer: its rows (by GPM: event, mapping, shape),
    the candidates each atom makes of them (filled on demand), and which states it touches (by
    state id, the index among the states it touches: the order they are visited in)."""

    __slots__ = ("cache", "rank", "rows", "seq", "time", "touched")

    def __init__(self, seq: int, rank: int, time: float, rows: Rows, touched: dict[int, int]) -> None:
        self.seq, self.rank, self.time, self.rows, self.touched = seq, rank, time, rows, touched
        self.cache: dict[int, list[Any]] = {}


class BufferState(NfaState):
    """The per-key state of the shared buffer: the window's groups (`groups`, oldest first,
    numbered by `Buffered.seq`), per automaton state the numbers of the groups touching it
    (`touching`), the time the window was last advanced to (`clock`) and the timestamps where
    the match limit tripped (`truncated`, drained by `KeyedNfa.step`). It holds no runs: its
    `runs` view is empty (`BufferRuntime.general` rebuilds them, for the general runtime)."""

    __slots__ = ("clock", "groups", "raw", "touching", "truncated")

    def __init__(self, size: int, last_rank: int = -1) -> None:
        NfaState.__init__(self, last_rank=last_rank)
        self.groups: list[Buffered] = []
        self.touching: list[list[int]] = [[] for _ in range(size)]
        self.clock: float | None = None
        self.truncated: list[Truncated] = []
        self.raw: Saved | None = None
        """Groups read from a checkpoint, (rank, time, rows by GPM), until the runtime plans
        them into `groups` (`BufferRuntime.adopt`)."""

    def saved(self) -> tuple[float | None, Saved]:
        """The buffer as plain data (`plugin/nfa/snapshot.py`): the clock and each group's rank,
        time and rows (event, mapping) by GPM."""
        if self.raw is not None:
            return self.clock, list(self.raw)
        groups = [
            (
                g.rank,
                g.time,
                {gpm: [(events[0], dict(row)) for events, row, _ in found] for gpm, found in g.rows.items()},
            )
            for g in self.groups
        ]
        return self.clock, groups

    @classmethod
    def restored(
        cls,
        last_rank: int,
        clock: float | None,
        raw: Saved,
    ) -> BufferState:
        state = cls(0, last_rank)
        state.clock, state.raw = clock, raw
        return state

    @property
    def runs(self) -> dict[int, list[Run]]:
        return {}

    @runs.setter
    def runs(self, value: dict[int, list[Run]]) -> None:
        if value:
            raise TypeError("a BufferState holds no runs")

    def run_count(self) -> int:
        return 0

    def held(self) -> int:
        """Rows held: the state's size (linear in the window, whatever the runs)."""
        return sum(len(rows) for group in self.groups for rows in group.rows.values())

    def remembered_count(self) -> int:
        return self.held()

    def idle(self) -> bool:
        return not self.groups and not self.raw

    def copy(self) -> BufferState:
        """A copy processing may change without touching this state (it appends groups and
        drops old ones, never changes one); limits tripping on the copy are recorded in this
        state's `truncated` too (the tentative open rank reports its matches)."""
        copied = BufferState(0, self.last_rank)
        copied.groups = list(self.groups)
        copied.touching = [list(found) for found in self.touching]
        copied.clock = self.clock
        copied.truncated = self.truncated
        copied.raw = None if self.raw is None else list(self.raw)
        return copied

    def held_events(self) -> set[int]:
        if self.raw is not None:
            return {event for _, _, rows in self.raw for found in rows.values() for event, _ in found}
        return {event for group in self.groups for rows in group.rows.values() for (event,), _, _ in rows}

    def first_start(self) -> float | None:
        if self.raw is not None:
            return self.raw[0][1] if self.raw else None
        return self.groups[0].time if self.groups else None

    def position(self, seq: int) -> int:
        """The index in `groups` of the group numbered `seq`."""
        return seq - self.groups[0].seq
