"""Streams that registered queries produce: a C-SPARQL `REGISTER STREAM <s> AS CONSTRUCT ...`
whose evaluations become events of <s> in the event log, which every registered query reading
`FROM STREAM <s>` consumes like any event (docs/endpoint.md, "Streams produced by queries").

The log is totally ordered by time, and a close t' of a producer's window is final once an event
later than t' is accepted. So producers are evaluated inside the ingest request, before it is
appended (`Producers.append`): the request's events are taken in groups of one time u, and before
each group every close t' < u not evaluated yet is evaluated, over the windows' logged events and
the events upstream producers derived; the events derived (one per evaluation that constructed
something, stamped t', as `rsep run --rule` makes them) go into the request's one fsynced log
record just before the group. That keeps the log in time order: every close before the previous
group was evaluated by then, so t' is at or after every event before it, and a derived event at
t' comes after the events at t'. A producer evaluates every close the log passes, from its first
event on, not only up to the last close whose window holds an item (`WindowRunner.advance`).

Producers run in dependency order (rsep.plugin.windows.chain): one reading another's stream sees
its events of the same close. A second producer of a stream and producers reading each other's
streams in a cycle are refused at registration (`check`).

A producer whose windows or evaluations raise stops producing (it is marked failed, with the
error, in its registration) while the request and the other producers go on: a client's valid
events are never refused for a producer's fault.

A producer's progress is the log's own: after a record whose last event is at L (a client event:
derived events always precede one), every close before L is evaluated and none from L on. So a
producer is rebuilt on start by re-reading its items from the log, from the position its window
query's latest checkpoint keeps (only a lower bound of the oldest item a later window needs,
never its progress) or else from its registration, and taking every close before L as done:
nothing besides the log says how far it went. A crash before the record is durable loses the
request, which was not acknowledged, with its derived events.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import TypeVar

from rsep.plugin.algebra.events import ConstructForm, RegistrationKind
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.engine import FAILED, PlanCompiler, WindowEvaluatorFactory
from rsep.plugin.service.registry import RegisteredQuery, Registry
from rsep.plugin.service.window_runner import WindowRunner, WindowState, fresh_state, load_window_state
from rsep.plugin.windows.chain import CycleError, dependency_order
from rsep.plugin.windows.output import evaluation_event
from rsep.plugin.windows.window_functions import to_ticks
from rsep.plugin.windows.window_plan import WindowPlan
from rsep.plugin.windows.window_replay import WindowEvaluator

logger = logging.getLogger("rsep.service")

_T = TypeVar("_T")

MAX_DERIVED_CLOSES = 100_000
"""The window closes one ingest request may make a producer evaluate. Each one is evaluated under
the ingest lock and may derive an event of the request's record: an event of year 9999 after
one of today, under a 1-second step, was 2.5e11 of them, and ingest (and DELETE of the
producer) waited for ever while memory grew. A day under a 1-second step is 86,400."""


class TooManyCloses(InvalidInput):
    """A request whose time would make a producer evaluate more than `MAX_DERIVED_CLOSES`
    closes: refused whole (nothing of it is stored), the producer going on."""


READ_BATCH = 10_000
"""Log records a rebuilding producer takes at a time (it forgets what no later window holds)."""


class ProducerError(InvalidInput):
    """A REGISTER STREAM that cannot produce its stream here (the message says why)."""


@dataclass(frozen=True, slots=True)
class Appended:
    """What one ingest request appended: every record in log order, and the derived ones."""

    positions: range
    records: tuple[LogRecord, ...]
    derived: tuple[LogRecord, ...]

    @property
    def accepted(self) -> int:
        """The client's events."""
        return len(self.records) - len(self.derived)


def produced_stream(plan: QueryPlan | WindowPlan) -> str | None:
    """The stream a compiled query produces: a C-SPARQL `REGISTER STREAM <iri> AS CONSTRUCT`."""
    return plan.query.produced_stream if isinstance(plan, WindowPlan) else None


