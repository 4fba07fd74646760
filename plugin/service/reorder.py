"""The reorder buffer: events accepted out of time order, held until the watermark passes them.

The log must stay in timestamp order across all streams (rank numbering and strict contiguity
rest on it, rsep.plugin.log). With an allowed lateness L (`--max-lateness`), ingest accepts an
event in any order as long as it is not older than the *watermark* W, holds it here, and releases
the held events to the log in timestamp order once W has passed them. So every engine sees the
sorted stream: results are those of an in-order ingest of the same events (ties keep the order
of arrival, as they do in order).

The watermark follows Flink's bounded out-of-orderness per source: each stream s that has posted
promises that its later events are at most L_s older than the newest it sent, so
W = min over streams of (newest_s - L_s), and W never goes back. With an idle timeout T
(`--idle-timeout`), a stream that sent nothing for T seconds of processing time stops holding W
back; when every stream is idle, W moves on with processing time from the newest event time N:
W = N + (seconds since the last post - T), so once every stream has been silent for T the held
events are released and window closes after the last event are reported as time passes, without
a heartbeat. (An event delayed by at most L that arrives after such a silence is still on time
when T > L and event time follows the clock; docs/endpoint.md, "Event time".) An event older
than W is *late*: the caller refuses it or keeps it aside (rsep.plugin.service.ingest).

Durability: a held event is in the *journal* (an unordered EventLog, fsynced) before the request
is acknowledged. A release appends the events older than W to the log, followed by a watermark
mark (an event with no triple on `WATERMARK_STREAM`, at W), in ONE log record. The log's newest
time is therefore the last released W, and an event journaled after that release is at or after
it (else it was late). So after a crash the held events are exactly the journal's events at or
after the log's newest time: neither lost nor released twice, whatever moment the crash hit.
The journal's segments that hold released events only are deleted after each release.
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rsep.plugin.durable import write_atomically
from rsep.plugin.errors import EngineUnavailable
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, check_kind
from rsep.plugin.vocabulary import WATERMARK_STREAM

_R = TypeVar("_R")

JOURNAL_SEGMENT = 10_000
"""Events per journal segment: released segments are deleted whole."""


@dataclass(frozen=True, slots=True)
class EventTimePolicy:
    """How the endpoint orders event time (docs/endpoint.md, "Event time")."""

    lateness: float = 0.0
    """Seconds an event may be older than its stream's newest (`--max-lateness`)."""
    idle_timeout: float | None = None
    """Seconds of processing time after which a silent stream stops holding the watermark back."""
    keep_late: bool = False
    """`--late side`: late events go to the late-events graph instead of being refused."""


@dataclass(slots=True)
class _Source:
    """What the watermark knows of one stream."""

    newest: float
    arrived: float
    """Processing time (monotonic seconds) of its last post."""
    lateness: float


def watermark_mark(seconds: float, numeric: bool) -> GraphEvent:
    """The log's record that no event before `seconds` comes any more."""
    return GraphEvent(WATERMARK_STREAM, f"<{WATERMARK_STREAM}>", Timestamp.at(seconds, numeric), "")


