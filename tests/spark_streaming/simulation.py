"""The Spark streaming job without Spark: what the planner, the executors and
the driver do for each micro-batch, called directly, so that the logic can be
checked against `Replay` on many random logs and batch splits in seconds.

`Job` mirrors Spark's semantics where they matter: the end offset is logged
before the batch runs, the state store moves only when a batch commits, the
watermark is the newest event-time value of earlier batches minus the delay,
rows at or below it are dropped (they must never be), keys with data are
called with data and only then do timed-out keys get called without, and a
batch cut short is run again from its logged offsets by a fresh planner."""

from __future__ import annotations

import json
import pickle
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql.streaming.datasource import ReadMaxRows

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.spark import stream_stages
from rsep.plugin.spark.log_source import EventLogReader, QueryTable, SnapshotFiles, TableEntry
from rsep.plugin.spark.stream_stages import (
    TIME_HIGH,
    TIME_LOW,
    TIME_SHIFT,
    WATERMARK_DELAY_MS,
    StagePlan,
    StreamKeyStep,
    plan_file,
)
from rsep.plugin.spark.streaming_engine import _outputs
from rsep.plugin.store.kb import BackgroundSnapshot

QID = "0123456789abcdef"

NO_TIMESTAMP = -1


class FakeState:
    """pyspark's GroupState over a dict of committed values."""

    def __init__(self, value: bytes | None, watermark: int, timed_out: bool = False) -> None:
        self.value = value
        self.watermark = watermark
        self.timed_out = timed_out
        self.timeout = NO_TIMESTAMP
        self.removed = False

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple[Any, ...]:
        assert self.value is not None
        return (self.value,)

    @property
    def hasTimedOut(self) -> bool:
        return self.timed_out

    def update(self, newValue: tuple[Any, ...]) -> None:
        self.value = newValue[0]

    def remove(self) -> None:
        self.value = None

    def setTimeoutTimestamp(self, timestampMs: int) -> None:
        assert timestampMs >= self.watermark, "Spark rejects a timeout before the watermark"
        self.timeout = timestampMs

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark


def event_time_micros(seconds: float) -> int:
    """What Spark makes of the event-time column: `timestamp_seconds` of the
    clamped, shifted time truncates it to microseconds."""
    shifted = min(max(seconds, TIME_LOW), TIME_HIGH) + TIME_SHIFT
    return int(shifted * 1_000_000)