def registration_warnings(plan: QueryPlan | WindowPlan) -> tuple[str, ...]:
    """Why a `REGISTER STREAM` query produces no stream, when it does not: it still registers
    (its evaluations are written as graphs, as any window query's), but whoever wrote it meant
    other queries to read its output."""
    registration = plan.query.registration
    if registration is None or registration.kind is not RegistrationKind.STREAM or produced_stream(plan):
        return ()
    only = "so the query only writes its evaluation graphs (no event of any stream)"
    if not isinstance(plan.query.form, ConstructForm):
        name = registration.name if registration.stream is None else f"<{registration.stream}>"
        return (f"REGISTER STREAM {name} AS a SELECT or ASK produces no stream: only a "
                f"CONSTRUCT's evaluations become a stream's events, {only}",)  # fmt: skip
    return (f"REGISTER STREAM {registration.name} names no stream: a name that is not an absolute IRI "
            f"stays a relative IRI here (it precedes the query's BASE), {only}; write REGISTER STREAM "
            "<http://...> AS to produce a stream other queries read",)  # fmt: skip


@dataclass(slots=True)
class Producer:
    """One producing query: its plan, its store side and its window runner."""

    query: RegisteredQuery
    plan: WindowPlan
    stream: str
    evaluator: WindowEvaluator
    runner: WindowRunner | None = None
    error: str | None = None
    stale: bool = True
    """Its runner must be rebuilt from the log (not built yet, or an append failed)."""
    evaluated: int = 0
    """Closes the request being appended has made it evaluate (`MAX_DERIVED_CLOSES`)."""

    def derive(self, horizon: int, event: GraphEvent | None = None) -> list[GraphEvent]:
        """The events of the closes up to `horizon` (ticks) not evaluated yet, which `event`
        makes final (TooManyCloses past `MAX_DERIVED_CLOSES`; None: no limit)."""
        assert self.runner is not None
        left = MAX_DERIVED_CLOSES - self.evaluated
        count = self.runner.evaluation_times(horizon, left) if event is not None else 0
        self.evaluated += count
        if event is not None and count > left:
            raise TooManyCloses(
                f"event {event.name} at {event.time.lexical} would make the REGISTER STREAM query "
                f"{self.query.id} (producing <{self.stream}>) evaluate more than {MAX_DERIVED_CLOSES:,} "
                "window closes in one request, each one an event of it: post events in between "
                "(on any stream: a close is final once a later event arrives), or unregister the query"
            )
        numeric = self.runner.state.numeric
        return [
            evaluation_event(self.stream, e.time, numeric, e.answer.triples)
            for e in self.runner.advance(horizon)
        ]


