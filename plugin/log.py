"""The durable, append-only event log: what the endpoint accepted, in order.

Every accepted event gets a position (0, 1, 2, ...) in one log shared by all
streams. An ingest request is appended as ONE line (a JSON batch of its
events) and fsynced before it is acknowledged, so a crash leaves either the
whole request or none of it: a torn last line is a request that was never
acknowledged, and opening the log cuts it off (logged). An append that fails (a full disk) is
cut back at once, so no record is ever glued onto a partial one, and raises `StorageFailure`
(HTTP 507): nothing of the request is stored. A complete line that is not a record cannot be
skipped (its events were acknowledged): `LogCorrupted` names the file and the byte offset.

Events must arrive in timestamp order across all streams (equal timestamps
allowed): rank numbering, which strict contiguity rests on (docs/semantics.md),
needs a total order, and a late event would change results already reported.
A late event is rejected with the timestamp it is behind. For the same reason
the log holds one kind of timestamp, the kind of its first event: xsd:dateTimes
(epoch seconds) and numbers (abstract time units) do not compare, so an event
of the other kind is rejected; the kind is read back from the log on reopening.

Segments (`log/<first position>.jsonl`) roll over every `segment_size` events
so that readers can seek to a position without scanning the whole history.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from rsep.plugin.durable import fsync_path
from rsep.plugin.errors import EngineUnavailable, InvalidInput, StorageFailure
from rsep.plugin.graph_events import GraphEvent, Timestamp

SEGMENT_SIZE = 50_000
LOGGER = logging.getLogger("rsep.log")


class LateEventError(InvalidInput):
    """An event older than the newest accepted one."""


class MixedTimeError(InvalidInput):
    """An event whose timestamp is not of the log's kind (xsd:dateTime or number); `event` is
    that event, for the caller to locate in its input."""

    def __init__(self, message: str, event: GraphEvent) -> None:
        super().__init__(message)
        self.event = event


class LogCorrupted(EngineUnavailable):
    """A complete record that cannot be read: the log cannot go on past it (the message names
    the file and the byte offset)."""


class AppendFailed(StorageFailure):
    """An append that could not be written; `pending` is the cut back to the size before it
    when that cut failed too (None: the log holds whole records only)."""

    def __init__(self, message: str, pending: tuple[Path, int] | None) -> None:
        super().__init__(message)
        self.pending = pending


@dataclass(frozen=True, slots=True)
class LogRecord:
    position: int
    event: GraphEvent


def encode_event(event: GraphEvent) -> list[object]:
    """[stream, name, seconds, lexical, numeric, ntriples], and for an event spanning an interval
    the start's seconds and lexical form after them (of the end's kind): logs written before
    intervals, six fields per event, read the same."""
    time = event.time
    fields: list[object] = [
        event.stream,
        event.name,
        time.seconds,
        time.lexical,
        time.numeric,
        event.ntriples,
    ]
    if event.start is not None:
        fields += [event.start.seconds, event.start.lexical]
    return fields


def decode_record(position: int, fields: list[object]) -> LogRecord:
    stream, name, seconds, lexical, numeric, ntriples = fields[:6]
    time = Timestamp(float(seconds), str(lexical), bool(numeric))  # type: ignore[arg-type]
    start = None
    if len(fields) > 6:
        start = Timestamp(float(fields[6]), str(fields[7]), time.numeric)  # type: ignore[arg-type]
    return LogRecord(position, GraphEvent(str(stream), str(name), time, str(ntriples), start))


class EventLog:
    """Append-only, fsynced, segmented; safe for one writer and many readers
    in one process (appends are serialised by a lock; readers read files)."""

    def __init__(self, directory: Path, segment_size: int = SEGMENT_SIZE, *, ordered: bool = True) -> None:
        self.directory = directory
        self.segment_size = segment_size
        self.ordered = ordered
        """False: events in any time order (the reorder buffer's journal, rsep.plugin.service.reorder);
        their timestamps are still all of one kind."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._failed: tuple[Path, int] | None = None
        """A segment and the size to cut it back to, left by an append whose cut failed."""
        self._next, self._newest = self._recover()

    # ------------------------------------------------------------------ writing

    @property
    def next_position(self) -> int:
        return self._next

    @property
    def last_time(self) -> float | None:
        return None if self._newest is None else self._newest.seconds

    @property
    def newest(self) -> Timestamp | None:
        """The timestamp of the newest event, None while the log is empty."""
        return self._newest

    @property
    def numeric(self) -> bool | None:
        """Are the log's timestamps numbers (False: xsd:dateTimes)? None while it is empty."""
        return None if self._newest is None else self._newest.numeric

    def time_before(self, position: int) -> float | None:
        """The log's time at `position`: the newest event time before it (the log is in time
        order, so record `position - 1`'s), None when no event precedes it. A query registered
        to read from `position` was registered at this time (its windows' t0)."""
        if position <= 0:
            return None
        with self._lock:
            if position == self._next:
                return self.last_time
        record = next(self.read(position - 1, position), None)
        return None if record is None else record.event.time.seconds

    def append(self, events: Sequence[GraphEvent]) -> range:
        """Append a request's events atomically; returns their positions."""
        if not events:
            return range(self._next, self._next)
        with self._lock:
            self.check_order(events)
            first = self._next
            line = json.dumps([first, [encode_event(e) for e in events]], ensure_ascii=False) + "\n"
            path = self._segment_for_append(first)
            created = not path.exists()
            self._cut_failed_append()
            try:
                _append_record(path, line.encode("utf-8"))
            except AppendFailed as error:
                self._failed = error.pending
                raise
            if created:
                fsync_path(self.directory)
            self._next = first + len(events)
            self._newest = events[-1].time
            return range(first, self._next)

    def _cut_failed_append(self) -> None:
        """Cut what a failed append left, if cutting it then failed too (StorageFailure while
        that is still impossible: a record must never be glued onto a torn one)."""
        if self._failed is not None:
            path, size = self._failed
            _cut(path, size)
            self._failed = None

    def check_order(self, events: Sequence[GraphEvent]) -> None:
        """Raise LateEventError unless `events` may follow the log's newest event, in order, and
        MixedTimeError unless their timestamps are all of the log's kind."""
        check_kind(events, self.numeric)
        if not self.ordered:
            return
        last = self._newest
        for event in events:
            if last is not None and event.time.seconds < last.seconds:
                raise LateEventError(
                    f"event {event.name} at {event.time.lexical} is older than the newest accepted event, "
                    f"at {last.lexical} (events must arrive in timestamp order across all streams)"
                )
            last = event.time

    def _segment_for_append(self, first: int) -> Path:
        segments = self._segments()
        if segments:
            start, path = segments[-1]
            if first - start < self.segment_size:
                return path
        return self.directory / f"{first:020d}.jsonl"

    # ------------------------------------------------------------------ reading

    def read(self, start: int = 0, end: int | None = None) -> Iterator[LogRecord]:
        """Records with start <= position < end (end defaults to what is acknowledged now)."""
        stop = self._next if end is None else end
        for begin, path in self._segments_from(start):
            if begin >= stop:
                return
            for at, first, batch in _lines(path, begin):
                for offset, fields in enumerate(batch):
                    position = first + offset
                    if position >= stop:
                        return
                    if position >= start:
                        yield _decoded(path, at, position, fields)

    def drop_before(self, position: int) -> None:
        """Delete the segments that hold only positions before `position` (a journal's released
        events: rsep.plugin.service.reorder); the newest segment always stays."""
        with self._lock:
            segments = self._segments()
            dropped = False
            for (_, path), (following, _) in pairwise(segments):
                if following > position:
                    break
                path.unlink()
                dropped = True
            if dropped:
                fsync_path(self.directory)

    def _segments(self) -> list[tuple[int, Path]]:
        """The segments, named by their first position (another file is not the log's)."""
        return sorted((int(p.stem), p) for p in self.directory.glob("*.jsonl") if p.stem.isdigit())

    def _segments_from(self, start: int) -> list[tuple[int, Path]]:
        segments = self._segments()
        keep = [s for s in segments if s[0] <= start]
        first = keep[-1][0] if keep else 0
        return [s for s in segments if s[0] >= first]

    # ------------------------------------------------------------------ recovery

    def _recover(self) -> tuple[int, Timestamp | None]:
        """Cut a torn last line (an unacknowledged request) and find where to go on: the next
        position, and the time of the newest event."""
        segments = self._segments()
        if not segments:
            return 0, None
        begin, path = segments[-1]
        _truncate_torn_tail(path)
        next_position, newest = begin, None
        for at, first, batch in _lines(path, begin):
            next_position = first + len(batch)
            if batch:
                newest = (path, at, batch[-1])
        if newest is None and len(segments) > 1:
            before, previous = segments[-2]
            for at, _first, batch in _lines(previous, before):
                if batch:
                    newest = (previous, at, batch[-1])
        if newest is None:
            return next_position, None
        return next_position, _decoded(*newest[:2], next_position - 1, newest[2]).event.time


def check_kind(events: Sequence[GraphEvent], numeric: bool | None) -> None:
    """Raise MixedTimeError unless every event's time is of the kind `numeric` (numbers or
    xsd:dateTimes; None: the kind of the first event)."""
    first = None
    for event in events:
        if numeric is None:
            numeric, first = event.time.numeric, event
        elif event.time.numeric != numeric:
            raise _mixed(event, first)


def _mixed(event: GraphEvent, first: GraphEvent | None) -> MixedTimeError:
    """The error for `event`, whose kind of time differs from the log's (`first` None) or from the
    first event of its own request, which sets the kind of an empty log."""
    if first is None:
        other = "numbers" if not event.time.numeric else "xsd:dateTimes"
        before = f"the event log's timestamps are {other}"
    else:
        before = f"event {first.name} of the same request is at {first.time.lexical}, {first.time.kind}"
    return MixedTimeError(
        f"event {event.name} at {event.time.lexical} is {event.time.kind}, but {before}: the timestamps "
        "of one event log must all be xsd:dateTimes or all numbers (epoch seconds and abstract time "
        "units do not compare)",
        event,
    )


def _lines(path: Path, begin: int) -> Iterator[tuple[int, int, list[list[object]]]]:
    """The records of the segment whose first position is `begin`, with their byte offsets; a
    complete line that is not a record, or not the record of the next positions, is an error
    naming the file and the line's byte offset (never skipped: its events were acknowledged)."""
    offset, expected = 0, begin
    with open(path, "rb") as handle:
        for raw in handle:
            if raw.endswith(b"\n"):
                try:
                    first, batch = _record(json.loads(raw), expected)
                except (ValueError, TypeError) as error:
                    raise _corrupted(path, offset, error) from None
                yield offset, first, batch
                expected = first + len(batch)
            offset += len(raw)


def _record(found: object, expected: int) -> tuple[int, list[list[object]]]:
    """`[first, [event fields, ...]]`, `first` the position after the record before."""
    if not (isinstance(found, list) and len(found) == 2):
        raise ValueError("not [position, events]")
    first, batch = found
    if type(first) is not int or first != expected:
        raise ValueError(f"position {first!r} where {expected} comes next")
    if not (isinstance(batch, list) and all(isinstance(f, list) and len(f) in (6, 8) for f in batch)):
        raise ValueError("its events are not lists of 6 or 8 fields")
    return first, batch


def _decoded(path: Path, at: int, position: int, fields: list[object]) -> LogRecord:
    """`decode_record`, a field of the wrong type being an error that names the record."""
    try:
        return decode_record(position, fields)
    except (ValueError, TypeError) as error:
        raise _corrupted(path, at, error) from None


def _corrupted(path: Path, offset: int, error: Exception) -> LogCorrupted:
    return LogCorrupted(
        f"event log {path}, byte offset {offset}: not a log record ({error}); "
        "the log cannot be read past it: restore the file from a backup, or cut it "
        "at that offset to drop what follows"
    )


def _truncate_torn_tail(path: Path) -> None:
    """Cut a last line without its newline: a request whose append never completed (a crash or a
    full disk), never acknowledged. Logged, with what was cut."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        _cut(path, keep)
        LOGGER.warning(
            "event log %s: cut a torn record of %d bytes at byte offset %d (a request that was never "
            "acknowledged)", path, len(data) - keep, keep,
        )  # fmt: skip


def _append_record(path: Path, data: bytes) -> None:
    """Append one record and fsync it; on failure, cut the file back to its size before, so the
    log holds whole records only, and raise AppendFailed (with the cut still to make, when
    that cut failed too: the next append makes it first)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(descriptor).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            os.fsync(descriptor)
        except OSError as error:
            pending: tuple[Path, int] | None = None
            try:
                _cut(path, size)
            except StorageFailure:
                pending = (path, size)
            LOGGER.error("event log %s: append at byte offset %d failed: %s", path, size, error)
            raise AppendFailed(
                f"the event log could not store the request ({error.strerror or error}); nothing of "
                "it was stored: send it again when the server has room",
                pending,
            ) from None
    finally:
        os.close(descriptor)


def _cut(path: Path, size: int) -> None:
    """Truncate a segment to `size` bytes, durably."""
    try:
        with open(path, "r+b") as handle:
            handle.truncate(size)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise StorageFailure(
            f"event log {path}: cannot cut a failed append back to byte offset {size} ({error}); "
            "the log takes no writes until it can"
        ) from None
