"""One continuous query's step over new log records: `QueryRunner.step`.

Both streaming engines call it per micro-batch with the log records that
follow the position the query reached (all streams; the runner keeps its
own). Per step:

1. number the query's events densely by timestamp, continuing from the last
   rank and time (`plugin/replay.number_events`, incrementally);
2. evaluate the GPMs over all new events in one batch (the injected
   `GpmEvaluatorLike`: Oxigraph in-process, or a Spark stage);
3. feed every *closed* rank to the per-key NFA states (`groups_by_key`,
   `Runtime.process`), then `advance_time`;
4. run the *open* rank tentatively on copies of the states it touches;
5. project the matches and describe them as graphs (`MatchGraph`).

The open rank is the newest timestamp of the streamset while nothing later
is in the log: the log accepts more events at that timestamp in a later
request, and `Runtime.process` must see a rank whole. Processing it
tentatively reports its matches at once; when a later event closes it, it
is processed for real, and the matches already reported come out again with
the same graph IRIs (matches at a rank only grow with the rank's events, see
docs/endpoint.md), which the idempotent writer skips. So any split of the log
into batches gives exactly the matches of `Replay` over all events at once.

Everything the step needs to go on after a restart is `RunnerState`; it is
serialised by `snapshot()` without recursion (NFA paths can be long).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, fields

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.runtime import Match, NfaState, Runtime
from rsep.plugin.replay import GpmEvaluatorLike, Key, NumberedEvent, groups_by_key
from rsep.plugin.results import Projector
from rsep.plugin.service.checkpoints import load_pickle
from rsep.plugin.service.match_graphs import EventRef, MatchGraph, match_graph
from rsep.plugin.service.registry import RegisteredQuery

Rows = dict[int, list[tuple[int, dict[str, str]]]]
"""GPM index -> (event id, solution mapping) rows."""

SNAPSHOT_VERSION = 2
_PRUNE_SLACK = 1024


@dataclass(slots=True)
class RunnerState:
    """A query's progress: what a checkpoint holds."""

    position: int
    """The next log position to read: every record before it has been stepped."""
    last_rank: int = -1
    """Rank of the newest event of the streamset (the numbering goes on from it)."""
    last_time: float | None = None
    closed_rank: int = -1
    """Ranks up to this one are in `states`; `last_rank` is open when greater."""
    states: dict[Key, NfaState] = field(default_factory=dict)
    pending: Rows = field(default_factory=dict)
    """GPM rows of the open rank."""
    events: dict[int, NumberedEvent] = field(default_factory=dict)
    """Events that matched a GPM and may still be part of a match (triples dropped)."""
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)
    """SELECT DISTINCT rows already reported."""
    numbered: dict[object, bool] = field(default_factory=dict)
    """LIMIT/OFFSET: the answers numbered so far (`rsep.plugin.results.Slice`)."""
    event_count: int = 0
    match_count: int = 0
    kept_after_prune: int = 0