class Producers:
    """The registered producers of one endpoint; `append` is how ingest writes the log."""

    def __init__(
        self,
        log: EventLog,
        registry: Registry,
        compiler: PlanCompiler,
        evaluators: WindowEvaluatorFactory,
        checkpoints: CheckpointStore | None = None,
    ) -> None:
        self.log = log
        self.registry = registry
        self.compiler = compiler
        self.evaluators = evaluators
        self.checkpoints = checkpoints
        self._producers: dict[str, Producer] = {}
        self._order: list[Producer] = []
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ registrations

    def load(self) -> None:
        """Take up the registered producers (a query that does not compile any more is the
        engine's to report)."""
        with self._lock:
            for query in self.registry.all():
                try:
                    plan = self.compiler(query)
                except Exception:
                    continue
                stream = produced_stream(plan)
                if stream is not None and query.id not in self._producers:
                    assert isinstance(plan, WindowPlan)
                    self._producers[query.id] = Producer(query, plan, stream, self.evaluators(plan))
            self._order = self._ordered(list(self._producers.values()))
            self._rebuild_stale()

    def check(self, plan: WindowPlan) -> None:
        """Raise ProducerError if `plan` may not produce its stream: another query produces it, or
        it would read its own output through the streams it reads."""
        stream = produced_stream(plan)
        assert stream is not None
        with self._lock:
            owner = self.owner(stream)
            if owner is not None:
                raise ProducerError(
                    f"<{stream}> is produced by the continuous query {owner} already: "
                    "a stream has one REGISTER STREAM query"
                )
            candidate = (stream, plan.streams)
            known = [(p.stream, p.plan.streams) for p in self._producers.values()]
            try:  # from the candidate first, so that a cycle is told from its stream on
                dependency_order([candidate, *known], lambda item: item[0], lambda item: item[1])
            except CycleError as error:
                cycle = " -> ".join(f"<{s}>" for s, _ in error.cycle)
                raise ProducerError(
                    f"REGISTER STREAM <{stream}> would read its own output: {cycle} "
                    "(each stream's query reads the next one)"
                ) from None

    def add(self, query: RegisteredQuery, plan: WindowPlan) -> None:
        """Start producing from the head of the log, where `query.start` must be (a producer
        cannot add events to the log's past)."""
        with self._lock:
            self.check(plan)
            if query.start != self.log.next_position:
                raise ProducerError(
                    f"a REGISTER STREAM query starts at the head of the log ({self.log.next_position}), "
                    f"not at {query.start}: its events cannot go into the log's past"
                )
            stream = produced_stream(plan)
            assert stream is not None
            producer = Producer(query, plan, stream, self.evaluators(plan))
            self._attempt(producer, self._rebuild, producer)
            self._producers[query.id] = producer
            self._order = self._ordered(list(self._producers.values()))

    def remove(self, query_id: str) -> None:
        """Stop producing (the events already derived stay in the log)."""
        with self._lock:
            if self._producers.pop(query_id, None) is not None:
                self._order = self._ordered(list(self._producers.values()))

    def owner(self, stream: str) -> str | None:
        """The id of the query producing `stream`, if any."""
        with self._lock:
            return next((p.query.id for p in self._producers.values() if p.stream == stream), None)

    def produced(self, query_id: str) -> str | None:
        """The stream a registered query produces, if it is a producer."""
        with self._lock:
            producer = self._producers.get(query_id)
            return producer.stream if producer is not None else None

    def failure(self, query_id: str) -> str | None:
        """Why a producer stopped producing, if it did."""
        with self._lock:
            producer = self._producers.get(query_id)
            return producer.error if producer is not None else None

    # ------------------------------------------------------------------ ingest

    def append(self, events: Sequence[GraphEvent], *, bounded: bool = True) -> Appended:
        """Append a request's events to the log, each time group preceded by the events the
        producers derive at the closes it makes final, in ONE fsynced record. Raises what
        `EventLog.append` raises (OutOfOrderError), before anything is evaluated or stored, and
        TooManyCloses, storing nothing, if `bounded` (not for events a reorder buffer releases:
        they were acknowledged when it took them)."""
        with self._lock:
            self.log.check_order(events)
            self._rebuild_stale()
            active = [p for p in self._order if p.error is None]
            if not active or not events:
                return _appended(self.log.append(events), [(event, False) for event in events])
            head = self.log.next_position
            try:
                sequence = self._derive(active, events, head, bounded)
            except TooManyCloses:
                for producer in active:  # their windows hold events of a request refused
                    producer.stale = True
                raise
            try:
                positions = self.log.append([event for event, _ in sequence])
            except BaseException:
                for producer in active:  # their windows hold events the log does not
                    producer.stale = True
                raise
            for producer in active:
                if producer.error is None:
                    assert producer.runner is not None
                    producer.runner.state.position = producer.runner.state.read_to = positions.stop
            return _appended(positions, sequence)

    def _derive(
        self, active: list[Producer], events: Sequence[GraphEvent], head: int, bounded: bool
    ) -> list[tuple[GraphEvent, bool]]:
        """The request's events with the derived ones before each time group, flagged True.
        The producers read them under the position `head`, a lower bound of where they go."""
        sequence: list[tuple[GraphEvent, bool]] = []
        for producer in active:
            producer.evaluated = 0
        last = self.log.last_time
        for ticks, group in groupby(events, key=lambda e: to_ticks(e.time.seconds)):
            clients = list(group)
            derived = self._closes_before(active, ticks, head, clients[0] if bounded else None)
            for event in derived:
                event = _not_before(event, last)
                sequence.append((event, True))
                last = event.time.seconds
            sequence.extend((client, False) for client in clients)
            last = clients[-1].time.seconds
            self._take(active, clients, head)
        return sequence

    def _closes_before(
        self, active: list[Producer], ticks: int, head: int, event: GraphEvent | None
    ) -> list[GraphEvent]:
        """Every producer's events of its closes before `ticks` (`event`'s time; None: no limit
        on their number), in dependency order, each fed the events of the producers before it
        first; merged by time (upstream first at one time)."""
        derived: list[tuple[int, int, GraphEvent]] = []
        for rank, producer in enumerate(active):
            self._take([producer], [one for *_, one in sorted(derived, key=_time_rank)], head)
            made = None if producer.error else self._attempt(producer, producer.derive, ticks - 1, event)
            derived.extend((to_ticks(one.time.seconds), rank, one) for one in made or ())
        return [one for *_, one in sorted(derived, key=_time_rank)]

    def _take(self, producers: Iterable[Producer], events: Sequence[GraphEvent], position: int) -> None:
        """Read events into the windows of the producers still producing."""
        if not events:
            return
        records = [LogRecord(position, event) for event in events]
        for producer in producers:
            if producer.error is None and producer.runner is not None:
                self._attempt(producer, producer.runner.take, records)

    def _attempt(self, producer: Producer, step: Callable[..., _T], *args: object) -> _T | None:
        """One step of one producer; if it raises, the producer stops (marked failed) and the
        request and the other producers go on: None then."""
        try:
            return step(*args)
        except TooManyCloses:
            raise
        except Exception as error:
            self._fail(producer, error)
            return None

    # ------------------------------------------------------------------ rebuilding from the log

    def _rebuild_stale(self) -> None:
        for producer in self._order:
            if producer.stale and producer.error is None:
                self._attempt(producer, self._rebuild, producer)

    def _rebuild(self, producer: Producer) -> None:
        """Re-read the producer's items from the log and take every close before the log's
        newest time as evaluated (its output up to there is in the log)."""
        start = self._hint(producer.query)
        runner = WindowRunner(producer.query, producer.plan, producer.evaluator, start)
        last = self.log.last_time
        done = to_ticks(last) - 1 if last is not None else None
        head = self.log.next_position
        chunk: list[LogRecord] = []
        for record in self.log.read(start.position, head):
            chunk.append(record)
            if len(chunk) == READ_BATCH:
                _catch_up(runner, chunk, done)
        _catch_up(runner, chunk, done)
        runner.state.position = runner.state.read_to = head
        producer.runner, producer.stale = runner, False

    def _hint(self, query: RegisteredQuery) -> WindowState:
        """Where to re-read from: the position the query's window runner last checkpointed (the
        oldest item its later windows need; a producer is at least as far on, so needs no older
        one), with the first event's time; else the registration."""
        start = fresh_state(query)
        if self.checkpoints is None:
            return start
        try:
            payload = self.checkpoints.load(query.id)
            saved = load_window_state(payload) if payload is not None else None
        except Exception:
            return start
        if saved is None or saved.position < query.start:
            return start
        return WindowState(
            saved.position, saved.position, first=saved.first, t0=saved.t0, numeric=saved.numeric
        )

    def _fail(self, producer: Producer, error: Exception) -> None:
        producer.error = f"{type(error).__name__}: {error}"
        logger.error("query %s stopped producing: %s", producer.query.id, producer.error, exc_info=error)
        self.registry.set_status(producer.query.id, FAILED, producer.error)

    @staticmethod
    def _ordered(producers: list[Producer]) -> list[Producer]:
        try:
            return dependency_order(producers, lambda p: p.stream, lambda p: p.plan.streams)
        except CycleError:  # registrations refuse cycles; files edited by hand may not
            logger.error("producers read each other's streams in a cycle; none of them runs")
            return []


def _catch_up(runner: WindowRunner, chunk: list[LogRecord], done: int | None) -> None:
    """Read logged records (then empty `chunk`) into a rebuilding producer's windows, forgetting
    what no window after `done` holds."""
    runner.take(chunk)
    chunk.clear()
    if done is not None:
        runner.skip_to(done)


def _time_rank(item: tuple[int, int, GraphEvent]) -> tuple[int, int]:
    return item[0], item[1]


def _not_before(event: GraphEvent, seconds: float | None) -> GraphEvent:
    """A derived event at close t' follows the events at t' (in microsecond ticks, as windows
    count time); an event a fraction of a microsecond after t' would still be later in seconds,
    which the log orders by, so the derived event's seconds are raised to it (its lexical time
    stays t')."""
    if seconds is None or event.time.seconds >= seconds:
        return event
    return replace(event, time=replace(event.time, seconds=seconds))


def _appended(positions: range, sequence: Sequence[tuple[GraphEvent, bool]]) -> Appended:
    records = tuple(LogRecord(p, event) for p, (event, _) in zip(positions, sequence, strict=True))
    derived = tuple(r for r, (_, flag) in zip(records, sequence, strict=True) if flag)
    return Appended(positions, records, derived)
