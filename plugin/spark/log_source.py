"""The event log as a Spark streaming source (Python Data Source API), one
reader per continuous query.

Offsets are positions in the log plus what makes a micro-batch reproducible
from its start offset alone: the rank numbering of the query's streamset so
far (`rank`, `time`: `number_records` goes on from them), the streamset
events counted (`events`), where the position's line is in the segment files
(`segment`, `byte`: reading resumes with a seek, not a scan) and the id of
the background-knowledge snapshot the batch is evaluated against (`kb`). Spark
writes the end offset of a batch before running it, so a batch replayed after
a crash reads the same records, numbers them the same way and uses the same
snapshot.

Who runs what: `latestOffset`, `partitions` and `commit` run in the source's
planner process on the driver host (Spark starts one per streaming query);
`read` runs on executors. `partitions` reads the records and ships them inside
the partitions, so executors never open the log (they need no shared
filesystem). Each partition starts with a header row holding the batch's
facts (end position, closed rank, clock, count, snapshot), which the GPM stage
passes on to every row; see `stream_stages`.

This module stays light (no pandas, no Oxigraph): Spark runs one planner
process per streaming query. The log is only read here: never through `EventLog`, whose recovery cuts a
torn last line (the writer may be in the middle of appending it). A line
without its newline is not read yet.

Background snapshots (`SnapshotFiles`, `<sequence>-<digest>.pkl` next to the
query's checkpoints) are written by the driver, which watches the knowledge
base; `latestOffset` names the newest (`CURRENT`) in the batch's end offset;
`commit` deletes the ones older than the last committed batch's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from rsep.plugin.log import LogRecord, _decode
from rsep.plugin.numbering import NumberedEvent, number_records
from rsep.plugin.service.registry import write_atomically

SOURCE_NAME = "rsep_event_log"

HEADER = 0
EVENT = 1
"""Source row kinds: one header per partition (first), then its events."""

SOURCE_COLUMNS = ("kind", "id", "rank", "time", "stream", "name", "lexical", "numeric", "ntriples",
                  "start", "start_lexical", "closed", "count", "prev_closed", "prev_clock", "kb",
                  "kb_data")  # fmt: skip
"""A source row. Header: `id` = the batch's end position, `rank` = the last
rank, `time` = clock (the newest time among the batch's records, all
streams), `closed` (ranks up to it are complete), `count` (streamset events
up to the end), `prev_closed`/`prev_clock` (the previous batch's closed rank
and clock; -1 and 0 before the first), `kb` (background snapshot id, "" for
none) and `kb_data` (its pickle when the executors cannot take it from the
broadcast). Event: `id` = log position, `rank`, `time`, `stream`, `name`,
`lexical`/`numeric` (the timestamp as written), `ntriples`, and `start`/`start_lexical` (the
start of the interval the event spans, as written; null for an instantaneous event)."""

SOURCE_SCHEMA = StructType(
    [
        StructField("kind", IntegerType()),
        StructField("id", LongType()),
        StructField("rank", LongType()),
        StructField("time", DoubleType()),
        StructField("stream", StringType()),
        StructField("name", StringType()),
        StructField("lexical", StringType()),
        StructField("numeric", BooleanType()),
        StructField("ntriples", StringType()),
        StructField("start", DoubleType()),
        StructField("start_lexical", StringType()),
        StructField("closed", LongType()),
        StructField("count", LongType()),
        StructField("prev_closed", LongType()),
        StructField("prev_clock", DoubleType()),
        StructField("kb", StringType()),
        StructField("kb_data", BinaryType()),
    ]
)
"""`SOURCE_COLUMNS`: header and event rows in one schema."""

_ARROW_SCHEMA = pa.schema(
    [("kind", pa.int32()), ("id", pa.int64()), ("rank", pa.int64()), ("time", pa.float64()),
     ("stream", pa.string()), ("name", pa.string()), ("lexical", pa.string()), ("numeric", pa.bool_()),
     ("ntriples", pa.string()), ("start", pa.float64()), ("start_lexical", pa.string()),
     ("closed", pa.int64()), ("count", pa.int64()),
     ("prev_closed", pa.int64()), ("prev_clock", pa.float64()), ("kb", pa.string()),
     ("kb_data", pa.binary())]
)  # fmt: skip

assert tuple(SOURCE_SCHEMA.fieldNames()) == SOURCE_COLUMNS == tuple(_ARROW_SCHEMA.names)


# ---------------------------------------------------------------- reading the log


@dataclass(frozen=True, slots=True)
class LogSpan:
    """Records read from the log, and where reading stopped."""

    records: list[LogRecord]
    position: int
    """The next position to read."""
    segment: int
    """The first position of the segment file holding `position`'s line."""
    byte: int
    """Where that line starts in the file."""


