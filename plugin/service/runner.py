"""One continuous query's step over new log records: `QueryRunner.step`.

Both streaming engines call it per micro-batch with the log records that
follow the position the query reached (all streams; the runner keeps its
own). Per step:

1. number the query's events densely by timestamp, continuing from the last
   rank and time (`rsep.plugin.numbering.number_records`);
2. evaluate the GPMs over all new events in one batch (the injected
   `GpmEvaluatorLike`: Oxigraph in-process, or a Spark stage);
3. give the rows to the per-key step (`rsep.plugin.nfa.keyed.KeyedNfa.step`):
   every *closed* rank for real, then `advance_time`, then the *open* rank
   tentatively on copies of the states it touches;
4. project the matches and describe them as graphs (`MatchGraph`).

The open rank is the newest timestamp of the streamset while nothing later
is in the log: the log accepts more events at that timestamp in a later
request, and `Runtime.process` must see a rank whole. Processing it
tentatively reports its matches at once; when a later event closes it, it
is processed for real, and the matches already reported come out again with
the same graph IRIs (matches at a rank only grow with the rank's events, see
docs/endpoint.md), which the idempotent writer skips. So any split of the log
into batches gives exactly the matches of `Replay` over all events at once.

Everything the step needs to go on after a restart is `RunnerState`; `snapshot()` writes it
as plain data in the checkpoint format (`rsep.plugin.service.checkpoints`, kind `runner`), NFA
paths flattened without recursion (they can be long).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.keyed import (
    GpmEvaluatorLike,
    KeyedNfa,
    KeyedState,
    Rows,
    in_detection_order,
    keep_live,
)
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent, number_records
from rsep.plugin.results import Projector
from rsep.plugin.service import checkpoints
from rsep.plugin.service.match_graphs import EventRef, MatchGraph, match_graph
from rsep.plugin.service.registry import RegisteredQuery

_PRUNE_SLACK = 1024


@dataclass(slots=True)
class RunnerState:
    """A query's progress: what a checkpoint holds."""

    position: int
    """The next log position to read: every record before it has been stepped."""
    last_rank: int = -1
    """Rank of the newest event of the streamset (the numbering goes on from it)."""
    last_time: float | None = None
    keyed: KeyedState = field(default_factory=KeyedState)
    """Every partition key's NFA state, and the rows of the open rank."""
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
        self.keyed = KeyedNfa(plan.automaton, plan.key)
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

    backlog = False
    """A step does all the work its records make (`Runner.backlog`)."""

    @property
    def settled(self) -> int:
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
        # the newest rank is open while nothing later is in the log: more events may join it
        still_open = state.last_time is not None and watermark <= state.last_time
        closed = state.last_rank - 1 if still_open else state.last_rank
        matches = self.keyed.step(state.keyed, rows, state.events, closed, watermark)
        graphs = self._graphs(in_detection_order(matches))
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
        found = self.keyed.relevant(self.state.keyed, self.evaluator.evaluate((n.id, n.event) for n in fresh))
        rows: Rows = {gpm: [(e, dict(m)) for e, m in gpm_rows] for gpm, gpm_rows in found.items() if gpm_rows}
        matched = {event_id for gpm_rows in rows.values() for event_id, _ in gpm_rows}
        for n in fresh:
            if n.id in matched:
                bare = GraphEvent(n.event.stream, n.event.name, n.event.time, "", n.event.start)
                self.state.events[n.id] = NumberedEvent(n.id, n.rank, bare)
        return rows

    def _graphs(self, matches: Sequence[Match]) -> list[MatchGraph]:
        graphs = []
        detected = self.clock()
        for match in matches:
            row = self._projector.project(match)
            if row is None:
                continue
            if self._distinct:
                key = tuple(sorted(row.items()))
                if key in self.state.seen:
                    continue
                self.state.seen.add(key)
            if not self._projector.admit(match):
                continue
            refs = [event_ref(self.state.events[i]) for i in match.events]
            query = self.query
            graphs.append(match_graph(query.id, query.iri, match, refs, self._projector, row, detected))
        return graphs

    def _prune(self) -> None:
        """Forget events no live run or pending row refers to, once their
        number has doubled since the last pruning (amortised)."""
        state = self.state
        if len(state.events) <= 2 * state.kept_after_prune + _PRUNE_SLACK:
            return
        keep_live(state.events, state.keyed)
        state.kept_after_prune = len(state.events)