class QueryRunner:
    """Plan, GPM evaluator and NFA states of one registered query."""

    def __init__(
        self,
        query: RegisteredQuery,
        plan: QueryPlan,
        evaluator: GpmEvaluatorLike,
        state: RunnerState | None = None,
        clock: Callable[[], str] | None = None,
    ) -> None:
        self.query = query
        self.plan = plan
        self.evaluator = evaluator
        self.runtime = Runtime(plan.automaton)
        self.state = state if state is not None else RunnerState(position=query.start)
        self.clock = clock or (lambda: Timestamp.now().lexical)
        self._streams = frozenset(plan.streams)
        self._projector = Projector.for_plan(plan)
        # DISTINCT's memory must survive restarts, so it lives in RunnerState.
        self._distinct = self._projector.distinct
        self._projector.distinct = False
        self._projector.slice.numbered = self.state.numbered  # LIMIT/OFFSET's memory, checkpointed too

    @classmethod
    def restore(
        cls,
        query: RegisteredQuery,
        plan: QueryPlan,
        evaluator: GpmEvaluatorLike,
        snapshot: bytes | None,
        clock: Callable[[], str] | None = None,
    ) -> QueryRunner:
        """A runner from a checkpoint's payload, or from the query's start. A payload
        saved for another automaton raises `StateMismatch` (the engines then replay the
        query from its start)."""
        state = load_state(snapshot, plan.automaton) if snapshot is not None else None
        return cls(query, plan, evaluator, state, clock)

    @property
    def position(self) -> int:
        return self.state.position

    def snapshot(self) -> bytes:
        return dump_state(self.state, self.plan.automaton)

    def created(self, count: int) -> None:
        """Count graphs the sink actually created (replays create none)."""
        self.state.match_count += count

    # ------------------------------------------------------------------ the step

    def step(self, records: Sequence[LogRecord]) -> list[MatchGraph]:
        """Consume consecutive log records from `position`; returns the match
        graphs found, in detection order (some may have been returned before:
        the writer skips graphs that exist)."""
        if not records:
            return []
        state = self.state
        if records[0].position != state.position:
            raise ValueError(f"expected log position {state.position}, got {records[0].position}")
        fresh = self._number(records)
        state.position = records[-1].position + 1
        watermark = max(r.event.time.seconds for r in records)
        rows = self._evaluate(fresh)
        open_rank = state.last_rank if state.last_time is not None and watermark <= state.last_time else None
        closed, pending = self._split(state.pending, rows, open_rank)
        matches = self._process(closed)
        state.closed_rank = state.last_rank if open_rank is None else state.last_rank - 1
        self._advance(state.closed_rank, watermark)
        state.pending = pending
        matches.extend(self._tentative(pending))
        matches.sort(key=Match.key)
        graphs = self._graphs(matches)
        self._prune()
        return graphs

    def _number(self, records: Sequence[LogRecord]) -> list[NumberedEvent]:
        state = self.state
        fresh, state.last_rank, state.last_time = number_records(
            records, self._streams, state.last_rank, state.last_time
        )
        state.event_count += len(fresh)
        return fresh

    def _evaluate(self, fresh: Sequence[NumberedEvent]) -> Rows:
        if not fresh:
            return {}
        found = self.evaluator.evaluate((n.id, n.event) for n in fresh)
        rows: Rows = {gpm: [(e, dict(m)) for e, m in gpm_rows] for gpm, gpm_rows in found.items() if gpm_rows}
        matched = {event_id for gpm_rows in rows.values() for event_id, _ in gpm_rows}
        for n in fresh:
            if n.id in matched:
                bare = GraphEvent(n.event.stream, n.event.name, n.event.time, "", n.event.start)
                self.state.events[n.id] = NumberedEvent(n.id, n.rank, bare)
        return rows

    def _split(self, pending: Rows, rows: Rows, open_rank: int | None) -> tuple[Rows, Rows]:
        closed: Rows = {}
        still_open: Rows = {}
        events = self.state.events
        for source in (pending, rows):
            for gpm, gpm_rows in source.items():
                for event_id, mapping in gpm_rows:
                    target = still_open if events[event_id].rank == open_rank else closed
                    target.setdefault(gpm, []).append((event_id, mapping))
        return closed, still_open

    def _process(self, rows: Rows) -> list[Match]:
        found: list[Match] = []
        states = self.state.states
        for key, groups in groups_by_key(rows, self.state.events, self.plan.key).items():
            nfa = states.get(key) or self.runtime.new_state()
            nfa, matches = self.runtime.process(nfa, groups)
            states[key] = nfa
            found.extend(matches)
        return found

    def _advance(self, rank: int, time: float) -> None:
        """Later groups have a rank > `rank` and a time >= `time` (the log is
        in time order), so runs that cannot complete are dropped."""
        states = self.state.states
        for key, nfa in list(states.items()):
            self.runtime.advance_time(nfa, rank, time)
            if nfa.idle():
                del states[key]

    def _tentative(self, rows: Rows) -> list[Match]:
        found: list[Match] = []
        for key, groups in groups_by_key(rows, self.state.events, self.plan.key).items():
            base = self.state.states.get(key)
            scratch = _scratch_copy(base) if base is not None else self.runtime.new_state()
            _, matches = self.runtime.process(scratch, groups)
            found.extend(matches)
        return found

    def _graphs(self, matches: Iterable[Match]) -> list[MatchGraph]:
        graphs = []
        detected = self.clock()
        for match in matches:
            row = self._projector.project(match.mapping)
            if row is None:
                continue
            if self._distinct:
                key = tuple(sorted(row.items()))
                if key in self.state.seen:
                    continue
                self.state.seen.add(key)
            if not self._projector.admit(match):
                continue
            refs = [_ref(self.state.events[i]) for i in match.events]
            query = self.query
            graphs.append(match_graph(query.id, query.iri, match, refs, self._projector, row, detected))
        return graphs

    def _prune(self) -> None:
        """Forget events no live run or pending row refers to, once their
        number has doubled since the last pruning (amortised)."""
        state = self.state
        if len(state.events) <= 2 * state.kept_after_prune + _PRUNE_SLACK:
            return
        live = _path_events(state.states.values())
        live.update(event_id for gpm_rows in state.pending.values() for event_id, _ in gpm_rows)
        state.events = {i: e for i, e in state.events.items() if i in live}
        state.kept_after_prune = len(state.events)


