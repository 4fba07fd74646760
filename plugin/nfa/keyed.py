"""The per-key NFA step: the one way rows of the GPM stage reach `Runtime.process`.

Every driver of the runtime calls `KeyedNfa.step`: the in-process replay (`rsep run`), the
endpoint's runner (`rsep.plugin.service.runner`), the Spark batch and streaming stages, the
EP-SPARQL Q-closure and CQELS-CEP's event clauses. A step takes a batch of GPM rows, split per
partition key into timestamp groups (`groups_by_key`), and

1. feeds every *closed* rank (every rank up to `closed`) to its key's NFA state, the rows kept
   from the open rank of an earlier step first;
2. advances every key's state to (`closed`, `clock`) and drops the states left idle
   (`Runtime.advance_time`: runs that can no longer complete go);
3. keeps the rows of ranks after `closed` (the *open* rank: the newest timestamp, at which more
   events may still come) as `pending`, and runs them *tentatively* on copies of the states they
   touch, so their matches are reported at once. When a later step closes the rank, it is
   processed for real and its matches come out again; the caller's writer skips those it has
   (matches at a rank only grow with the rank's events).

`Runtime.process` must see a rank whole, which is why the open rank is never processed for real.
Which runtime runs the automaton (`runtime_for`: the general one, the lean one or the shared
buffer) is decided once, from the automaton; the lean runtime and the buffer group a step's rows
themselves (`LeanRuntime.process_rows`), splitting the open rank off in the same pass.
A driver that only ever gives whole ranks (a replay over files) passes its last rank as
`closed` and has nothing pending.

What a key's state holds is `KeyedState`; the events that rows and runs name (their rank, time
and interval start) are the caller's, passed to each call: a replay keeps one batch of them, the
endpoint's runner and Spark's per-key state keep those `live_events` says may still matter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import groupby
from typing import Protocol

from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.automaton import Automaton, starting_gpms
from rsep.plugin.nfa.buffer_state import BufferState, Truncated
from rsep.plugin.nfa.lean import LeanRuntime
from rsep.plugin.nfa.lean_plan import buffered_eligible, lean_eligible
from rsep.plugin.nfa.lean_state import LeanState
from rsep.plugin.nfa.runtime import Group, Match, NfaState, Runtime
from rsep.plugin.nfa.shared_buffer import BufferRuntime
from rsep.plugin.numbering import NumberedEvent

logger = logging.getLogger("rsep.nfa")

Key = tuple[str, ...]
"""The values of the plan's partition-key variables (N-Triples terms)."""

GpmRows = Mapping[int, Sequence[tuple[int, Mapping[str, str]]]]
"""GPM index -> (event id, solution mapping) rows, in the order the GPM stage gave them."""

Rows = dict[int, list[tuple[int, Mapping[str, str]]]]
"""`GpmRows` kept (the open rank's)."""


class GpmEvaluatorLike(Protocol):
    """Where rows come from: a GPM stage (Oxigraph in process, `rsep.plugin.store.gpm_stage`, or
    the Spark stage's executors) evaluating every GPM of a plan over a batch of events."""

    def evaluate(self, events: Iterable[tuple[int, GraphEvent]]) -> GpmRows: ...


@dataclass(slots=True)
class KeyedState:
    """The NFA states of every partition key, and the rows of the open rank."""

    states: dict[Key, NfaState] = field(default_factory=dict)
    pending: Rows = field(default_factory=dict)
    """GPM rows of the open rank (ranks after `closed_rank`)."""
    closed_rank: int = -1
    """Every rank up to this one has been processed for real."""
    truncated: list[tuple[Key, Truncated]] = field(default_factory=list)
    """Timestamps at which a key's shared buffer reported only `Automaton.match_limit` matches
    (docs/semantics.md, "Which runtime runs an automaton, and the shared buffer"), appended by
    `KeyedNfa.step`: drivers report and clear them (an open rank run tentatively, then for
    real, may be there twice). Not checkpointed."""

    def run_count(self) -> int:
        return sum(nfa.run_count() for nfa in self.states.values())


