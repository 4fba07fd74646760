"""One continuous window query (C-SPARQL, CQELS) over new log records: `WindowRunner.step`.

The counterpart of `QueryRunner` for the window runtime. Per step:

1. the records of the query's streams become window items, appended per
   stream (`StreamItem.event` is the event's log position);
2. the evaluation times that became *final* are evaluated with
   `WindowReplay.evaluate` (the same window functions, schedules and
   evaluator as `rsep run`): the log is in timestamp order across all
   streams, so once an event later than t has been read (of any stream), no
   event at or before t can come, and evaluation time t is final. Under
   window close (C-SPARQL) a close is also known to be an evaluation time
   only up to `end`, the last close (of any window) at which some window
   holds an item; later closes wait for the items that make them evaluation
   times;
3. each evaluation that answered something becomes one graph
   (rsep.plugin.service.window_graphs);
4. the items no later window can hold are dropped (`first_needed`), so
   memory is bounded by the windows (a landmark window keeps everything).

So the evaluations emitted over a log are those of `WindowReplay.run` over
the same events, up to the last final time (tests/service/test_window_runner.py).

A REGISTER STREAM producer (rsep.plugin.service.producers) drives the same
runner with `take` (read events) and `advance` (evaluate every close up to a
time it knows is final, whatever `end` says) inside the ingest request.

**Checkpoints** hold no items: `snapshot()` stores the log position of the
oldest item still kept (and of the oldest event whose time is still to be
evaluated) as `position`, with the last evaluated time `done`. A restored
runner re-reads the log from there, which rebuilds the items, and evaluates
only times after `done`; evaluations made after the checkpoint come out
again with the same graph IRIs, which the sink skips.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

from rsep.plugin.algebra.events import ReportPolicy
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.service import checkpoints
from rsep.plugin.service.registry import RegisteredQuery
from rsep.plugin.service.window_graphs import EvaluationGraph, evaluation_graph
from rsep.plugin.vocabulary import WATERMARK_STREAM
from rsep.plugin.windows.schedule import ContentChange, Schedule, WindowClose, last_close_by, latest_held
from rsep.plugin.windows.window_functions import first_needed, to_ticks
from rsep.plugin.windows.window_plan import Form, WindowPlan
from rsep.plugin.windows.window_replay import (
    Evaluation,
    StreamContent,
    StreamItem,
    WindowEvaluator,
    WindowReplay,
)

MAX_EVALUATIONS_PER_STEP = 1000
"""The window closes one step evaluates at most; the rest wait for the next steps (`backlog`).
A long gap between events makes every close in it final at once (a `COUNT` answers each, over
empty windows): 12 days under a 5-second step is 200,000 evaluations, which one step held in
memory with their graphs (5 GB and growing) while every other query waited for it."""


@dataclass(slots=True)
class WindowState:
    """A window query's progress: what a checkpoint holds (no items: they are re-read)."""

    position: int
    """The next log position to read."""
    read_to: int
    """Records before it were read once: re-reading them (after a restore) counts no event."""
    first: int | None = None
    """Ticks of the query's first event: the landmark t0 and the first close."""
    t0: int | None = None
    """Ticks of the query's start in stream time, its windows' t0 (windows opening before it are
    not evaluated; docs/semantics.md): the registration's time, the log's newest time before it
    (`RegisteredQuery.t0`, a watermark mark's too); when nothing preceded it, the first event read,
    of any stream (not a watermark mark, which a reorder buffer may log before any event: the
    query then starts where an in-order ingest of the same events starts it)."""
    done: int | None = None
    """Every evaluation time up to this one (ticks) is evaluated."""
    end: int | None = None
    """Window close: the last close at which some window holds an item (`schedule_end`)."""
    watermark: int | None = None
    """The newest event time read, of any stream (ticks)."""
    numeric: bool = True
    """Every event time of the query's streams was a number (times print as numbers)."""
    event_count: int = 0
    match_count: int = 0


def fresh_state(query: RegisteredQuery) -> WindowState:
    """The state of a query that has read nothing yet: at its start, from its registration's t0."""
    t0 = None if query.t0 is None else to_ticks(query.t0)
    return WindowState(query.start, query.start, t0=t0)


@dataclass(slots=True)
class _Stream:
    """A stream's items that a later window may still hold."""

    items: list[StreamItem] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    base: int = 0

    def content(self) -> StreamContent:
        return StreamContent(self.times, self.items, self.base)

    def drop(self, count: int) -> None:
        if count > 0:
            del self.items[:count], self.times[:count]
            self.base += count


