"""The shared buffer: skip-till-any and Kleene+ without materialising partial runs.

Under skip-till-any a waiting run never leaves its state (it takes every compatible event and
keeps waiting), so `SEQ (A: B+: C)` holds a run per (A, first B, last B) triple: n³/6 runs for
n events that are each an A and a B, with no C needed (docs/semantics.md, "Which runtime runs
an automaton, and the shared buffer"). SASE+ keeps such runs in stacks of events with
pointers to their predecessors, and Flink CEP in a versioned `SharedBuffer`; in both a partial
match is only enumerated when it completes. Here the buffer
is simpler still: per key, the groups (timestamps) of the window, their rows and the candidates
each atom makes of them (`Buffered`). Which partial runs exist is a function of those groups
(the general runtime computes nothing else), so when a group offers a candidate to an
accepting state, the runs that may take it are enumerated from the buffer (`_enumerate`): a
depth-first walk from every start in the window, each step checked as `lean.LeanRuntime` checks
it (the same compiled tests, slots and path nodes), with the runtime's strategies (a strict run
lives `max_gap` ranks, a skip-till-next run until it takes, a run with guards until one
occurs, every run WITHIN). Memory is the rows of the window, whatever the number of runs;
time is spent only at groups that can complete a match.

Each enumerated run carries the key of its place in the general runtime's lists (`_key`:
the rank of its last step, the index of the state it took it from among the states that group
touched, its parent's key, the candidate's index; initial steps after every touched state), so
a timestamp's matches are sorted into the general runtime's detection order, then
deduplicated on (events, mapping) as `Runtime._report` does: the same matches, in the same
order.

The number of partial runs can grow exponentially (`A: B+: C` with skip-till-any between
occurrences: every subset of the B's), so the enumeration is bounded per timestamp: at most
`match_limit` matches (`Automaton.match_limit`, default `DEFAULT_MATCH_LIMIT`) and
`WORK_PER_MATCH` times as many steps. Past either bound the timestamp reports what was found
first (runs from the oldest start first, the matches in detection order) and the state
records `Truncated(rank, time, reported)` in `BufferState.truncated`, which `KeyedNfa.step`
moves to `KeyedState.truncated` for the drivers to report.

The buffer runs what `lean_plan.buffered_eligible` accepts: lean automata with WITHIN and a
skip-till-any state that multiplies runs (after a Kleene+ or another skip-till-any state).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from rsep.plugin.nfa.automaton import Automaton, State
from rsep.plugin.nfa.buffer_state import Buffered, BufferState, Rows, Truncated
from rsep.plugin.nfa.lean import LeanRuntime
from rsep.plugin.nfa.lean_filters import EMPTY
from rsep.plugin.nfa.lean_steps import matches
from rsep.plugin.nfa.runs import Group, Match, NfaState, RankOrderError
from rsep.plugin.nfa.runtime import Runtime
from rsep.plugin.nfa.snapshot import StateMismatch

DEFAULT_MATCH_LIMIT: Final = 10_000
"""Matches reported per key and timestamp by a query on the shared buffer, unless its automaton
says otherwise (`Automaton.match_limit`)."""
WORK_PER_MATCH: Final = 100
"""Steps of the enumeration per timestamp, per match of the limit."""
_INITIAL: Final = 1 << 30
"""Initial states spawn after every touched state (`Runtime._process_group`): their index in
a run's key is past any touched index."""