class KeyedNfa:
    """An automaton's per-key step. Pickles as its automaton and key only: the `Runtime` (which
    compiles the stateful filters) is built where the step runs, once per copy."""

    __slots__ = ("_runtime", "_starters", "automaton", "key")

    def __init__(self, automaton: Automaton, key: Sequence[str]) -> None:
        self.automaton = automaton
        self.key = tuple(key)
        self._runtime: Runtime | None = None
        self._starters = starting_gpms(automaton) if self.key else None

    def __getstate__(self) -> tuple[Automaton, tuple[str, ...]]:
        return self.automaton, self.key

    def __setstate__(self, state: tuple[Automaton, tuple[str, ...]]) -> None:
        self.automaton, self.key = state
        self._runtime = None
        self._starters = starting_gpms(self.automaton) if self.key else None

    def relevant(self, state: KeyedState, rows: GpmRows) -> GpmRows:
        """The rows that can make a difference: every row of a GPM that starts runs, and of the
        other GPMs only the rows of keys that have a state, or a starting row among `rows` or the
        pending ones. The others have no run to continue or block, and none can start at or
        before them: dropping them here spares their events, grouping and states (with many
        queries on one stream, most rows of most queries). Rows without the key are kept."""
        starters = self._starters
        if starters is None or all(gpm in starters for gpm in rows):
            return rows
        key = self.key
        single = key[0] if len(key) == 1 else None
        live = state.states
        starting: set[Key] = set()
        for source in (rows, state.pending):
            for gpm in starters:
                for _, mapping in source.get(gpm, ()):
                    found = _key_of(mapping, single, key)
                    if found is not None:
                        starting.add(found)
        kept: dict[int, Sequence[tuple[int, Mapping[str, str]]]] = {}
        for gpm, gpm_rows in rows.items():
            if gpm in starters:
                kept[gpm] = gpm_rows
                continue
            chosen = []
            for row in gpm_rows:
                found = _key_of(row[1], single, key)
                if found is None or found in live or found in starting:
                    chosen.append(row)
            if chosen:
                kept[gpm] = chosen
        return kept

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = runtime_for(self.automaton, self.key)
        return self._runtime

    @runtime.setter
    def runtime(self, runtime: Runtime) -> None:
        """(Benchmarks wrap the runtime to time it.)"""
        self._runtime = runtime

    # ------------------------------------------------------------------ the step

    def step(
        self,
        state: KeyedState,
        rows: GpmRows,
        events: Mapping[int, NumberedEvent],
        closed: int,
        clock: float,
        *,
        tentative: bool = True,
    ) -> list[Match]:
        """Process `rows` (new GPM rows; ranks after `state.closed_rank`) with the pending ones:
        ranks up to `closed` for real, then advance every key to (`closed`, `clock`): no later
        row has a smaller rank or time. The rows of later ranks stay pending and, with
        `tentative`, are run on copies. Returns the matches found, in no particular order."""
        runtime = self.runtime
        if isinstance(runtime, LeanRuntime):  # splits the rows while it groups them
            pending: Rows = {}
            matches = runtime.process_rows(
                state.states, rows, events, self.key, earlier=state.pending, closed=closed, later=pending
            )
        else:
            ready, pending = split_closed(state.pending, rows, events, closed)
            matches = self.process(state, ready, events)
        state.closed_rank = max(state.closed_rank, closed)
        self.advance(state, state.closed_rank, clock)
        state.pending = pending
        if tentative and pending:
            matches.extend(self.tentative(state, pending, events))
        if isinstance(self.runtime, BufferRuntime):
            for key, nfa in state.states.items():
                if isinstance(nfa, BufferState) and nfa.truncated:
                    state.truncated.extend((key, item) for item in nfa.truncated)
                    _warn_truncated(key, nfa.truncated, state.closed_rank)
                    nfa.truncated.clear()
        return matches

    def process(self, state: KeyedState, rows: GpmRows, events: Mapping[int, NumberedEvent]) -> list[Match]:
        """Whole ranks, for real."""
        states = state.states
        runtime = self.runtime
        if isinstance(runtime, LeanRuntime):
            return runtime.process_rows(states, rows, events, self.key)
        found: list[Match] = []
        for key, groups in groups_by_key(rows, events, self.key).items():
            nfa = states.get(key)
            if nfa is None:
                nfa = runtime.new_state()
            states[key], matches = runtime.process(nfa, groups)
            found.extend(matches)
        return found

    def advance(self, state: KeyedState, rank: int, time: float) -> None:
        """Later rows have a rank > `rank` and a time >= `time`: runs that cannot complete are
        dropped, and so are the states left with nothing to continue or to block a match."""
        states = state.states
        runtime = self.runtime
        for key, nfa in list(states.items()):
            nfa = runtime.advance_time(nfa, rank, time)
            if nfa.idle():
                del states[key]
            else:
                states[key] = nfa

    def tentative(self, state: KeyedState, rows: Rows, events: Mapping[int, NumberedEvent]) -> list[Match]:
        """The open rank's matches, found on copies of the states its rows touch."""
        runtime = self.runtime
        if isinstance(runtime, LeanRuntime):
            return runtime.process_rows(state.states, rows, events, self.key, scratch=True)
        found: list[Match] = []
        for key, groups in groups_by_key(rows, events, self.key).items():
            base = state.states.get(key)
            scratch = copy_nfa(base) if base is not None else runtime.new_state()
            found.extend(runtime.process(scratch, groups)[1])
        return found

    def settle(self, state: KeyedState, time: float) -> list[Match]:
        """The matches whose open anti-joins no solution up to `time` blocks (`Runtime.settle`)."""
        return [match for nfa in state.states.values() for match in self.runtime.settle(nfa, time)]