class ReorderBuffer:
    """Held events (a heap by time, then arrival), their journal, and the watermark."""

    def __init__(
        self,
        directory: Path,
        released_to: Timestamp | None,
        policy: EventTimePolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.journal = EventLog(directory, JOURNAL_SEGMENT, ordered=False)
        self._overrides_file = directory / "lateness.json"
        self._overrides: dict[str, float] = _read_overrides(self._overrides_file)
        """Streams' own lateness (`max-lateness=`), kept across restarts."""
        self.watermark = -math.inf if released_to is None else released_to.seconds
        """Every event before it is released (or was refused as late)."""
        self._numeric = None if released_to is None else released_to.numeric
        self._held: list[tuple[float, int, GraphEvent]] = []
        self._sources: dict[str, _Source] = {}
        self._recover()

    def _recover(self) -> None:
        """Hold again the journal's events at or after the released watermark; the journal's
        events rebuild each stream's newest time (their processing time is now)."""
        now = self.clock()
        for record in self.journal.read():
            event = record.event
            self._seen(event, now, self._overrides.get(event.stream))
            if event.time.seconds >= self.watermark:
                heapq.heappush(self._held, (event.time.seconds, record.position, event))

    # ------------------------------------------------------------------ state

    @property
    def held(self) -> int:
        return len(self._held)

    @property
    def numeric(self) -> bool | None:
        """The kind of the times seen (None: no event yet)."""
        return self._numeric if self._numeric is not None else self.journal.numeric

    @property
    def newest(self) -> float | None:
        """The newest event time of any stream, held or released."""
        times = [source.newest for source in self._sources.values()]
        return max(times) if times else None

    def watermark_time(self) -> Timestamp | None:
        """The watermark as a time of the log's kind (None before the first event)."""
        numeric = self.numeric
        if numeric is None or self.watermark == -math.inf:
            return None
        return Timestamp.at(self.watermark, numeric)

    # ------------------------------------------------------------------ accepting

    def late(self, events: Sequence[GraphEvent]) -> list[GraphEvent]:
        """The events older than the watermark (the kind of their times is checked too: raises
        MixedTimeError for the other kind than the log's)."""
        check_kind(events, self.numeric)
        return [event for event in events if event.time.seconds < self.watermark]

    def hold(self, events: Sequence[GraphEvent], lateness: float | None = None) -> range:
        """Journal (fsynced) and hold events that are not late; `lateness` overrides the
        lateness of their streams from now on. Raises what `EventLog.append` raises, holding
        nothing."""
        if lateness is not None:
            self._override({event.stream for event in events}, lateness)
        positions = self.journal.append(events)
        now = self.clock()
        for position, event in zip(positions, events, strict=True):
            self._seen(event, now, lateness)
            heapq.heappush(self._held, (event.time.seconds, position, event))
        return positions

    def _override(self, streams: set[str], lateness: float) -> None:
        """Keep the streams' own lateness (durably, before their events are held)."""
        if all(self._overrides.get(stream) == lateness for stream in streams):
            return
        self._overrides.update(dict.fromkeys(streams, lateness))
        _write_overrides(self._overrides_file, self._overrides)

    def _seen(self, event: GraphEvent, now: float, lateness: float | None) -> None:
        self._numeric = event.time.numeric
        source = self._sources.get(event.stream)
        if source is None:
            bound = self.policy.lateness if lateness is None else lateness
            self._sources[event.stream] = _Source(event.time.seconds, now, bound)
            return
        source.newest = max(source.newest, event.time.seconds)
        source.arrived = now
        if lateness is not None:
            source.lateness = lateness

    # ------------------------------------------------------------------ releasing

    def due(self) -> float:
        """The watermark now: W never goes back, and moves on as the streams promise."""
        sources = self._sources.values()
        if not sources:
            return self.watermark
        now = self.clock()
        timeout = self.policy.idle_timeout
        active = [s for s in sources if timeout is None or now - s.arrived < timeout]
        if active:
            candidate = min(s.newest - s.lateness for s in active)
        else:
            assert timeout is not None
            last = max(s.arrived for s in sources)
            candidate = max(s.newest for s in sources) + (now - last - timeout)
        return max(self.watermark, candidate)

    def release(self, append: Callable[[list[GraphEvent]], _R], *, everything: bool = False) -> _R | None:
        """Release the held events before the watermark, in time order, and the watermark mark
        after them, with ONE call of `append` (the log's); None when the watermark did not move.
        `everything`: release every held event, without a mark (the policy was turned off: the
        log is in order again from its newest event). If `append` raises, they stay held (the
        next release tries again) and it propagates."""
        numeric = self.numeric
        watermark = math.inf if everything else self.due()
        if numeric is None or watermark <= self.watermark or (everything and not self._held):
            return None
        taken: list[tuple[float, int, GraphEvent]] = []
        while self._held and self._held[0][0] < watermark:
            taken.append(heapq.heappop(self._held))
        events = [event for *_, event in taken]
        if not everything:
            events.append(watermark_mark(watermark, numeric))
        try:
            result = append(events)
        except BaseException:
            for item in taken:
                heapq.heappush(self._held, item)
            raise
        self.watermark = events[-1].time.seconds if everything else watermark
        oldest = min((position for _, position, _ in self._held), default=self.journal.next_position)
        self.journal.drop_before(oldest)
        return result


def _read_overrides(path: Path) -> dict[str, float]:
    """The streams' own lateness; a file that is not JSON, not an object of streams to
    non-negative finite seconds (damaged, or a bad hand edit) stops the start, naming it."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        overrides = {str(stream): float(seconds) for stream, seconds in found.items()}
        wrong = [stream for stream, seconds in overrides.items() if not 0 <= seconds < math.inf]
        if wrong:
            raise ValueError(f"the lateness of <{wrong[0]}> is not a number of seconds")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, AttributeError) as error:  # AttributeError: not an object
        raise EngineUnavailable(
            f"{path}: unreadable ({error}); remove it to forget the streams' own lateness"
        ) from None
    return overrides


def _write_overrides(path: Path, overrides: dict[str, float]) -> None:
    write_atomically(path, json.dumps(overrides, sort_keys=True).encode("utf-8"))