def event_ref(numbered: NumberedEvent) -> EventRef:
    """What a match graph says about one of its events."""
    event = numbered.event
    return EventRef(numbered.id, event.name, event.time, event.start)


# ---------------------------------------------------------------------- checkpoints


def dump_state(state: RunnerState, automaton: Automaton) -> bytes:
    """RunnerState as a `runner` checkpoint; the NFA states stamped with the automaton they
    belong to (`rsep.plugin.nfa.snapshot`)."""
    body = {
        "position": state.position,
        "last_rank": state.last_rank,
        "last_time": state.last_time,
        **keyed_body(state.keyed, state.events, automaton),
        "seen": sorted(state.seen),
        "numbered": state.numbered,
        "event_count": state.event_count,
        "match_count": state.match_count,
        "kept_after_prune": state.kept_after_prune,
    }
    return checkpoints.encode("runner", body)


def load_state(data: bytes, automaton: Automaton | None = None) -> RunnerState:
    """The RunnerState `dump_state` saved (or an older rsep's); with `automaton`, only if its
    NFA states were saved for that automaton (`snapshot.StateMismatch` otherwise)."""
    body = checkpoints.decode(data, "runner", _legacy_runner)
    keyed, events = keyed_from_body(body, automaton)
    return RunnerState(
        body["position"],
        body["last_rank"],
        body["last_time"],
        keyed,
        events,
        set(map(_row_key, body["seen"])),
        dict(body["numbered"]),
        body["event_count"],
        body["match_count"],
        body["kept_after_prune"],
    )


def dump_keyed(state: KeyedState, events: Mapping[int, NumberedEvent], automaton: Automaton) -> bytes:
    """A partition key's part of a runner's state (Spark's state store holds one per key) as a
    `keyed` checkpoint."""
    return checkpoints.encode("keyed", keyed_body(state, events, automaton))


def load_keyed(data: bytes, automaton: Automaton | None) -> tuple[KeyedState, dict[int, NumberedEvent]]:
    """What `dump_keyed` saved (or an older rsep's per-key `RunnerState`)."""
    return keyed_from_body(checkpoints.decode(data, "keyed", _legacy_runner), automaton)


def keyed_body(
    state: KeyedState, events: Mapping[int, NumberedEvent], automaton: Automaton
) -> dict[str, Any]:
    """What the per-key step needs to go on, as plain data (the `keyed` part of a checkpoint)."""
    return {
        "closed_rank": state.closed_rank,
        "pending": {gpm: [(e, dict(m)) for e, m in rows] for gpm, rows in state.pending.items()},
        "states": snapshot.encode(state.states, automaton),
        "events": [_event_row(n) for n in events.values()],
    }


def keyed_from_body(
    body: Mapping[str, Any], automaton: Automaton | None
) -> tuple[KeyedState, dict[int, NumberedEvent]]:
    states = snapshot.decode(body["states"], automaton)
    keyed = KeyedState(
        states, {gpm: list(rows) for gpm, rows in body["pending"].items()}, body["closed_rank"]
    )
    events = {row[0]: _event_of(row) for row in body["events"]}
    return keyed, events


def _event_row(numbered: NumberedEvent) -> tuple[object, ...]:
    event, time, start = numbered.event, numbered.event.time, numbered.event.start
    row = (numbered.id, numbered.rank, event.stream, event.name, time.seconds, time.lexical, time.numeric)
    return row if start is None else (*row, start.seconds, start.lexical)


def _event_of(row: Sequence[Any]) -> NumberedEvent:
    event_id, rank, stream, name, seconds, lexical, numeric, *start = row
    begins = Timestamp(start[0], start[1], numeric) if start else None
    return NumberedEvent(
        event_id, rank, GraphEvent(stream, name, Timestamp(seconds, lexical, numeric), "", begins)
    )


def _row_key(row: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((name, value) for name, value in row)


def _legacy_runner(data: bytes) -> dict[str, Any]:
    """Format 2 (rsep before the checkpoint format): `(2, RunnerState fields, NFA states)`,
    the events pickled as rsep's own classes."""
    version, fields, states = checkpoints.load_pickle(data)
    if version != 2:
        raise checkpoints.CheckpointFormatError(f"runner checkpoint format {version} is not 2")
    return {
        **fields,
        "states": states,
        "events": [_event_row(n) for n in fields["events"].values()],
        "seen": sorted(fields["seen"]),
    }
