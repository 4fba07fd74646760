"""The window runtime: replay streams through a plan's windows and evaluate at each time of ET.

For each evaluation time t of the report policy's schedule, each window's
content is its window function applied to its stream at t
(rsep.plugin.windows.window_functions); the evaluator (the Oxigraph adapter,
rsep.plugin.store.windows) answers the plan's SPARQL query over those
contents. Within a schedule segment the contents do not change, so the
answer is computed once per segment and reported at each of its times; an
empty answer skips the segment. Pure: the evaluator is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from rsep.plugin.algebra.events import ConstructForm, NowWindow, ReportPolicy, TimeWindow, Window
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.windows.construct import ConstructTemplate
from rsep.plugin.windows.schedule import ContentChange, Schedule, WindowClose
from rsep.plugin.windows.window_functions import Extent, extent, to_ticks
from rsep.plugin.windows.window_plan import WindowPlan


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One triple of a stream with its event's timestamp. Time-based windows take every triple of
    the events they hold, so they hold whole graphs; count windows count triples (C-SPARQL
    `[RANGE TRIPLES n]`, a stream of triples)."""

    ticks: int
    time: Timestamp
    triple: str
    """One N-Triples statement, `s p o .`"""
    event: int = 0
    """The event it belongs to: its position in the stream, in time order (CQELS-CEP matches
    graph patterns per event)."""
    start: Timestamp | None = None
    """The start of the interval its event spans (`prov:startedAtTime`), None for an instantaneous
    event: CQELS-CEP's windows keep intervals (§4.1); the other window queries read `time`."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What one evaluation returns: solutions (SELECT; one empty solution for a true ASK) as
    N-Triples terms, or the constructed triples (CONSTRUCT) as N-Triples statements. A CONSTRUCT's
    evaluator answers the template's solutions (`rows`), which the runtime instantiates per
    evaluation time (rsep.plugin.windows.construct)."""

    rows: tuple[dict[str, str], ...] = ()
    triples: tuple[str, ...] = ()
    spans: tuple[tuple[int, int] | None, ...] = ()
    """Per row, the interval of its mapping (CQELS-CEP's mappings with intervals, §4.2), in
    ticks; empty, or None for a row, when solutions carry no interval."""

    def __bool__(self) -> bool:
        return bool(self.rows or self.triples)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluation that answered something: its time, the bounds of its windows (the earliest
    lower bound, exclusive for time-based windows, and the latest upper bound: t' for a sliding
    window, t for the others) and the answer."""

    time: int
    start: int
    end: int
    answer: Answer


class WindowEvaluator(Protocol):
    """What the runtime needs from a store: the answer over given window contents."""

    def evaluate(self, contents: Sequence[Sequence[StreamItem]]) -> Answer: ...


@runtime_checkable
class ClippingEvaluator(Protocol):
    """An evaluator whose answer also depends on the windows' bounds at the evaluation time
    (CQELS-CEP clips the intervals of the events a window holds to it, §4.1): `bounds` per window
    is (clip start or None, end), see `clip_bounds`."""

    def evaluate_within(
        self, contents: Sequence[Sequence[StreamItem]], bounds: Sequence[tuple[int | None, int]]
    ) -> Answer: ...


@runtime_checkable
class VersionedEvaluator(Protocol):
    """An evaluator whose answers also depend on background knowledge that may change between
    evaluations (a SPARQL Update on the endpoint): an answer is reused only while the version of
    that knowledge has not moved either."""

    @property
    def knowledge_version(self) -> int: ...


@dataclass(frozen=True, slots=True)
class StreamContent:
    """A stream's items in time order, and their ticks (for the window functions' bisection)."""

    times: list[int]
    items: list[StreamItem]
    base: int = 0
    """The index of `items[0]` among all the stream's items (a continuous query drops the items no
    later window holds): answers are reused while the windows hold the same items."""


def stream_items(events: Iterable[GraphEvent]) -> StreamContent:
    """A stream's triples in time order (stable for equal timestamps)."""
    items = [
        StreamItem(to_ticks(event.time.seconds), event.time, line, index, event.start)
        for index, event in enumerate(sorted(events, key=lambda e: e.time.seconds))
        for line in event.ntriples.splitlines()
        if line.strip()
    ]
    return StreamContent([item.ticks for item in items], items)