@dataclass
class Job:
    """The streaming job over an event log folder, with `plan` registered as query `QID` from
    `start` (more with `add`). `snapshots` is the folder of the queries' checkpoint folders
    (each query's background snapshots in `<snapshots>/<id>/kb`)."""

    plan: QueryPlan | None
    log: Path
    snapshots: Path
    start: int = 0
    max_records: int = 10_000
    partition_size: int = 3
    partitions: int = 2
    offset: dict[str, Any] | None = None
    state: dict[tuple[str, str], bytes] = field(default_factory=dict)
    timeouts: dict[tuple[str, str], int] = field(default_factory=dict)
    watermark: int = 0
    batches: int = 0
    reader: EventLogReader | None = None
    entries: dict[str, TableEntry] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    """What the driver shipped to the executors (`SparkContext.addFile`), by name."""

    def __post_init__(self) -> None:
        self.table = QueryTable(self.snapshots.parent / f"{self.snapshots.name}-table.json")
        if self.plan is not None:
            self.add(QID, self.plan, self.start)

    def add(self, query_id: str, plan: QueryPlan, start: int = 0, generation: int = 0) -> str:
        """Register a query (what the engine's `register` does for the job); returns its plan id."""
        plan_id = f"{query_id}.{generation}"
        self.files[plan_file(plan_id)] = pickle.dumps(StagePlan(plan.gpms, plan.key, plan.automaton))
        kb = any(g.kb_query is not None for g in plan.gpms)
        self.entries[query_id] = TableEntry(query_id, plan_id, tuple(plan.streams), start, kb)
        self.table.write(list(self.entries.values()))
        return plan_id

    def remove(self, query_id: str) -> None:
        del self.entries[query_id]
        self.table.write(list(self.entries.values()))

    def ship_snapshot(self, query_id: str, snapshot_id: str, snapshot: BackgroundSnapshot) -> None:
        self.files[f"kb-{query_id}-{snapshot_id}.pkl"] = pickle.dumps(snapshot)

    def keys(self, query_id: str = QID) -> set[str]:
        """The partition keys of a query that have state."""
        plan_id = self.entries[query_id].plan
        return {key for plan, key in self.state if plan == plan_id}

    def new_reader(self) -> EventLogReader:
        """A planner process (Spark starts a new one when the job restarts)."""
        options = {"log": str(self.log), "table": str(self.table.path), "snapshots": str(self.snapshots),
                   "partition_size": str(self.partition_size), "partitions": str(self.partitions),
                   "max_records": str(self.max_records)}  # fmt: skip
        self.reader = EventLogReader(options)
        return self.reader

    def plan_batch(self) -> dict[str, Any] | None:
        """`latestOffset`: the next batch's end offset (None: nothing new)."""
        reader = self.reader or self.new_reader()
        start = self.offset if self.offset is not None else reader.initialOffset()
        end = reader.latestOffset(_json(start), ReadMaxRows(self.max_records))
        return None if end == start else _json(end)

    def run_batch(self, end: dict[str, Any], commit: bool = True) -> tuple[list[Any], int | None]:
        """Execute the batch ending at `end` and commit it (state, offset, watermark) or not (a
        crash before Spark's commit). Returns the driver's view of query `QID`: (matches with
        their event refs, in detection order; end position)."""
        found, ends, errors = self.run_all(end, commit)
        plan_id = self.entries[QID].plan if QID in self.entries else ""
        assert not errors, errors
        matches = sorted(found.get(plan_id, []), key=lambda item: item[0].key())
        return matches, ends[plan_id][0] if plan_id in ends else None

    def run_all(self, end: dict[str, Any], commit: bool = True) -> tuple[Any, Any, Any]:
        """`run_batch` for every query: `streaming_engine._outputs` of the batch."""
        reader = self.reader or self.new_reader()
        start = self.offset if self.offset is not None else reader.initialOffset()
        stream_stages._LOADED.clear()  # a new Python worker
        stream_stages.shipped = self.files.get
        try:
            partitions = reader.partitions(_json(start), _json(end))
            frames = [b.to_pandas() for partition in partitions for b in reader.read(partition)]
            rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            micros = [t.value // 1000 for t in rows["ts"].tolist()] if len(rows) else []
            assert all(m > self.watermark * 1000 for m in micros), "a row Spark would drop as late"
            step = StreamKeyStep()
            state = dict(self.state)
            timeouts = dict(self.timeouts)
            out: list[pd.DataFrame] = []
            by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
            if len(rows):
                for index, key in enumerate(zip(rows["plan"].tolist(), rows["key"].tolist(), strict=True)):
                    by_key[key].append(index)
            for key in sorted(by_key, reverse=True):  # any order: Spark's is not fixed either
                group = rows.iloc[by_key[key]].sample(frac=1, random_state=len(by_key[key]))  # shuffled
                out.extend(self._call(step, key, [group], state, timeouts, timed_out=False))
            for key, at in sorted(timeouts.items()):
                if key not in by_key and at < self.watermark and key in state:
                    out.extend(self._call(step, key, [], state, timeouts, timed_out=True))
        finally:
            stream_stages.shipped = stream_stages._spark_files
        records = pd.concat(out, ignore_index=True).to_dict("records") if out else []
        result = _outputs(records)
        if commit:
            self.state, self.timeouts, self.offset = state, timeouts, end
            if micros:
                self.watermark = max(self.watermark, max(micros) // 1000 - WATERMARK_DELAY_MS)
            self.batches += 1
            reader.commit(_json(end))
        return result

    def _call(self, step: StreamKeyStep, key: tuple[str, str], frames: list[pd.DataFrame],
              state: dict[tuple[str, str], bytes], timeouts: dict[tuple[str, str], int], *,
              timed_out: bool) -> list[pd.DataFrame]:  # fmt: skip
        group = FakeState(state.get(key), self.watermark, timed_out)
        produced = list(step(key, iter(frames), group))
        timeouts.pop(key, None)
        if group.value is None:
            state.pop(key, None)
        else:
            state[key] = group.value
            if group.timeout != NO_TIMESTAMP:
                timeouts[key] = group.timeout
        return produced


def _json(offset: dict[str, Any]) -> dict[str, Any]:
    """An offset as Spark hands it back: through JSON."""
    return json.loads(json.dumps(offset))  # type: ignore[no-any-return]


def snapshot_files(folder: Path) -> SnapshotFiles:
    return SnapshotFiles(folder)
