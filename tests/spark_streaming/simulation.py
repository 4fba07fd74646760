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
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql.streaming.datasource import ReadMaxRows

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.spark.log_source import EventLogReader, SnapshotFiles
from rsep.plugin.spark.stream_stages import (
    TIME_HIGH,
    TIME_LOW,
    TIME_SHIFT,
    WATERMARK_DELAY_MS,
    StreamGpmStage,
    StreamKeyStep,
)
from rsep.plugin.spark.streaming_engine import _outputs
from rsep.plugin.store.kb import BackgroundSnapshot

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
    """One continuous query's streaming job over an event log folder."""

    plan: QueryPlan
    log: Path
    snapshots: Path
    start: int = 0
    max_records: int = 10_000
    partition_size: int = 3
    partitions: int = 2
    background: BackgroundSnapshot | None = None
    broadcast_id: str = ""
    offset: dict[str, Any] | None = None
    state: dict[str, bytes] = field(default_factory=dict)
    timeouts: dict[str, int] = field(default_factory=dict)
    watermark: int = 0
    batches: int = 0
    reader: EventLogReader | None = None

    def new_reader(self) -> EventLogReader:
        """A planner process (Spark starts a new one when the query restarts)."""
        options = {"log": str(self.log), "snapshots": str(self.snapshots),
                   "streams": json.dumps(sorted(self.plan.streams)), "start": str(self.start),
                   "partition_size": str(self.partition_size), "partitions": str(self.partitions),
                   "max_records": str(self.max_records), "broadcast": self.broadcast_id}  # fmt: skip
        self.reader = EventLogReader(options)
        return self.reader

    def plan_batch(self) -> dict[str, Any] | None:
        """`latestOffset`: the next batch's end offset (None: nothing new)."""
        reader = self.reader or self.new_reader()
        start = self.offset if self.offset is not None else reader.initialOffset()
        end = reader.latestOffset(start, ReadMaxRows(self.max_records))
        return None if end == start else end

    def run_batch(self, end: dict[str, Any], commit: bool = True) -> tuple[list[Any], int | None]:
        """Execute the batch ending at `end`; commit (state, offset, watermark)
        or not (a crash before Spark's commit). Returns the driver's view:
        (matches with their event refs, in detection order; end position)."""
        reader = self.reader or self.new_reader()
        start = self.offset if self.offset is not None else reader.initialOffset()
        partitions = reader.partitions(start, end)
        broadcast = _Broadcast(self.background) if self.background is not None else None
        stage = StreamGpmStage(
            self.plan.gpms, self.plan.key, broadcast, self.broadcast_id, self.partition_size
        )
        frames = []
        for partition in partitions:
            source = pd.concat([b.to_pandas() for b in reader.read(partition)], ignore_index=True)
            frames.extend(stage(iter([source])))
        rows = pd.concat(frames, ignore_index=True)
        micros = [event_time_micros(t) for t in rows["time"].tolist()]
        assert all(m > self.watermark * 1000 for m in micros), "a row Spark would drop as late"
        step = StreamKeyStep(self.plan.automaton, self.plan.key)
        state = dict(self.state)
        timeouts = dict(self.timeouts)
        out: list[pd.DataFrame] = []
        by_key: dict[str, list[int]] = defaultdict(list)
        for index, key in enumerate(rows["key"].tolist()):
            by_key[key].append(index)
        for key in sorted(by_key, reverse=True):  # any order: Spark's is not fixed either
            group = rows.iloc[by_key[key]].sample(frac=1, random_state=len(by_key[key]))  # shuffled
            out.extend(self._call(step, key, [group], state, timeouts, timed_out=False))
        for key, at in sorted(timeouts.items()):
            if key not in by_key and at < self.watermark and key in state:
                out.extend(self._call(step, key, [], state, timeouts, timed_out=True))
        records = pd.concat(out, ignore_index=True).to_dict("records") if out else []
        found, position, _ = _outputs(records)
        if commit:
            self.state, self.timeouts, self.offset = state, timeouts, end
            self.watermark = max(self.watermark, max(micros) // 1000 - WATERMARK_DELAY_MS)
            self.batches += 1
            reader.commit(end)
        return found, position

    def _call(self, step: StreamKeyStep, key: str, frames: list[pd.DataFrame], state: dict[str, bytes],
              timeouts: dict[str, int], *, timed_out: bool) -> list[pd.DataFrame]:  # fmt: skip
        group = FakeState(state.get(key), self.watermark, timed_out)
        produced = list(step((key,), iter(frames), group))
        timeouts.pop(key, None)
        if group.value is None:
            state.pop(key, None)
        else:
            state[key] = group.value
            if group.timeout != NO_TIMESTAMP:
                timeouts[key] = group.timeout
        return produced


class _Broadcast:
    def __init__(self, value: BackgroundSnapshot) -> None:
        self.value = value


def snapshot_files(folder: Path) -> SnapshotFiles:
    return SnapshotFiles(folder)