def number_records(
    records: Iterable[LogRecord], streams: Collection[str], last_rank: int, last_time: float | None
) -> tuple[list[NumberedEvent], int, float | None]:
    """`plugin/replay.number_events`, incrementally: the events of `streams`
    among log records, ids = log positions, dense ranks by timestamp going on
    from `last_rank` at `last_time`. Returns them and the new (rank, time).
    No `streams` means every stream (EP-SPARQL reads one merged stream)."""
    numbered = []
    for record in records:
        event = record.event
        if streams and event.stream not in streams:
            continue
        seconds = event.time.seconds
        if last_time is None or seconds > last_time:
            last_rank, last_time = last_rank + 1, seconds
        elif seconds < last_time:
            raise ValueError(f"log position {record.position} is older than the event before it")
        numbered.append(NumberedEvent(record.position, last_rank, event))
    return numbered, last_rank, last_time


def _ref(numbered: NumberedEvent) -> EventRef:
    event = numbered.event
    return EventRef(numbered.id, event.name, event.time, event.start)


def _scratch_copy(state: NfaState) -> NfaState:
    """A copy `Runtime.process` may change without touching `state`: it
    replaces or appends to the run lists and the remembered solutions and
    never changes a `Run` (every field is copied: a test guards this)."""
    return NfaState(
        runs={k: list(v) for k, v in state.runs.items()},
        last_rank=state.last_rank,
        history={k: list(v) for k, v in state.history.items()},
        pending=list(state.pending),
        joins={k: list(v) for k, v in state.joins.items()},
    )


def _path_events(states: Iterable[NfaState]) -> set[int]:
    seen_nodes: set[int] = set()
    events: set[int] = set()
    for nfa in states:
        events.update(nfa.joined_events())
        for runs in nfa.runs.values():
            for run in runs:
                node = run.path
                while node is not None and id(node) not in seen_nodes:
                    seen_nodes.add(id(node))
                    events.update(node[0])
                    node = node[1]
    return events


# ---------------------------------------------------------------------- snapshots


def dump_state(state: RunnerState, automaton: Automaton | None = None) -> bytes:
    """RunnerState as bytes; the NFA states go through `rsep.plugin.nfa.snapshot`, stamped
    with the automaton they belong to."""
    scalars = {f.name: getattr(state, f.name) for f in fields(RunnerState) if f.name != "states"}
    payload = (SNAPSHOT_VERSION, scalars, snapshot.encode(state.states, automaton))
    return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)


def load_state(data: bytes, automaton: Automaton | None = None) -> RunnerState:
    """The RunnerState `dump_state` saved; with `automaton`, only if its NFA states were
    saved for that automaton (`snapshot.StateMismatch` otherwise)."""
    version, scalars, states = load_pickle(data)
    if version != SNAPSHOT_VERSION:
        raise ValueError(f"checkpoint format {version} is not {SNAPSHOT_VERSION}")
    state = RunnerState(**scalars)
    state.states.update(snapshot.decode(states, automaton))
    return state