def _key_of(mapping: Mapping[str, str], single: str | None, key: tuple[str, ...]) -> Key | None:
    """A row's partition key (None when it does not bind every key variable)."""
    if single is not None:
        value = mapping.get(single)
        return None if value is None else (value,)
    values = tuple(mapping.get(name) for name in key)
    return None if None in values else values  # type: ignore[return-value]


def runtime_for(automaton: Automaton, key: Sequence[str] = ()) -> Runtime:
    """The runtime that runs `automaton`, chosen from what it is made of: the shared buffer
    (`plugin/nfa/shared_buffer.py`) where skip-till-any would multiply runs
    (`buffered_eligible`), the lean runtime (`plugin/nfa/lean.py`) for the other common automata
    (`lean_eligible`), the general one for the rest (interval patterns, consuming policies,
    join groups)."""
    if buffered_eligible(automaton):
        return BufferRuntime(automaton, key)
    if lean_eligible(automaton):
        return LeanRuntime(automaton, key)
    return Runtime(automaton)


# ---------------------------------------------------------------------- rows and groups


def groups_by_key(
    rows: GpmRows, events: Mapping[int, NumberedEvent], key: Sequence[str]
) -> dict[Key, list[Group]]:
    """GPM rows -> per partition key, its groups in rank order (interval starts of events that
    span one in `Group.starts`). The loop runs once per GPM row, hence the locals and no helper
    calls."""
    grouped: dict[Key, dict[int, Group]] = {}
    single = key[0] if len(key) == 1 else None
    for gpm, gpm_rows in rows.items():
        for event_id, mapping in gpm_rows:
            row_key = (mapping[single],) if single is not None else tuple([mapping[name] for name in key])
            by_rank = grouped.get(row_key)
            if by_rank is None:
                by_rank = grouped[row_key] = {}
            numbered = events[event_id]
            group = by_rank.get(numbered.rank)
            if group is None:
                group = by_rank[numbered.rank] = Group(numbered.rank, numbered.event.time.seconds, {})
            if numbered.event.start is not None:
                group.starts = {**(group.starts or {}), event_id: numbered.event.start.seconds}
            found = group.rows.get(gpm)
            if found is None:
                group.rows[gpm] = [(event_id, mapping)]  # type: ignore[index]
            else:
                found.append((event_id, mapping))  # type: ignore[attr-defined]
    return {k: [groups[r] for r in sorted(groups)] for k, groups in grouped.items()}


def split_closed(
    pending: GpmRows, rows: GpmRows, events: Mapping[int, NumberedEvent], closed: int
) -> tuple[GpmRows, Rows]:
    """(rows of ranks up to `closed`, rows of later ranks), the pending rows first."""
    if not pending and all(events[e].rank <= closed for gpm_rows in rows.values() for e, _ in gpm_rows):
        return rows, {}
    ready: Rows = {}
    later: Rows = {}
    sources: tuple[GpmRows, ...] = (pending, rows)
    for source in sources:
        for gpm, gpm_rows in source.items():
            for event_id, mapping in gpm_rows:
                target = ready if events[event_id].rank <= closed else later
                target.setdefault(gpm, []).append((event_id, mapping))
    return ready, later