def read_log(
    directory: Path, position: int, segment: int = -1, byte: int = 0, *, stop: int | None = None,
    limit: int | None = None,
) -> LogSpan:  # fmt: skip
    """The complete records from `position` (whose line starts at `byte` of
    segment `segment`; -1: find it) up to `stop`, at most `limit` of them."""
    # Listed before reading: a segment is complete once a later one exists, so
    # reading may move on to the next segment only if it was listed first.
    segments = sorted((int(p.stem), p) for p in directory.glob("*.jsonl") if p.stem.isdigit())
    firsts = [first for first, _ in segments]
    if not segments:
        return LogSpan([], position, segment, byte)
    if segment not in firsts:
        below = [i for i, first in enumerate(firsts) if first <= position]
        index, byte = (below[-1] if below else 0), 0
    else:
        index = firsts.index(segment)
    records: list[LogRecord] = []
    for i in range(index, len(segments)):
        segment, path = segments[i]
        if i > index:
            byte = 0
        with open(path, "rb") as handle:
            handle.seek(byte)
            while True:
                line = handle.readline()
                if not line.endswith(b"\n"):  # the end, or a line being appended
                    break
                first, batch = json.loads(line)
                for offset, fields in enumerate(batch):
                    at = first + offset
                    if at < position:
                        continue
                    if (stop is not None and at >= stop) or (limit is not None and len(records) >= limit):
                        return LogSpan(records, at, segment, byte)
                    records.append(_decode(at, fields))
                byte += len(line)
                position = max(position, first + len(batch))
    return LogSpan(records, position, segment, byte)


# ---------------------------------------------------------------- snapshots


class SnapshotFiles:
    """Pickled background snapshots of one query, named `<sequence>-<digest>`,
    and `CURRENT`, the newest one's name. Written by the driver only; the
    source's planner reads them and deletes old ones."""

    CURRENT = "CURRENT"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def current(self) -> str:
        try:
            return (self.folder / self.CURRENT).read_text().strip()
        except FileNotFoundError:
            return ""

    def publish(self, payload: bytes, digest: str) -> str:
        """Store a snapshot and make it the current one; returns its id."""
        self.folder.mkdir(parents=True, exist_ok=True)
        sequence = max((_sequence(p.stem) for p in self.folder.glob("*.pkl")), default=-1)
        sequence = max(sequence, _sequence(self.current())) + 1
        snapshot_id = f"{sequence:012d}-{digest[:16]}"
        write_atomically(self.folder / f"{snapshot_id}.pkl", payload)
        write_atomically(self.folder / self.CURRENT, snapshot_id.encode())
        return snapshot_id

    def read(self, snapshot_id: str) -> bytes:
        try:
            return (self.folder / f"{snapshot_id}.pkl").read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"background snapshot {snapshot_id} is gone from {self.folder}: the batch cannot be replayed"
            ) from None

    def collect(self, oldest_needed: str) -> None:
        """Delete the snapshots published before `oldest_needed`."""
        keep = _sequence(oldest_needed)
        current = self.current()
        for path in self.folder.glob("*.pkl"):
            if _sequence(path.stem) < keep and path.stem != current:
                path.unlink(missing_ok=True)


def _sequence(snapshot_id: str) -> int:
    head = snapshot_id.split("-", 1)[0]
    return int(head) if head.isdigit() else -1


# ---------------------------------------------------------------- the source


class LogPartition(InputPartition):
    """One slice of a micro-batch's events, with the batch's header (pickled
    by the planner, read on an executor)."""

    def __init__(self, header: tuple[Any, ...], events: list[tuple[Any, ...]]) -> None:
        super().__init__(None)
        self.header = header
        self.events = events