class BufferRuntime(LeanRuntime):
    """The runtime of the shared buffer (see the module docstring)."""

    def __init__(self, automaton: Automaton, key: Sequence[str] = ()) -> None:
        super().__init__(automaton, key)
        assert automaton.within is not None
        self.match_limit = automaton.match_limit or DEFAULT_MATCH_LIMIT
        states = automaton.states
        self._reach: list[frozenset[int]] = [_accepting_from(automaton, s.id) for s in states]

    def new_state(self) -> NfaState:
        return BufferState(self._size)

    def adopt(self, state: NfaState) -> BufferState:
        if isinstance(state, BufferState):
            if state.raw is not None:
                self._plan_raw(state)
            return state
        if state.run_count() or state.history or state.joins:
            raise StateMismatch(
                "the NFA state holds runs, and this query runs on the shared buffer, which keeps "
                "the window's events instead: it cannot continue them"
            )
        fresh = BufferState(self._size, state.last_rank)
        return fresh

    def _plan_raw(self, state: BufferState) -> None:
        """A buffer read from a checkpoint, planned: its rows' shapes and the states each
        group touches, as if its groups had just been processed (no match can complete at a
        group already processed, so nothing is enumerated)."""
        raw, state.raw = state.raw or [], None
        state.touching = [[] for _ in range(self._size)]
        shapes = self.plan.shapes
        for seq, (rank, time, rows) in enumerate(raw):
            planned: Rows = {
                gpm: [((event,), row, shapes.of_row(gpm, tuple(row))) for event, row in found]
                for gpm, found in rows.items()
            }
            touched = {spec.id: index for index, spec in enumerate(self._touched(tuple(planned)))}
            state.groups.append(Buffered(seq, rank, time, planned, touched))
            for state_id in touched:
                state.touching[state_id].append(seq)

    def general(self, state: NfaState) -> NfaState:
        """The general runtime's state: the buffer's groups replayed (every run alive now was
        born from them, since the window holds every start that may still match)."""
        if not isinstance(state, BufferState):
            return super().general(state)
        nfa = NfaState()
        for entry in state.groups:
            rows = {gpm: [(events[0], row) for events, row, _ in found] for gpm, found in entry.rows.items()}
            Runtime.process(self, nfa, [Group(entry.rank, entry.time, rows)])
        if state.clock is not None:
            Runtime.advance_time(self, nfa, state.last_rank, state.clock)
        nfa.last_rank = state.last_rank
        return nfa

    def advance_time(self, state: NfaState, rank: int, time: float) -> NfaState:
        if self.degraded:
            return super().advance_time(state, rank, time)
        buffer = self.adopt(state)
        within = self.within
        assert within is not None
        groups = buffer.groups
        drop = 0
        while drop < len(groups) and time - groups[drop].time > within:
            drop += 1
        if drop:
            del groups[:drop]
            if groups:
                first = groups[0].seq
                for index, found in enumerate(buffer.touching):
                    buffer.touching[index] = found[bisect_right(found, first - 1) :]
            else:
                buffer.touching = [[] for _ in buffer.touching]
        buffer.last_rank = max(buffer.last_rank, rank)
        buffer.clock = time if buffer.clock is None else max(buffer.clock, time)
        return buffer

    def settle(self, state: NfaState, time: float) -> list[Match]:
        return []

    # ------------------------------------------------------------------ one timestamp

    def _group(self, state: Any, rank: int, time: float, rows: Rows) -> list[Match]:
        buffer: BufferState = state
        if rank <= buffer.last_rank:
            raise RankOrderError(f"rank {rank} arrived after rank {buffer.last_rank}")
        buffer.last_rank = rank
        touched = {spec.id: index for index, spec in enumerate(self._touched(tuple(rows)))}
        seq = buffer.groups[-1].seq + 1 if buffer.groups else 0
        entry = Buffered(seq, rank, time, rows, touched)
        buffer.groups.append(entry)
        for state_id in touched:
            buffer.touching[state_id].append(seq)
        targets = frozenset(
            state_id
            for state_id in touched
            if self.automaton.states[state_id].accepting
            and self._cands(self.automaton.states[state_id].atom, rows, entry.cache)
        )
        starting = [
            spec for spec in self._initial if spec.accepting and self._cands(spec.atom, rows, entry.cache)
        ]
        if not targets and not starting:
            return []
        return _Enumeration(self, buffer, entry, targets).matches(starting)


