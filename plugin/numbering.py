"""Events numbered for the NFA: ids in arrival order, dense ranks by timestamp.

Every event of a query's streamset gets an id (its position: in the merged files of `rsep run`,
or in the endpoint's event log) and a *rank*, the dense number of its timestamp (events sharing
a timestamp share it). Strict contiguity, "no event strictly between" (SPAseq Def. 12), is then
"consecutive ranks", which stays true after the events are split by partition key. Ranks are
numbered over the whole streamset before any split: every driver of the per-key step
(`rsep.plugin.nfa.keyed`) numbers here.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.log import LogRecord


@dataclass(frozen=True, slots=True)
class NumberedEvent:
    """An event with its id (arrival position) and rank (dense timestamp number)."""

    id: int
    rank: int
    event: GraphEvent


def number_events(streams: Sequence[Sequence[GraphEvent]]) -> list[NumberedEvent]:
    """Merge per-stream event lists into one streamset order (by time; ties
    keep the order of `streams`, then of each list). Events sharing a
    timestamp share a rank, so strict contiguity ignores them (Def. 12)."""
    ordered = sorted(  # (seconds, s, i) is unique, so the events themselves are never compared
        (event.time.seconds, s, i, event)
        for s, events in enumerate(streams)
        for i, event in enumerate(events)
    )
    numbered: list[NumberedEvent] = []
    rank, last = -1, None
    for event_id, (seconds, _, _, event) in enumerate(ordered):
        if seconds != last:
            rank, last = rank + 1, seconds
        numbered.append(NumberedEvent(event_id, rank, event))
    return numbered


def number_records(
    records: Iterable[LogRecord], streams: Collection[str], last_rank: int, last_time: float | None
) -> tuple[list[NumberedEvent], int, float | None]:
    """`number_events`, incrementally, over the event log: the events of `streams` among log
    records, ids = log positions, dense ranks by timestamp going on from `last_rank` at
    `last_time`. Returns them and the new (rank, time). No `streams` means every stream
    (EP-SPARQL reads one merged stream)."""
    numbered = []
    for record in records:
        event = record.event
        if streams and event.stream not in streams:
            continue
        seconds = event.time.seconds
        if last_time is None or seconds > last_time:
            last_rank, last_time = last_rank + 1, seconds
        elif seconds < last_time:
            raise InvalidInput(f"log position {record.position} is older than the event before it")
        numbered.append(NumberedEvent(record.position, last_rank, event))
    return numbered, last_rank, last_time


def number_stream(sources: Sequence[Iterable[GraphEvent]]) -> Iterator[NumberedEvent]:
    """`number_events` as the events come: each source in time order (a file being read), merged
    by time, ties in the order of `sources` and then of each source, exactly as `number_events`
    orders them."""
    merged = heapq.merge(*(_keyed(s, source) for s, source in enumerate(sources)), key=lambda item: item[0])
    rank, last = -1, None
    for event_id, ((seconds, _, _), event) in enumerate(merged):
        if seconds != last:
            rank, last = rank + 1, seconds
        yield NumberedEvent(event_id, rank, event)


def _keyed(s: int, source: Iterable[GraphEvent]) -> Iterator[tuple[tuple[float, int, int], GraphEvent]]:
    for i, event in enumerate(source):
        yield (event.time.seconds, s, i), event
