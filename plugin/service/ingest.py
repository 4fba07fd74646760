"""One door for clients' events into the log: `Ingest.submit`, for every ingest route.

Without an event-time policy, a request's events must follow the log's newest in time order and
are appended at once (with what REGISTER STREAM producers derive, `Producers.append`). With one
(`--max-lateness`, `--idle-timeout` or `--late side`), they go through the reorder buffer
(rsep.plugin.service.reorder): held, durable, and released in time order as the watermark
passes them; an event older than the watermark is refused whole-request (`LateEventError`, which
names the watermark) or, under `--late side`, kept in the late-events graph and counted.

A release that the log cannot take (a full disk) leaves the events held and durable in the
journal: the request that brought them was acknowledged, and the next request or idle tick
releases them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rsep.plugin.errors import StorageFailure
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, LateEventError, LogRecord
from rsep.plugin.service.producers import Appended, Producers
from rsep.plugin.service.reorder import ReorderBuffer

logger = logging.getLogger("rsep.service")


class LateSink(Protocol):
    """Where `--late side` keeps late events (rsep.plugin.store.late_events)."""

    def keep(self, events: Sequence[GraphEvent], watermark: Timestamp) -> list[str]:
        """Store the events, each in a graph of its own, listed with the watermark they missed;
        returns the graphs' IRIs."""
        ...


@dataclass(frozen=True, slots=True)
class Submitted:
    """What one request did."""

    accepted: int
    """The client's events taken (appended or held)."""
    appended: Appended | None
    """What it released into the log (None: nothing; held events go later)."""
    late: tuple[str, ...] = ()
    """The graphs its late events were kept in (`--late side`)."""
    watermark: Timestamp | None = None
    held: int = 0
    """Events the buffer holds after it (of every request)."""


@dataclass(slots=True)
class LateCounts:
    refused: int = 0
    kept: int = 0


class Ingest:
    """The log's writer for clients: in order, or through the reorder buffer."""

    def __init__(
        self,
        log: EventLog,
        producers: Producers,
        notify: Callable[[Sequence[LogRecord]], None],
        buffer: ReorderBuffer | None = None,
        late_sink: LateSink | None = None,
    ) -> None:
        self.log = log
        self.producers = producers
        self.notify = notify
        self.buffer = buffer
        self.late_sink = late_sink
        self.late = LateCounts()
        self.lock = threading.Lock()
        """Serialises requests (arrival times and blank-node scopes need the log's state) and
        the registrations of producers (which start at the head of the log)."""

    def scope(self) -> str:
        """A prefix unique to the next request, for its blank nodes (call under `lock`)."""
        if self.buffer is None:
            return f"r{self.log.next_position}"
        return f"j{self.buffer.journal.next_position}"

    def newest(self) -> Timestamp | None:
        """The newest time accepted, to stamp events posted without one (call under `lock`)."""
        newest = self.log.newest
        buffered = None if self.buffer is None else self.buffer.newest
        if buffered is None or newest is None or buffered <= newest.seconds:
            return newest
        return Timestamp.at(buffered, newest.numeric)

    def submit(self, events: Sequence[GraphEvent], lateness: float | None = None) -> Submitted:
        """Take a request's events (call under `lock`). Raises LateEventError or MixedTimeError
        storing nothing, and what the log raises when it cannot store them."""
        buffer = self.buffer
        if buffer is None:
            if lateness is not None:
                raise LateEventError(
                    "max-lateness needs the endpoint's reorder buffer: start it with --max-lateness"
                )
            appended = self._append(events)
            return Submitted(len(events), appended)
        late = buffer.late(events)
        if late and self.late_sink is None:
            self.late.refused += len(late)
            raise LateEventError(_late_message(late, buffer, len(events)))
        late_ids = {id(event) for event in late}
        on_time = [event for event in events if id(event) not in late_ids]
        if on_time:
            buffer.hold(on_time, lateness)
        kept: list[str] = []
        if late and self.late_sink is not None:
            watermark = buffer.watermark_time()
            assert watermark is not None
            kept = self.late_sink.keep(late, watermark)
            self.late.kept += len(late)
        released = self.release()
        return Submitted(len(on_time), released, tuple(kept), buffer.watermark_time(), buffer.held)

    def release(self) -> Appended | None:
        """Release what the watermark passed (call under `lock`; the idle ticker calls it too)."""
        if self.buffer is None:
            return None
        try:
            return self.buffer.release(self._release)
        except StorageFailure as error:
            logger.error("the log could not take released events (they stay held): %s", error)
            return None

    def flush(self) -> Appended | None:
        """Release every held event, in time order (at start-up without an event-time policy:
        what an earlier run held is not lost). Raises what the log raises."""
        return None if self.buffer is None else self.buffer.release(self._release, everything=True)

    def _append(self, events: Sequence[GraphEvent], *, bounded: bool = True) -> Appended:
        appended = self.producers.append(events, bounded=bounded)
        self.notify(appended.records)
        return appended

    def _release(self, events: Sequence[GraphEvent]) -> Appended:
        """Held events going to the log: acknowledged already, so no producer limit refuses them
        (`Producers.append`'s `bounded`)."""
        return self._append(events, bounded=False)


def _late_message(late: list[GraphEvent], buffer: ReorderBuffer, total: int) -> str:
    event = late[0]
    watermark = buffer.watermark_time()
    others = f" ({len(late) - 1} more of the request's {total} events too)" if len(late) > 1 else ""
    return (
        f"event {event.name} at {event.time.lexical} is older than the watermark "
        f"{watermark.lexical if watermark else ''}{others}: every event before it has been released "
        "to the queries in time order (allowed lateness: --max-lateness or max-lateness=); nothing "
        "of this request was stored (--late side keeps late events in <urn:rsep:late>)"
    )