class EventLogSource(DataSource):
    """`spark.readStream.format("rsep_event_log")` with the options of
    `EventLogReader`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return SOURCE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return EventLogReader(self.options)


class EventLogReader(DataSourceStreamReader):
    """Options: `log` (the log folder), `snapshots` (the query's snapshot
    folder), `streams` (JSON list of the streamset's IRIs), `start` (first log
    position), `partition_size` (events per partition), `partitions` (at most
    this many per batch), `max_records` (records per batch) and `broadcast`
    (the id of the snapshot the executors have as a broadcast variable)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.log = Path(options["log"])
        self.snapshots = SnapshotFiles(Path(options["snapshots"]))
        self.streams = frozenset(json.loads(options["streams"]))
        self.start = int(options["start"])
        self.partition_size = int(options.get("partition_size", "5000"))
        self.max_partitions = int(options.get("partitions", "1"))
        self.max_records = int(options.get("max_records", "10000"))
        self.broadcast = options.get("broadcast", "")
        self._read: tuple[int, int, list[LogRecord]] | None = None
        """The records of the last `latestOffset` (start, end): `partitions` reuses them."""

    def initialOffset(self) -> dict[str, Any]:
        return {"position": self.start, "segment": -1, "byte": 0, "rank": -1, "time": "", "events": 0,
                "closed": -1, "clock": "", "kb": ""}  # fmt: skip

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        span = read_log(self.log, start["position"], start["segment"], start["byte"], limit=cap)
        if not span.records:
            return start
        fresh, rank, time, closed, clock = self._number(start, span.records)
        self._read = (start["position"], span.position, span.records)
        return {"position": span.position, "segment": span.segment, "byte": span.byte, "rank": rank,
                "time": _text(time), "events": start["events"] + len(fresh), "closed": closed,
                "clock": _text(clock), "kb": self.snapshots.current()}  # fmt: skip

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if end["position"] <= start["position"]:
            return []
        records = self._records(start, end)
        fresh, rank, _, closed, clock = self._number(start, records)
        facts = (rank, closed, _text(clock), start["events"] + len(fresh))
        logged = (end["rank"], end.get("closed", closed), end.get("clock", _text(clock)), end["events"])
        if facts != logged:
            raise ValueError(f"the log changed under offsets {start} .. {end}")
        snapshot = end["kb"]
        data = self.snapshots.read(snapshot) if snapshot and snapshot != self.broadcast else None
        previous = _time(start.get("clock", ""))  # older offsets lack the batch facts
        header = (end["position"], rank, clock, closed, end["events"], start.get("closed", -1),
                  0.0 if previous is None else previous, snapshot, data)  # fmt: skip
        return [LogPartition(header, [_event_row(n) for n in part]) for part in self._slices(fresh)]

    def _number(
        self, start: dict[str, Any], records: list[LogRecord]
    ) -> tuple[list[NumberedEvent], int, float | None, int, float]:
        """The streamset's events among `records`, numbered from `start`; the
        last rank and time; the batch's closed rank and clock, as
        `QueryRunner.step` has them (the newest rank is open while nothing
        later is in the batch)."""
        fresh, rank, time = number_records(records, self.streams, start["rank"], _time(start["time"]))
        clock = max(r.event.time.seconds for r in records)
        closed = rank - 1 if time is not None and clock <= time else rank
        return fresh, rank, time, closed, clock

    def _records(self, start: dict[str, Any], end: dict[str, Any]) -> list[LogRecord]:
        cached = self._read
        if cached is not None and cached[:2] == (start["position"], end["position"]):
            return cached[2]
        span = read_log(self.log, start["position"], start["segment"], start["byte"], stop=end["position"])
        if span.position != end["position"]:
            raise ValueError(f"the log ends at {span.position}, before the batch's end {end['position']}")
        return span.records

    def _slices(self, fresh: list[NumberedEvent]) -> list[list[NumberedEvent]]:
        """About `partition_size` events per partition, at most `partitions`
        of them; one (header only) when the batch has none of the streamset."""
        if not fresh:
            return [[]]
        count = min(self.max_partitions, math.ceil(len(fresh) / self.partition_size))
        size = math.ceil(len(fresh) / max(count, 1))
        return [fresh[i : i + size] for i in range(0, len(fresh), size)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogPartition)
        end, rank, clock, closed, count, prev_closed, prev_clock, snapshot, data = partition.header
        rows = [(HEADER, end, rank, clock, "", "", "", False, "", None, None, closed, count, prev_closed,
                 prev_clock, snapshot, data)]  # fmt: skip
        rows.extend(
            (EVENT, *event, closed, count, prev_closed, prev_clock, "", None) for event in partition.events
        )
        columns = list(zip(*rows, strict=True))
        yield pa.RecordBatch.from_arrays(
            [pa.array(list(c), type=f.type) for c, f in zip(columns, _ARROW_SCHEMA, strict=True)],
            schema=_ARROW_SCHEMA,
        )

    def commit(self, end: dict[str, Any]) -> None:
        """Batches up to `end` are done: older snapshots are no longer needed."""
        if end.get("kb"):
            self.snapshots.collect(end["kb"])


def _event_row(numbered: NumberedEvent) -> tuple[Any, ...]:
    event, start = numbered.event, numbered.event.start
    return (numbered.id, numbered.rank, event.time.seconds, event.stream, event.name, event.time.lexical,
            event.time.numeric, event.ntriples, start and start.seconds, start and start.lexical)  # fmt: skip


def _time(text: str) -> float | None:
    """Offsets hold times as text (repr round-trips a float exactly)."""
    return float(text) if text else None


def _text(time: float | None) -> str:
    return "" if time is None else repr(time)