class _Enumeration:
    """The runs that may take a candidate at one group, enumerated from the buffer, and the
    matches they make (see the module docstring)."""

    def __init__(self, runtime: BufferRuntime, buffer: BufferState, entry: Buffered, targets: frozenset[int]):
        self.runtime, self.buffer, self.entry, self.targets = runtime, buffer, entry, targets
        self.plan = runtime.plan
        self.states = runtime.automaton.states
        self.within = runtime.within
        self.found: list[tuple[tuple[Any, ...], Any, float, int]] = []
        self.budget = runtime.match_limit * WORK_PER_MATCH
        self.limit = runtime.match_limit
        self.stopped = False
        self._values: dict[tuple[int, int], tuple[Any, ...]] = {}

    def matches(self, starting: list[State]) -> list[Match]:
        self._walk()
        entry = self.entry
        for order, spec in enumerate(self.runtime._initial):
            if spec not in starting:
                continue
            for index, (events, row, shape) in enumerate(self._cands(spec.atom, entry)):
                take = self.plan.take(None, spec, shape)
                if take.never:
                    continue
                values = take.values(row)
                if take.test is None or take.test(EMPTY, values):
                    node = (events, None, row, take, None)
                    self.found.append(((_INITIAL + order, None, index), node, entry.time, entry.rank))
        return self._report()

    def _cands(self, atom: Any, entry: Buffered) -> list[Any]:
        return self.runtime._cands(atom, entry.rows, entry.cache)

    def _take_values(self, take: Any, row: Mapping[str, str]) -> tuple[Any, ...]:
        found = self._values.get((id(take), id(row)))
        if found is None:
            found = self._values[(id(take), id(row))] = take.values(row)
        return found

    def _walk(self) -> None:
        """Depth first, from every start in the window, oldest first: a frame is a run
        `(state, start time, start rank, last group seq, last rank, node, slots, key)`."""
        buffer, entry = self.buffer, self.entry
        horizon = entry.time - self.within if self.within is not None else None
        reach = self.runtime._reach
        targets = self.targets
        stack: list[tuple[Any, ...]] = []
        for order in range(len(self.runtime._initial) - 1, -1, -1):
            spec = self.runtime._initial[order]
            for seq in reversed(buffer.touching[spec.id]):
                group = buffer.groups[buffer.position(seq)]
                if seq == entry.seq or (horizon is not None and group.time < horizon):
                    continue
                starts = []
                for index, (events, row, shape) in enumerate(self._cands(spec.atom, group)):
                    take = self.plan.take(None, spec, shape)
                    if take.never:
                        continue
                    values = self._take_values(take, row)
                    if take.test is not None and not take.test(EMPTY, values):
                        continue
                    node = (events, None, row, take, None)
                    key = (group.rank, _INITIAL + order, index)
                    for target, build in take.builds:
                        if reach[target] & targets:
                            slots = EMPTY if build is None else build(EMPTY, values)
                            starts.append((target, group.time, group.rank, seq, group.rank, node, slots, key))
                stack.extend(reversed(starts))
        while stack and not self.stopped:
            self._step(stack.pop(), stack)

    def _step(self, frame: tuple[Any, ...], stack: list[tuple[Any, ...]]) -> None:
        """Follow one run through the groups touching its state, after its last step: it
        takes, is dropped (window, gap, guards, skip-till-next) or matches at the last group."""
        state_id, start_time, start_rank, last_seq, last_rank, node, slots, key = frame
        self.budget -= 1
        if self.budget < 0:
            self.stopped = True
            return
        spec = self.states[state_id]
        plan = self.plan.states[state_id]
        buffer, entry = self.buffer, self.entry
        within, gap = self.within, spec.max_gap
        reach, targets = self.runtime._reach, self.targets
        touching = buffer.touching[state_id]
        children: list[tuple[Any, ...]] = []
        groups, first = buffer.groups, buffer.groups[0].seq
        for at in range(bisect_right(touching, last_seq), len(touching)):
            self.budget -= 1
            if self.budget < 0:
                self.stopped = True
                break
            seq = touching[at]
            group = groups[seq - first]
            if within is not None and group.time - start_time > within:
                break
            if gap is not None and group.rank > last_rank + gap:
                break
            touched_index = group.touched[state_id]
            if seq == entry.seq:
                if spec.accepting:
                    self._accept(spec, plan, group, touched_index, start_time, start_rank, node, slots, key)
                break
            took = False
            for index, events, row, take, values in self._taking(spec, plan, group, slots):
                took = True
                child_node = _node(events, node, row, take)
                child_key = (group.rank, touched_index, key, index)
                for target, build in take.builds:
                    if reach[target] & targets:
                        child_slots = slots if build is None else build(slots, values)
                        children.append(
                            (
                                target,
                                start_time,
                                start_rank,
                                seq,
                                group.rank,
                                child_node,
                                child_slots,
                                child_key,
                            )
                        )
            if spec.guards and self._guarded(spec, plan, group, slots):
                break
            if took and plan.next_only:
                break
            if gap is not None and group.rank >= last_rank + gap:
                break
        stack.extend(reversed(children))

    def _taking(
        self, spec: State, plan: Any, group: Buffered, slots: tuple[Any, ...]
    ) -> Iterator[tuple[Any, ...]]:
        """The candidates of `spec`'s atom at `group` a run with `slots` takes: (index, events,
        mapping, take, values)."""
        for index, (events, row, shape) in enumerate(self._cands(spec.atom, group)):
            take = plan.takes.get(shape) or self.plan.take(plan, spec, shape)
            if take.never:
                continue
            values = self._take_values(take, row)
            if take.test is None or take.test(slots, values):
                yield index, events, row, take, values

    def _guarded(self, spec: State, plan: Any, group: Buffered, slots: tuple[Any, ...]) -> bool:
        for atom in spec.guards:
            for _, row, shape in self._cands(atom, group):
                take = self.plan.guard(plan, shape)
                if take.never:
                    continue
                if take.test is None or take.test(slots, self._take_values(take, row)):
                    return True
        return False

    def _accept(
        self,
        spec: State,
        plan: Any,
        group: Buffered,
        touched_index: int,
        start_time: float,
        start_rank: int,
        node: Any,
        slots: tuple[Any, ...],
        key: tuple[Any, ...],
    ) -> None:
        for index, events, row, take, _ in self._taking(spec, plan, group, slots):
            self.found.append(
                ((touched_index, key, index), _node(events, node, row, take), start_time, start_rank)
            )
            if len(self.found) > self.limit:
                self.stopped = True
                return

    def _report(self) -> list[Match]:
        """The matches in detection order, each (events, mapping) once, at most the limit."""
        entry = self.entry
        self.found.sort(key=lambda item: _flat(item[0]))
        accepted = ((node, start_time, start_rank) for _, node, start_time, start_rank in self.found)
        out, cut = matches(accepted, entry.rank, entry.time, self.limit)
        if self.stopped or cut:
            self.buffer.truncated.append(Truncated(entry.rank, entry.time, len(out)))
        return out