# ---------------------------------------------------------------------- copies and what to keep


def copy_nfa(state: NfaState) -> NfaState:
    """A copy `Runtime.process` may change without touching `state`: it replaces or appends to
    the lists the state holds (runs per NFA state, remembered auxiliary solutions, join groups'
    occurrences, open anti-joins) and never changes their items. Every field is copied (a test
    guards this), so the tentative rank sees the history that anti-joins read."""
    if isinstance(state, (LeanState, BufferState)):
        return state.copy()
    copied: dict[str, object] = {}
    for f in fields(NfaState):
        value = getattr(state, f.name)
        if isinstance(value, dict):
            value = {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
        elif isinstance(value, list):
            value = list(value)
        copied[f.name] = value
    return NfaState(**copied)  # type: ignore[arg-type]


def copy_state(state: KeyedState) -> KeyedState:
    """A copy of every key's state that a step may change without touching `state` (the
    Q-closure runs a timestamp again from the states before it)."""
    return KeyedState(
        {key: copy_nfa(nfa) for key, nfa in state.states.items()},
        {gpm: list(gpm_rows) for gpm, gpm_rows in state.pending.items()},
        state.closed_rank,
    )


def live_events(state: KeyedState) -> set[int]:
    """The events a later match may still report: those on a live run's path, in a join group's
    occurrences, or in a pending row. Runs share their paths' tails, so each node is read once."""
    live: set[int] = {event for gpm_rows in state.pending.values() for event, _ in gpm_rows}
    seen: set[int] = set()
    for nfa in state.states.values():
        live.update(nfa.joined_events())
        if isinstance(nfa, BufferState):
            live.update(nfa.held_events())
            continue
        if isinstance(nfa, LeanState):
            heads: Iterable[object] = nfa.nodes()
        else:
            heads = (run.path for runs in nfa.runs.values() for run in runs)
        for node in heads:
            while node is not None and id(node) not in seen:
                seen.add(id(node))
                live.update(node[0])  # type: ignore[index]
                node = node[1]  # type: ignore[index]
    return live


def keep_live(events: MutableMapping[int, NumberedEvent], state: KeyedState) -> None:
    """Forget the events that no later match can report (`live_events`)."""
    live = live_events(state)
    if len(live) < len(events):
        for event_id in [e for e in events if e not in live]:
            del events[event_id]


def pending_rank(state: KeyedState, events: Mapping[int, NumberedEvent]) -> tuple[int, float]:
    """Rank and time of the open rank's rows (the state has some)."""
    event = next(e for gpm_rows in state.pending.values() for e, _ in gpm_rows)
    numbered = events[event]
    return numbered.rank, numbered.event.time.seconds


def first_run_start(state: KeyedState) -> float | None:
    """When the oldest live run started (None: no runs): WITHIN expires it after that."""
    starts = [
        start
        for nfa in state.states.values()
        for start in (
            [nfa.first_start()]
            if isinstance(nfa, (LeanState, BufferState))
            else [run.start_time for runs in nfa.runs.values() for run in runs]
        )
        if start is not None
    ]
    return min(starts, default=None)


def in_detection_order(matches: Iterable[Match]) -> list[Match]:
    """`sorted(matches, key=Match.key)`, cheaper: sort by the key without its last part (the
    sorted mapping, costly to build for every match), then by the whole key only among matches
    that tie on the rest. Both sorts are stable, so ties on the whole key keep their order, as
    in one sort."""
    ordered = sorted(matches, key=_rank_and_events)
    out: list[Match] = []
    for _, tied in groupby(ordered, key=_rank_and_events):
        same = list(tied)
        if len(same) > 1:
            same.sort(key=Match.key)
        out.extend(same)
    return out


def _rank_and_events(match: Match) -> tuple[int, int, tuple[int, ...]]:
    return match.end_rank, match.start_rank, match.events


def _warn_truncated(key: Key, truncated: Sequence[Truncated], closed: int) -> None:
    """Matches left out are never silent: each timestamp whose rank is processed for real (a
    tentative run of the open rank comes again when it closes) is logged once."""
    for item in truncated:
        if item.rank <= closed:
            logger.warning(
                "partition key %s at time %s: %d matches reported, the limit per timestamp "
                "(Automaton.match_limit); further matches at this timestamp are not reported",
                key or "()", item.time, item.reported,
            )  # fmt: skip
