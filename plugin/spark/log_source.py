"""The event log as the one Spark streaming source of every registered query (Python Data
Source API).

**One source, all queries.** The driver keeps a *query table* (`QueryTable`, a JSON file it
rewrites atomically when a query is registered, unregistered or fails): per query its id, its
*plan id* (the key of its compiled plan among the files shipped to executors, and of its keyed
state), its streamset, its registration position and whether it reads a background snapshot.
`latestOffset` reads the table and the log; a query registered while the job runs is in the
next batch planned, without restarting anything.

**Offsets** hold, per query, everything that makes its part of a micro-batch reproducible from
the batch's start offset alone: its log position (and the segment file and byte of that line:
reading resumes with a seek), the rank numbering of its streamset so far (`rank`, `time`:
`number_records` goes on from them), the streamset events counted, its batch's closed rank and
clock (the next batch hands them on, see `stream_stages`), the background snapshot its batch
reads, and its plan id. Queries move independently: one registered with `from=0` reads the
log's history, in batches of at most `max_records` records, while the others stay at the head;
queries at the same position share one read. The job's own `head` (the newest position any
query reached) and `clock` (the newest event time read) only grow: rows carry the clock as their
event time, so Spark's watermark never drops a row as late, and a query is *behind* while its
position is before the head (its keys then set no event-time timeout: the watermark says nothing
about the time of its later events). Spark logs a batch's end offset before running it, so a
batch replayed after a crash reads the same records, numbers them the same way and uses the same
snapshots; a query no longer in the table is left out of a replayed batch (nobody reads its
results).

**Who runs what.** `latestOffset`, `partitions` and `commit` run in the source's planner
process on the driver host; `read` runs on executors. `partitions` reads the records and ships
them inside the partitions (each record once, with its rank in every query that reads it), so
executors never open the log; each partition starts with a header holding the batch's facts per
query. `read` runs the GPM stage (`stream_stages.gpm_rows`) right there: the rows the source
produces are GPM rows, one Python stage less per micro-batch than a separate `mapInPandas`.
Plans and background snapshots reach executors as files shipped with `SparkContext.addFile`
(`stream_stages.shipped`).

The log is only read here: never through `EventLog`, whose recovery cuts a torn last line (the
writer may be in the middle of appending it). A line without its newline is not read yet.

Background snapshots (`SnapshotFiles`, `<sequence>-<digest>.pkl` next to a query's checkpoints)
are written by the driver, which watches the knowledge base; `latestOffset` names each query's
newest (`CURRENT`) in the batch's end offset; `commit` deletes the ones older than the last
committed batch's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from rsep.plugin.durable import write_atomically
from rsep.plugin.log import LogRecord, decode_record
from rsep.plugin.numbering import NumberedEvent, number_records

SOURCE_NAME = "rsep_event_log"


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
                    records.append(decode_record(at, fields))
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

    def publish(self, payload: bytes, digest: str, ship: Callable[[str, Path], None] | None = None) -> str:
        """Store a snapshot and make it the current one; returns its id. `ship` (snapshot id,
        file) runs before it is current: executors must be able to read it by then."""
        self.folder.mkdir(parents=True, exist_ok=True)
        sequence = max((_sequence(p.stem) for p in self.folder.glob("*.pkl")), default=-1)
        sequence = max(sequence, _sequence(self.current())) + 1
        snapshot_id = f"{sequence:012d}-{digest[:16]}"
        path = self.folder / f"{snapshot_id}.pkl"
        write_atomically(path, payload)
        if ship is not None:
            ship(snapshot_id, path)
        write_atomically(self.folder / self.CURRENT, snapshot_id.encode())
        return snapshot_id

    def ids(self) -> list[str]:
        """The snapshots kept (a batch replayed after a restart may read any of them)."""
        return sorted(p.stem for p in self.folder.glob("*.pkl"))

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


# ---------------------------------------------------------------- the query table


@dataclass(frozen=True, slots=True)
class TableEntry:
    """A query the job runs."""

    id: str
    plan: str
    """Plan id: the shipped plan file (`plan-<id>.pkl`) and the namespace of the query's keys in
    the state store; a new one (another automaton, or a replay from the registration) starts the
    query afresh from `start`."""
    streams: tuple[str, ...]
    """The streamset (empty: every stream, EP-SPARQL)."""
    start: int
    """The log position the query reads from when it has no offset yet."""
    kb: bool = False
    """Does it read background snapshots (`<snapshots>/<id>/kb`)?"""


class QueryTable:
    """The queries of the job, as a JSON file the driver writes and the planner reads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: tuple[int, int, list[TableEntry]] | None = None

    def write(self, entries: Sequence[TableEntry]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {"queries": [asdict(entry) for entry in entries]}
        write_atomically(self.path, json.dumps(body, sort_keys=True).encode())

    def read(self) -> list[TableEntry]:
        """The entries (re-read when the file changed: the planner asks at every trigger)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return []
        cached = self._cache
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_ino):
            return cached[2]
        body = json.loads(self.path.read_bytes())
        entries = [
            TableEntry(q["id"], q["plan"], tuple(q["streams"]), int(q["start"]), bool(q.get("kb")))
            for q in body["queries"]
        ]
        self._cache = (stat.st_mtime_ns, stat.st_ino, entries)
        return entries


# ---------------------------------------------------------------- the source


@dataclass(frozen=True, slots=True)
class QueryFacts:
    """What a partition's header says about one query's part of the micro-batch."""

    plan: str
    streams: tuple[str, ...]
    end: int
    closed: int
    clock: float
    count: int
    prev_closed: int
    prev_clock: float
    kb: str
    """`kb-<query id>-<snapshot id>.pkl`, the shipped snapshot its GPMs read ("" for none)."""
    behind: bool


class LogPartition(InputPartition):
    """One slice of a micro-batch's events, with the batch's facts (pickled by the planner, read
    on an executor). An event is `_event_row` plus `{plan id: rank}` of the queries that read it."""

    def __init__(self, facts: list[QueryFacts], clock: float, events: list[tuple[Any, ...]]) -> None:
        super().__init__(None)
        self.facts = facts
        self.clock = clock
        self.events = events


class EventLogSource(DataSource):
    """`spark.readStream.format("rsep_event_log")` with the options of `EventLogReader`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        from rsep.plugin.spark.stream_stages import ROW_SCHEMA

        return ROW_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return EventLogReader(self.options)


_FRESH = {"segment": -1, "byte": 0, "rank": -1, "time": "", "events": 0, "closed": -1, "clock": "", "kb": ""}
"""A query's offset before its first batch (with `plan` and `position`)."""


class EventLogReader(DataSourceStreamReader):
    """Options: `log` (the log folder), `table` (the query table's file), `snapshots` (the folder
    of the queries' checkpoint folders, each with its `kb/` snapshots), `partition_size` (events
    per partition), `partitions` (at most this many per batch) and `max_records` (records read per
    query and batch)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.log = Path(options["log"])
        self.table = QueryTable(Path(options["table"]))
        self.snapshots = Path(options["snapshots"])
        self.partition_size = int(options.get("partition_size", "5000"))
        self.max_partitions = int(options.get("partitions", "1"))
        self.max_records = int(options.get("max_records", "10000"))
        self.reads: Callable[[Path, int, int, int, int | None, int | None], LogSpan] = _read
        self._read: tuple[str, str, dict[str, list[LogRecord]]] | None = None
        """The records of the last `latestOffset` per query (start, end as JSON): `partitions`
        reuses them."""

    def initialOffset(self) -> dict[str, Any]:
        return {"head": -1, "clock": "", "queries": {}}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_records
        entries = self.table.read()
        spans: dict[tuple[int, int, int], LogSpan] = {}
        queries: dict[str, Any] = {}
        records: dict[str, list[LogRecord]] = {}
        for entry in entries:
            state = self._begin(start, entry)
            at = (state["position"], state["segment"], state["byte"])
            span = spans.get(at)
            if span is None:
                span = spans[at] = self.reads(self.log, *at, None, cap)
            if not span.records:
                if entry.id in start["queries"] and state is start["queries"][entry.id]:
                    queries[entry.id] = state  # unmoved: carried on
                continue
            fresh, rank, time, closed, clock = _number(state, entry, span.records)
            queries[entry.id] = {"plan": entry.plan, "position": span.position, "segment": span.segment,
                                 "byte": span.byte, "rank": rank, "time": _text(time),
                                 "events": state["events"] + len(fresh), "closed": closed,
                                 "clock": _text(clock), "kb": self._snapshot(entry)}  # fmt: skip
            records[entry.id] = span.records
        if not records:
            return start
        newest = max(r.event.time.seconds for found in records.values() for r in found)
        old_clock = _time(start["clock"])
        head = max(start["head"], *(q["position"] for q in queries.values()))
        end = {"head": head, "clock": _text(newest if old_clock is None else max(old_clock, newest)),
               "queries": queries}  # fmt: skip
        self._read = (json.dumps(start, sort_keys=True), json.dumps(end, sort_keys=True), records)
        return end

    def _begin(self, start: dict[str, Any], entry: TableEntry) -> dict[str, Any]:
        """A query's offset at the batch's start: its own, or fresh at its registration when it has
        none (new) or one of another plan (replayed from the registration)."""
        state = start["queries"].get(entry.id)
        if state is not None and state["plan"] == entry.plan:
            return state  # type: ignore[no-any-return]
        return {**_FRESH, "plan": entry.plan, "position": entry.start}

    def _snapshot(self, entry: TableEntry) -> str:
        return SnapshotFiles(self.snapshots / entry.id / "kb").current() if entry.kb else ""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        entries = {entry.id: entry for entry in self.table.read()}
        cached = self._read
        keys = (json.dumps(start, sort_keys=True), json.dumps(end, sort_keys=True))
        reused = cached[2] if cached is not None and cached[:2] == keys else {}
        facts: list[QueryFacts] = []
        events: dict[int, tuple[NumberedEvent, dict[str, int]]] = {}
        for query_id, last in end["queries"].items():
            entry = entries.get(query_id)
            if entry is None or entry.plan != last["plan"]:
                continue  # unregistered (or replayed afresh) since: nobody reads its results
            first = self._begin(start, entry)
            if first["position"] == last["position"] and first is start["queries"].get(query_id):
                continue  # did not move in this batch
            records = reused.get(query_id)
            if records is None:
                records = self._records(first, last)
            fresh, rank, _, closed, clock = _number(first, entry, records)
            logged = (last["rank"], last["closed"], last["clock"], last["events"])
            if (rank, closed, _text(clock), first["events"] + len(fresh)) != logged:
                raise ValueError(f"the log changed under the offsets of query {query_id}: {first} .. {last}")
            previous = _time(first["clock"])
            kb = f"kb-{query_id}-{last['kb']}.pkl" if last["kb"] else ""
            facts.append(QueryFacts(entry.plan, entry.streams, last["position"], closed, clock,
                                    last["events"], first["closed"], 0.0 if previous is None else previous,
                                    kb, last["position"] < end["head"]))  # fmt: skip
            for numbered in fresh:
                found = events.get(numbered.id)
                if found is None:
                    found = events[numbered.id] = (numbered, {})
                found[1][entry.plan] = numbered.rank
        if not facts:
            return []
        newest = _time(end["clock"])
        rows = [(*_event_row(n), ranks) for _, (n, ranks) in sorted(events.items())]
        return [LogPartition(facts, newest or 0.0, part) for part in self._slices(rows)]

    def _records(self, first: dict[str, Any], last: dict[str, Any]) -> list[LogRecord]:
        span = self.reads(
            self.log, first["position"], first["segment"], first["byte"], last["position"], None
        )
        if span.position != last["position"]:
            raise ValueError(f"the log ends at {span.position}, before the batch's end {last['position']}")
        return span.records

    def _slices(self, rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
        """About `partition_size` events per partition, at most `partitions` of them; one
        (header only) when the batch has no event any query reads."""
        if not rows:
            return [[]]
        count = min(self.max_partitions, math.ceil(len(rows) / self.partition_size))
        size = math.ceil(len(rows) / max(count, 1))
        return [rows[i : i + size] for i in range(0, len(rows), size)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from rsep.plugin.spark.stream_stages import gpm_rows  # executors only: pandas, Oxigraph

        assert isinstance(partition, LogPartition)
        yield gpm_rows(partition.facts, partition.clock, partition.events)

    def commit(self, end: dict[str, Any]) -> None:
        """Batches up to `end` are done: older snapshots are no longer needed."""
        for query_id, state in end["queries"].items():
            if state.get("kb"):
                SnapshotFiles(self.snapshots / query_id / "kb").collect(state["kb"])


def _read(
    directory: Path, position: int, segment: int, byte: int, stop: int | None, limit: int | None
) -> LogSpan:
    return read_log(directory, position, segment, byte, stop=stop, limit=limit)


def _number(
    state: Mapping[str, Any], entry: TableEntry, records: list[LogRecord]
) -> tuple[list[NumberedEvent], int, float | None, int, float]:
    """The streamset's events among `records`, numbered on from the query's offset; the last rank
    and time; the batch's closed rank and clock, as `QueryRunner.step` has them (the newest rank
    is open while nothing later is in the batch)."""
    fresh, rank, time = number_records(records, entry.streams, state["rank"], _time(state["time"]))
    clock = max(r.event.time.seconds for r in records)
    closed = rank - 1 if time is not None and clock <= time else rank
    return fresh, rank, time, closed, clock


def _event_row(numbered: NumberedEvent) -> tuple[Any, ...]:
    event, start = numbered.event, numbered.event.start
    return (numbered.id, event.stream, event.name, event.time.seconds, event.time.lexical,
            event.time.numeric, event.ntriples, start and start.seconds, start and start.lexical)  # fmt: skip


def _time(text: str) -> float | None:
    """Offsets hold times as text (repr round-trips a float exactly)."""
    return float(text) if text else None


def _text(time: float | None) -> str:
    return "" if time is None else repr(time)