class WindowRunner:
    """Plan, evaluator and kept items of one registered window query."""

    def __init__(
        self,
        query: RegisteredQuery,
        plan: WindowPlan,
        evaluator: WindowEvaluator,
        state: WindowState | None = None,
        clock: Callable[[], str] | None = None,
    ) -> None:
        self.query = query
        self.plan = plan
        self.replay = WindowReplay(plan, evaluator, query.id)  # blank nodes named after the query
        self.state = state if state is not None else fresh_state(query)
        self.clock = clock or (lambda: Timestamp.now().lexical)
        self._streams = {iri: _Stream() for iri in plan.streams}
        self._pending: list[tuple[int, int]] = []
        """Content change: (time, log position of its first event) of the event times after `done`."""
        self.backlog = False
        """Final evaluation times are left for the next steps (`MAX_EVALUATIONS_PER_STEP`)."""

    @classmethod
    def restore(
        cls,
        query: RegisteredQuery,
        plan: WindowPlan,
        evaluator: WindowEvaluator,
        snapshot: bytes | None,
        clock: Callable[[], str] | None = None,
    ) -> WindowRunner:
        """A runner from a checkpoint's payload (it re-reads the log from the payload's
        position), or from the query's start."""
        state = load_window_state(snapshot) if snapshot is not None else None
        return cls(query, plan, evaluator, state, clock)

    @property
    def position(self) -> int:
        return self.state.position

    @property
    def settled(self) -> int:
        """The log position before which every evaluation is made: with a backlog, the last
        record read is not done with (its time made the closes of the backlog final)."""
        return self.state.position - 1 if self.backlog else self.state.position

    def snapshot(self) -> bytes:
        """The state, with `position` moved back to the oldest record a later evaluation needs."""
        kept = [s.items[0].event for s in self._streams.values() if s.items]
        kept.extend(position for _, position in self._pending[:1])
        state = WindowState(**asdict(self.state))
        state.position = min([*kept, self.state.position])
        return dump_window_state(state)

    def created(self, count: int) -> None:
        self.state.match_count += count

    # ------------------------------------------------------------------ the step

    def step(self, records: Sequence[LogRecord]) -> list[EvaluationGraph]:
        """Consume consecutive log records from `position`; returns the graphs of the evaluations
        that became final, in time order (after a restore, some may have been returned before);
        at most `MAX_EVALUATIONS_PER_STEP` of them: with a `backlog`, a step without records
        evaluates the next ones."""
        if not records and not self.backlog:
            return []
        state = self.state
        if records:
            if records[0].position != state.position:
                raise ValueError(f"expected log position {state.position}, got {records[0].position}")
            self.take(records)
            state.position = records[-1].position + 1
            state.read_to = max(state.read_to, state.position)
        evaluations = self._evaluate()
        self._forget()
        return self._graphs(evaluations)

    def take(self, records: Sequence[LogRecord]) -> None:
        """Read records into the windows without evaluating or moving `position`: a REGISTER
        STREAM producer (rsep.plugin.service.producers) reads an ingest request's events before
        they are in the log, under a position that is a lower bound of theirs."""
        fresh: dict[str, list[int]] = {}
        for record in records:
            self._read(record, fresh)
        self._extend_end(fresh)

    def advance(self, horizon: int) -> list[Evaluation]:
        """Evaluate every evaluation time in (done, horizon], whatever `end` says (a producer
        evaluates every close the log passes, docs/endpoint.md), then forget what no later
        window holds."""
        evaluations = self._evaluate_to(horizon)
        self._forget()
        return evaluations

    def skip_to(self, done: int) -> None:
        """Take every evaluation time up to `done` as evaluated: a producer's progress is read
        from the log, which holds its output up to there (rsep.plugin.service.producers)."""
        self.state.done = done
        self._forget()

    def _read(self, record: LogRecord, fresh: dict[str, list[int]]) -> None:
        state = self.state
        event = record.event
        ticks = to_ticks(event.time.seconds)
        state.watermark = ticks if state.watermark is None else max(state.watermark, ticks)
        if state.t0 is None and event.stream != WATERMARK_STREAM:
            state.t0 = ticks  # registered on an empty log: the first event read (a mark is none)
        stream = self._streams.get(event.stream)
        if stream is None:
            return
        if record.position >= state.read_to:
            state.event_count += 1
        state.numeric = state.numeric and event.time.numeric
        if state.first is None:
            state.first = ticks
        for line in event.ntriples.splitlines():
            if line.strip():
                stream.items.append(StreamItem(ticks, event.time, line, record.position, event.start))
                stream.times.append(ticks)
                fresh.setdefault(event.stream, []).append(ticks)
        if self.plan.report is ReportPolicy.WINDOW_CLOSE:
            return
        later = state.done is None or ticks > state.done
        if later and (not self._pending or self._pending[-1][0] != ticks):
            self._pending.append((ticks, record.position))

    def _extend_end(self, fresh: dict[str, list[int]]) -> None:
        """`end` is `schedule_end` over every item read, which new items can only move on: to
        the last close (of any window, over the kept arrivals) up to the latest time a window
        holds one of the fresh items. The dropped items are held by no window after `done`."""
        held = latest_held([(spec.window, fresh.get(spec.stream, [])) for spec in self.plan.windows])
        if held is None:
            return
        windows = [(spec.window, self._streams[spec.stream].times) for spec in self.plan.windows]
        close = last_close_by(windows, held)
        if close is not None and (self.state.end is None or close > self.state.end):
            self.state.end = close

    def _evaluate(self) -> list[Evaluation]:
        """The evaluation times in (done, horizon]: final, and known to be evaluation times."""
        state = self.state
        if state.watermark is None:
            return []
        horizon = state.watermark - 1
        if self.plan.report is ReportPolicy.WINDOW_CLOSE:
            if state.end is None:
                return []
            horizon = min(horizon, state.end)
        return self._evaluate_to(horizon, MAX_EVALUATIONS_PER_STEP)

    def _evaluate_to(self, horizon: int, limit: int | None = None) -> list[Evaluation]:
        """The evaluation times in (done, horizon], from the query's first event on; under window
        close, the first `limit` of them (the rest are the `backlog`)."""
        state = self.state
        self.backlog = False
        if state.first is None:
            return []
        low = state.first if state.done is None else max(state.first, state.done + 1)
        if horizon < low:
            return []
        schedule: Schedule
        if self.plan.report is ReportPolicy.WINDOW_CLOSE:
            schedule = self._closes(low, horizon)
            if next(schedule.points(low, horizon + 1), None) is None:  # no close passed: skip the cuts
                state.done = horizon
                return []
            if limit is not None:
                cut = next(islice(schedule.points(low, horizon + 1), limit - 1, None), None)
                if cut is not None and cut < horizon:
                    horizon, self.backlog = cut, True
                    schedule = self._closes(low, horizon)
        else:
            schedule = ContentChange(t for t, _ in self._pending if t <= horizon)
            self._pending = [p for p in self._pending if p[0] > horizon]
        contents = [(spec.window, self._streams[spec.stream].content()) for spec in self.plan.windows]
        evaluations = self.replay.evaluate(schedule, contents, state.first)
        state.done = horizon
        return evaluations

    def _closes(self, low: int, horizon: int) -> WindowClose:
        """Window close's evaluation times in [low, horizon]."""
        state = self.state
        assert state.first is not None
        windows = [(spec.window, self._streams[spec.stream].times) for spec in self.plan.windows]
        t0 = state.first if state.t0 is None else min(state.t0, state.first)  # a legacy state's t0
        return WindowClose(windows, low, horizon, t0=t0)

    def evaluation_times(self, horizon: int, limit: int) -> int:
        """How many evaluation times `advance(horizon)` would evaluate, counted up to `limit` + 1
        (a producer refuses a request that would make it derive more,
        rsep.plugin.service.producers)."""
        state = self.state
        if state.first is None:
            return 0
        low = state.first if state.done is None else max(state.first, state.done + 1)
        if horizon < low:
            return 0
        if self.plan.report is ReportPolicy.WINDOW_CLOSE:
            return sum(1 for _ in islice(self._closes(low, horizon).points(low, horizon + 1), limit + 1))
        return sum(1 for t, _ in self._pending if t <= horizon)

    def _forget(self) -> None:
        """Drop the items that no window can hold at a time after `done`."""
        done = self.state.done
        if done is None:
            return
        for iri, stream in self._streams.items():
            needed = [
                first_needed(s.window, stream.times, done) for s in self.plan.windows if s.stream == iri
            ]
            stream.drop(min(needed, default=len(stream.items)))

    def _graphs(self, evaluations: Sequence[Evaluation]) -> list[EvaluationGraph]:
        if not evaluations:
            return []
        detected = self.clock()
        plan = self.plan
        graphs = []
        for evaluation in evaluations:
            rows = evaluation.answer.rows
            variables = plan.projection if plan.projection is not None else _seen(rows)
            if plan.form is not Form.SELECT:
                variables = ()
            query, numeric = self.query, self.state.numeric
            form, ordered = plan.form, plan.ordered
            graphs.append(
                evaluation_graph(query.id, query.iri, form, evaluation, variables, numeric, detected, ordered)
            )
        return graphs


def _seen(rows: Sequence[dict[str, str]]) -> tuple[str, ...]:
    """SELECT *'s variables: those bound in the answer, in order of appearance."""
    return tuple(dict.fromkeys(name for row in rows for name in row))


# ---------------------------------------------------------------------- snapshots


def dump_window_state(state: WindowState) -> bytes:
    return checkpoints.encode("window", asdict(state))


def load_window_state(data: bytes) -> WindowState:
    return WindowState(**checkpoints.decode(data, "window", _legacy_window))


def _legacy_window(data: bytes) -> dict[str, Any]:
    """The format before the checkpoint format: `("rsep-window-runner", 1, WindowState fields)`."""
    payload = checkpoints.load_pickle(data)
    if not (isinstance(payload, tuple) and len(payload) == 3 and payload[0] == "rsep-window-runner"):
        raise checkpoints.CheckpointFormatError("not a window query's checkpoint")
    if payload[1] != 1:
        raise checkpoints.CheckpointFormatError(f"window checkpoint format {payload[1]} is not 1")
    fields: dict[str, Any] = payload[2]
    return fields