def _flat(key: tuple[Any, ...]) -> tuple[int, ...]:
    """A match's key `(touched index, run key, candidate index)` as a flat tuple that sorts as
    the nested one does, without recursing (a Kleene+ run's key nests once per occurrence): a
    run key `(rank, index, parent key, candidate)` (or `(rank, initial index, candidate)`) is
    written rank, index, the parent's ranks and indices down to the initial step, then the
    candidates from the initial step up. The writing is prefix-free (it parses back one way),
    so comparing two writings compares the keys."""
    head, run, last = key
    if run is None:  # a match made by an initial state
        return (head, last)
    pairs: list[int] = [head]
    candidates: list[int] = [last]
    while True:
        if len(run) == 3:
            pairs += (run[0], run[1])
            candidates.append(run[2])
            break
        pairs += (run[0], run[1])
        candidates.append(run[3])
        run = run[2]
    candidates.reverse()
    return (*pairs, *candidates)


def _node(events: tuple[int, ...], parent: Any, row: Mapping[str, str], take: Any) -> Any:
    if parent is None:
        return (events, None, row, take, None)
    return (events, parent, row, take, parent[4] if take.skips_parent(parent[3]) else parent)


def _accepting_from(automaton: Automaton, state_id: int) -> frozenset[int]:
    """The accepting states a run waiting in `state_id` may still reach (itself included)."""
    seen = {state_id}
    pending = [state_id]
    while pending:
        for target in automaton.states[pending.pop()].after_take:
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return frozenset(s for s in seen if automaton.states[s].accepting)


__all__ = ["BufferRuntime", "BufferState", "Truncated"]