class WindowReplay:
    """Replays finite streams through a plan's windows."""

    def __init__(self, plan: WindowPlan, evaluator: WindowEvaluator, scope: str = "") -> None:
        """`scope` names the query in the blank nodes of its CONSTRUCT results (ConstructTemplate)."""
        self.plan = plan
        self.evaluator = evaluator
        self._versioned = isinstance(evaluator, VersionedEvaluator)
        self._clipping = plan.cep is not None and isinstance(evaluator, ClippingEvaluator)
        """Fixed for the replay's life: runtime-checkable Protocol checks are slow per evaluation."""
        form = plan.query.form
        self.template = ConstructTemplate(form.template, scope) if isinstance(form, ConstructForm) else None
        self._last: tuple[tuple[tuple[int | None, int], ...], Answer] | None = None

    def run(
        self, streams: Mapping[str, Sequence[GraphEvent]], until: int | None = None, t0: int | None = None
    ) -> list[Evaluation]:
        """Every evaluation with a non-empty answer, in time order. `streams` maps each stream
        IRI of the plan to its events. Under window close, `until` (ticks) extends the schedule
        to every close up to it, past the last close whose window holds an item (a REGISTER
        STREAM rule evaluates up to the run's last event, as a producer on the endpoint does),
        and only windows opening at or after `t0` (ticks: when the query was registered, at or
        before its first event, which it is by default; a later one counts as the first event:
        `rsep run --t0` refuses it) are evaluated."""
        return list(self.stream(streams, until, t0))

    def stream(
        self, streams: Mapping[str, Sequence[GraphEvent]], until: int | None = None, t0: int | None = None
    ) -> Iterator[Evaluation]:
        """`run`, each evaluation as soon as it is computed (`rsep run` prints it then)."""
        events = [event for iri in self.plan.streams for event in streams.get(iri, ())]
        if not events:
            return
        first = min(to_ticks(event.time.seconds) for event in events)
        per_stream = {iri: stream_items(streams.get(iri, ())) for iri in self.plan.streams}
        windows = [(spec.window, per_stream[spec.stream]) for spec in self.plan.windows]
        schedule = self._schedule(windows, events, first, until, first if t0 is None else min(t0, first))
        self._last = None
        for start, stop in schedule.segments():
            yield from self._stretch(schedule.points(start, stop), windows, first)

    def evaluate(
        self, schedule: Schedule, windows: list[tuple[Window, StreamContent]], first: int
    ) -> list[Evaluation]:
        """The evaluations of a schedule over the windows' streams (`first`: the landmark t0);
        continuous queries call it with the stretch of the schedule that became final."""
        out: list[Evaluation] = []
        for start, stop in schedule.segments():
            out.extend(self._stretch(schedule.points(start, stop), windows, first))
        return out

    def _stretch(
        self, times: Iterator[int], windows: list[tuple[Window, StreamContent]], first: int
    ) -> list[Evaluation]:
        """The evaluations of a stretch of constant window content: one answer, reported at each
        of its times with that time's window bounds."""
        t = next(times, None)
        if t is None:
            return []
        extents = [extent(window, stream.times, t, first) for window, stream in windows]
        answer = self._answer(extents, windows)
        if not answer:
            return []
        head = self._evaluation(t, extents, answer)
        if not head.answer:  # a CONSTRUCT whose solutions leave every template triple unbound
            return []
        out = [head]
        for u in times:
            at_u = [extent(w, stream.times, u, first) for w, stream in windows]
            out.append(self._evaluation(u, at_u, answer))
        return out

    def _evaluation(self, t: int, extents: Sequence[Extent], answer: Answer) -> Evaluation:
        """The evaluation at `t` of an answer; a CONSTRUCT's solutions, possibly reused from an
        earlier time, become this evaluation's triples, with blank nodes of its own (SPARQL 1.1
        §16.2.1: each evaluation is an answer of its own)."""
        if self.template is not None:
            answer = Answer(triples=self.template.triples(answer.rows, t))
        return _evaluation(t, extents, answer)

    def _answer(self, extents: list[Extent], windows: list[tuple[Window, StreamContent]]) -> Answer:
        """The evaluator's answer over the windows' contents, reused while they do not change."""
        key: tuple[tuple[int | None, int], ...]
        key = tuple((e.lo + s.base, e.hi + s.base) for e, (_, s) in zip(extents, windows, strict=True))
        if self._versioned:
            key += ((cast(VersionedEvaluator, self.evaluator).knowledge_version, 0),)
        clipping = self._clipping
        bounds = clip_bounds([w for w, _ in windows], extents) if clipping else ()
        key += bounds
        if self._last is None or self._last[0] != key:
            contents = [stream.items[e.lo : e.hi] for e, (_, stream) in zip(extents, windows, strict=True)]
            if clipping:
                self._last = (key, cast(ClippingEvaluator, self.evaluator).evaluate_within(contents, bounds))
            else:
                self._last = (key, self.evaluator.evaluate(contents))
        return self._last[1]

    def _schedule(
        self,
        windows: list[tuple[Window, StreamContent]],
        events: list[GraphEvent],
        first: int,
        until: int | None,
        t0: int,
    ) -> Schedule:
        if self.plan.report is ReportPolicy.WINDOW_CLOSE:
            pairs = [(window, stream.times) for window, stream in windows]
            closes = WindowClose(pairs, first, t0=t0)
            if until is None or (closes.end is not None and closes.end >= until):
                return closes
            return WindowClose(pairs, first, until, t0=t0)
        return ContentChange(to_ticks(event.time.seconds) for event in events)


def clip_bounds(windows: Sequence[Window], extents: Sequence[Extent]) -> tuple[tuple[int | None, int], ...]:
    """Per window, what CQELS-CEP's w_RANGE (§4.1) clips an interval [t1, t2] it holds to:
    t'1 = max(t1, t - T) and t'2 = min(t2, t). A time-based window clips its start to its lower
    bound (`[NOW]` is `[RANGE 0]`); a count window and a landmark clip no start (None)."""
    return tuple(
        (e.start if isinstance(w, TimeWindow | NowWindow) else None, e.end)
        for w, e in zip(windows, extents, strict=True)
    )


def _evaluation(t: int, extents: Sequence[Extent], answer: Answer) -> Evaluation:
    return Evaluation(t, min(e.start for e in extents), max(e.end for e in extents), answer)
