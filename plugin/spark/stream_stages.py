"""What a continuous query's Spark streaming job runs on executors (plain
functions over pandas frames, testable without a SparkSession):

- `StreamGpmStage` (`mapInPandas`): the rows of one micro-batch partition
  (`log_source.SOURCE_COLUMNS`: a header row with the batch's facts, then the
  events of the query's streamset) -> GPM rows, plus one *clock row* per
  partition;
- `KeyedNfa` (`applyInPandasWithState`, grouped by the partition key): the
  per-key half of `QueryRunner.step` with the key's state in Spark's state
  store -> match rows, plus one *batch row* (from the clock key) per batch.

Both mirror `rsep.plugin.service.runner.QueryRunner` exactly, so the Spark
engine finds the matches (and graph IRIs) of the in-process engine:

* ranks are numbered by the source over the whole streamset (`number_records`)
  before anything is split by key;
* every row carries its batch's `closed` rank and `clock` (the newest time in
  the batch's records, all streams): ranks up to `closed` are processed for
  real, the open rank (the newest timestamp, when nothing later is in the
  batch) tentatively on a copy of the key's NFA, its rows kept as `pending`
  until a later batch (or, for keys without new rows, the watermark) closes
  it; then `advance_time(closed, clock)`, as the runner does;
* a key's state is the runner's `RunnerState` restricted to that key (its
  NFA, pending rows and the events its runs still refer to), serialised with
  the runner's `dump_state`, which flattens the NFA paths (pickle would recurse
  once per node on long Kleene+ runs).

The runner advances every key after every step; a Spark key is only called
when it has rows. So each batch also carries the previous batch's closed rank
and clock, and a key first catches up with them (`KeyedNfa._catch_up`): its
state is then the runner's at every batch where it has rows. Keys that get no
more rows are called on an event-time timeout instead, to free memory: the
watermark (the newest time Spark has seen, shifted, see `event_time_seconds`)
is a safe lower bound of every later event's time, so the key can expire runs
by WITHIN and close its pending rank. Expiry by strict contiguity needs the
rank, which the watermark does not carry: such runs go when the key gets rows
again or by WITHIN.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, Rows, first_run_start, keep_live, pending_rank
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.service.checkpoints import load_pickle
from rsep.plugin.service.runner import dump_keyed, load_keyed
from rsep.plugin.spark.log_source import HEADER
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import BackgroundSnapshot

# pyspark's applyInPandasWithState pads its output with all-NA frames before
# pd.concat, which pandas 2 warns about on every call (in this worker process).
warnings.filterwarnings("ignore", "The behavior of DataFrame concatenation with empty", FutureWarning)

CLOCK_KEY = ""
"""The grouping key of clock rows: not a JSON list, so no partition key equals it."""

ROW_COLUMNS = ("key", "rank", "time", "event", "gpm", "mapping", "name", "lexical", "numeric", "start",
               "start_lexical", "closed", "clock", "end", "count", "prev_closed", "prev_clock")  # fmt: skip
"""A GPM row (`gpm` >= 0; `start`/`start_lexical` its event's interval start, NaN/None for an
instantaneous event) or a clock row (`key` = CLOCK_KEY, `gpm` = -1, `time` = clock), with the
batch's facts on every row."""

OUT_COLUMNS = ("batch", "events", "start_time", "end_time", "start_rank", "end_rank", "mapping", "refs",
               "end", "count")  # fmt: skip
"""A match (`batch` false; `refs` the JSON list of its events' [position,
name, seconds, lexical, numeric], followed by the interval start's seconds and
lexical form for an event that spans one) or the batch row (`batch` true, `end` and
`count` of the batch)."""

# ---------------------------------------------------------------- event time
#
# Spark's watermark is a timestamp, and rows at or below it are dropped as late
# (with an event-time timeout). Event times are any float seconds: numbers in
# abstract units (0, 1, 2 ...) or epoch seconds of any xsd:dateTime. So the
# event-time column is the time clamped and shifted into what a pandas
# timestamp holds (the stateful function receives the column; nanoseconds
# since 1970 end in 2262) and positive (the initial watermark, 0, must not
# drop an event at time 0). Order is kept, and the clamp only ever lowers a
# time beyond TIME_HIGH, so a watermark read back is still a lower bound of
# later times; one in the clamped-low range is not used.

TIME_LOW = -4_000_000_000.0
"""Event times before (about 1843) are clamped."""
TIME_HIGH = 5_000_000_000.0
"""Event times after (about 2128) are clamped."""
TIME_SHIFT = 4_100_000_000.0
"""Added after clamping: every event-time value is a positive timestamp before 2262."""
WATERMARK_DELAY_MS = 1
"""Spark's watermark delay: an event may share the newest timestamp, so the
watermark must stay strictly below it or Spark drops it as late."""
_MARGIN = 0.001
"""Seconds kept off a watermark read back: timestamps are micros of a double
and the watermark milliseconds."""


def event_time_seconds(seconds: float) -> float:
    """The value of the event-time column (seconds of a Spark timestamp)."""
    return min(max(seconds, TIME_LOW), TIME_HIGH) + TIME_SHIFT


def time_below_watermark(watermark_ms: int) -> float | None:
    """A time no later event can be before, from Spark's watermark (None when
    the watermark is unset or in the clamped range). The watermark is the
    newest event-time value seen minus the delay, and the log is in time order."""
    if watermark_ms <= 0:  # unset (pyspark's NO_TIMESTAMP is -1) or the initial 0
        return None
    seconds = (watermark_ms + WATERMARK_DELAY_MS) / 1000 - TIME_SHIFT - _MARGIN
    return seconds if seconds > TIME_LOW + _MARGIN else None


def watermark_after(seconds: float) -> int:
    """The timeout timestamp (ms) past which `time_below_watermark` exceeds `seconds`."""
    target = event_time_seconds(seconds) + _MARGIN
    return math.ceil(target * 1000) - WATERMARK_DELAY_MS + 1


# ---------------------------------------------------------------- GPM stage


class BroadcastLike(Protocol):
    """What the stage reads of a pyspark `Broadcast`."""

    @property
    def value(self) -> BackgroundSnapshot: ...


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """What a partition's header says about its micro-batch."""

    end: int
    closed: int
    clock: float
    count: int
    prev_closed: int
    prev_clock: float
    kb: str


_SNAPSHOTS: OrderedDict[str, BackgroundSnapshot] = OrderedDict()
"""Background snapshots a Python worker has unpickled, newest last (a worker
serves many tasks, and a snapshot changes rarely)."""
_SNAPSHOTS_KEPT = 4


class StreamGpmStage:
    """The `mapInPandas` function: source rows -> GPM rows and clock rows.

    The background snapshot of a batch is the one its offsets name (`kb` in the
    header), so a batch replayed after a crash is evaluated against the same
    knowledge base: the broadcast one when the ids agree (the snapshot current
    when the streaming query started), else the pickle the header carries."""

    def __init__(
        self,
        gpms: Sequence[GpmPlan],
        key: Sequence[str],
        broadcast: BroadcastLike | None,
        broadcast_id: str,
        batch_size: int,
    ) -> None:
        self.gpms = tuple(gpms)
        self.key = tuple(key)
        self.broadcast = broadcast
        self.broadcast_id = broadcast_id
        self.batch_size = batch_size

    def __call__(self, frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        facts: BatchFacts | None = None
        evaluator: GpmEvaluator | None = None
        for frame in frames:
            kinds = frame["kind"].to_numpy()
            start = 0
            for index in [*np.flatnonzero(kinds == HEADER).tolist(), len(frame)]:
                if index > start:
                    if facts is None or evaluator is None:
                        raise ValueError("event rows before their batch header")
                    events = frame.iloc[start:index]
                    for first in range(0, len(events), self.batch_size):
                        yield self.rows(evaluator, facts, events.iloc[first : first + self.batch_size])
                if index < len(frame):
                    header = frame.iloc[index]
                    facts = BatchFacts(int(header["id"]), int(header["closed"]), float(header["time"]),
                                       int(header["count"]), int(header["prev_closed"]),
                                       float(header["prev_clock"]), str(header["kb"]))  # fmt: skip
                    evaluator = GpmEvaluator(self.gpms, self._background(facts.kb, header["kb_data"]))
                    yield clock_frame(facts)
                start = index + 1

    def _background(self, snapshot_id: str, data: object) -> BackgroundSnapshot | None:
        if not snapshot_id:
            return None
        if snapshot_id == self.broadcast_id and self.broadcast is not None:
            return self.broadcast.value
        found = _SNAPSHOTS.get(snapshot_id)
        if found is None:
            if not isinstance(data, bytes | bytearray):
                raise ValueError(f"background snapshot {snapshot_id} is neither broadcast nor attached")
            found = load_pickle(bytes(data))
            assert isinstance(found, BackgroundSnapshot)
            _SNAPSHOTS[snapshot_id] = found
            while len(_SNAPSHOTS) > _SNAPSHOTS_KEPT:
                _SNAPSHOTS.popitem(last=False)
        _SNAPSHOTS.move_to_end(snapshot_id)
        return found

    def rows(self, evaluator: GpmEvaluator, facts: BatchFacts, frame: pd.DataFrame) -> pd.DataFrame:
        """GPM rows of a slice of event rows."""
        ids = frame["id"].tolist()
        per_event = ("rank", "time", "name", "lexical", "numeric", "start", "start_lexical")
        info = dict(zip(ids, zip(*(frame[c].tolist() for c in per_event), strict=True), strict=True))
        batch = [
            (event_id, GraphEvent(stream, "", Timestamp(time, repr(time), True), ntriples))
            for event_id, stream, time, ntriples in zip(
                ids, frame["stream"].tolist(), frame["time"].tolist(), frame["ntriples"].tolist(), strict=True
            )
        ]
        out: dict[str, list[object]] = {name: [] for name in ROW_COLUMNS}
        for gpm, found in evaluator.evaluate(batch).items():
            for event_id, mapping in found:
                values = (json.dumps([mapping[v] for v in self.key]), *info[event_id][:2], event_id, gpm,
                          mapping, *info[event_id][2:])  # fmt: skip
                for column, value in zip(ROW_COLUMNS[:11], values, strict=True):
                    out[column].append(value)
        size = len(out["key"])
        out.update(closed=[facts.closed] * size, clock=[facts.clock] * size, end=[facts.end] * size,
                   count=[facts.count] * size, prev_closed=[facts.prev_closed] * size,
                   prev_clock=[facts.prev_clock] * size)  # fmt: skip
        return typed(out, ROW_COLUMNS)


def clock_frame(facts: BatchFacts) -> pd.DataFrame:
    """The clock row of one partition: it carries the batch's newest time to
    Spark's watermark (events of other streams and events no GPM matched count
    too) and its end position and count to the driver."""
    return typed(
        {"key": [CLOCK_KEY], "rank": [facts.closed], "time": [facts.clock], "event": [facts.end], "gpm": [-1],
         "mapping": [{}], "name": [""], "lexical": [""], "numeric": [False], "start": [math.nan],
         "start_lexical": [None], "closed": [facts.closed],
         "clock": [facts.clock], "end": [facts.end], "count": [facts.count],
         "prev_closed": [facts.prev_closed], "prev_clock": [facts.prev_clock]},
        ROW_COLUMNS,
    )  # fmt: skip


# ---------------------------------------------------------------- per-key NFA


class GroupStateLike(Protocol):
    """What `KeyedNfa` uses of pyspark's `GroupState`."""

    @property
    def exists(self) -> bool: ...

    @property
    def get(self) -> tuple[Any, ...]: ...

    @property
    def hasTimedOut(self) -> bool: ...

    def update(self, newValue: tuple[Any, ...]) -> None: ...

    def remove(self) -> None: ...

    def setTimeoutTimestamp(self, timestampMs: int) -> None: ...

    def getCurrentWatermarkMs(self) -> int: ...


class StreamKeyStep:
    """`(key, rows, state) -> match rows` for `applyInPandasWithState`: the per-key step
    (`rsep.plugin.nfa.keyed`) of one Spark partition key, whose state (its `KeyedState` and the
    events it still names) lives in Spark's state store as a `keyed` checkpoint. Pickles as the
    step (its automaton and key)."""

    __slots__ = ("keyed",)

    def __init__(self, automaton: Automaton, key: Sequence[str]) -> None:
        self.keyed = KeyedNfa(automaton, key)

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], group: GroupStateLike
    ) -> Iterator[pd.DataFrame]:
        if key[0] == CLOCK_KEY:
            yield batch_frame([f for f in frames if len(f)])
            return
        automaton = self.keyed.automaton
        state, events = load_keyed(group.get[0], automaton) if group.exists else (KeyedState(), {})
        if group.hasTimedOut:
            matches = self.on_timeout(state, events, group.getCurrentWatermarkMs())
        else:
            matches = self.on_rows(state, events, pd.concat(list(frames), ignore_index=True))
        out = match_frame(matches, events)
        keep_live(events, state)
        if state.states or state.pending:
            group.update((dump_keyed(state, events, automaton),))
            timeout = self.timeout(state, events)
            if timeout is not None:
                group.setTimeoutTimestamp(max(timeout, group.getCurrentWatermarkMs() + 1))
        elif group.exists:
            group.remove()
        if len(out):  # pyspark concatenates the frames: empty ones only cost (and warn)
            yield out

    def on_rows(
        self, state: KeyedState, events: dict[int, NumberedEvent], frame: pd.DataFrame
    ) -> list[Match]:
        """New GPM rows of this key (one micro-batch): `QueryRunner.step` for one key. The key
        first catches up with the previous batch, in which it may have had no rows (the runner
        steps every key at every batch; Spark calls a key only when it has rows): its pending
        rank processed if that batch closed it, then advanced to that batch's closed rank and
        clock (advancing is monotone, so the last advance stands for all the ones it missed)."""
        matches: list[Match] = []
        prev_closed = int(frame["prev_closed"].max())
        if prev_closed >= 0 and (state.states or state.pending):
            prev_clock = float(frame["prev_clock"].max())
            matches = self.keyed.step(state, {}, events, prev_closed, prev_clock, tentative=False)
        rows = _rows(frame, events)
        closed, clock = int(frame["closed"].max()), float(frame["clock"].max())
        matches.extend(self.keyed.step(state, rows, events, closed, clock))
        return matches

    def on_timeout(
        self, state: KeyedState, events: dict[int, NumberedEvent], watermark_ms: int
    ) -> list[Match]:
        """No rows for this key for a while: close its pending rank if a later event exists, and
        expire runs up to the time the watermark vouches for."""
        now = time_below_watermark(watermark_ms)
        if now is None:
            return []
        closed = state.closed_rank
        if state.pending:
            rank, time = pending_rank(state, events)
            if now > time:  # a later event is in the log: the rank is complete
                closed = rank
            else:
                now = min(now, time)
        return self.keyed.step(state, {}, events, closed, now, tentative=False)

    def timeout(self, state: KeyedState, events: Mapping[int, NumberedEvent]) -> int | None:
        """When to be called without rows: once the pending rank can be complete, or the oldest
        run's WITHIN has passed (None: never)."""
        times = []
        if state.pending:
            times.append(pending_rank(state, events)[1])
        within, first = self.keyed.automaton.within, first_run_start(state)
        if within is not None and first is not None:
            times.append(first + within)
        return watermark_after(min(times)) if times else None


def _rows(frame: pd.DataFrame, events: dict[int, NumberedEvent]) -> Rows:
    """A key's GPM rows of one batch (their events added to `events`), sorted: Spark's shuffle
    keeps no order, and a replayed batch must build the same runs (and state) as the first."""
    found: list[tuple[int, int, int, dict[str, str]]] = []
    columns = (
        "rank",
        "time",
        "event",
        "gpm",
        "mapping",
        "name",
        "lexical",
        "numeric",
        "start",
        "start_lexical",
    )
    for rank, time, event, gpm, mapping, name, lexical, numeric, start, start_lexical in zip(
        *(frame[c].tolist() for c in columns), strict=True
    ):
        if event not in events:
            at = Timestamp(float(time), str(lexical), bool(numeric))
            begins = None if math.isnan(start) else Timestamp(start, str(start_lexical), at.numeric)
            events[event] = NumberedEvent(int(event), int(rank), GraphEvent("", str(name), at, "", begins))
        found.append((int(rank), int(gpm), int(event), dict(mapping)))
    found.sort(key=lambda r: (r[0], r[1], r[2], sorted(r[3].items())))
    rows: Rows = {}
    for _, gpm, event, mapping in found:
        rows.setdefault(gpm, []).append((event, mapping))
    return rows


# ---------------------------------------------------------------- frames

_DTYPES: dict[str, Any] = {
    "key": object, "rank": "int64", "time": "float64", "event": "int64", "gpm": "int32", "mapping": object,
    "name": object, "lexical": object, "numeric": "bool", "start": "float64", "start_lexical": object,
    "closed": "int64", "clock": "float64",
    "end": "int64", "count": "int64", "prev_closed": "int64", "prev_clock": "float64", "batch": "bool",
    "events": object, "start_time": "float64", "end_time": "float64", "start_rank": "int64",
    "end_rank": "int64", "refs": object,
}  # fmt: skip


def typed(columns: Mapping[str, Sequence[object]], names: Sequence[str]) -> pd.DataFrame:
    """A frame with the dtypes Arrow needs, even when empty (pandas would type
    empty columns float64, which Arrow cannot turn into strings or maps)."""
    return pd.DataFrame({name: pd.Series(columns[name], dtype=_DTYPES[name]) for name in names})


def match_frame(matches: Sequence[Match], events: Mapping[int, NumberedEvent]) -> pd.DataFrame:
    """Match rows, each with what its graph says about its events."""
    refs = [json.dumps([_ref(events[i].id, events[i].event) for i in m.events], ensure_ascii=False)
            for m in matches]  # fmt: skip
    size = len(matches)
    return typed(
        {"batch": [False] * size, "events": [list(m.events) for m in matches],
         "start_time": [m.start_time for m in matches], "end_time": [m.end_time for m in matches],
         "start_rank": [m.start_rank for m in matches], "end_rank": [m.end_rank for m in matches],
         "mapping": [dict(m.mapping) for m in matches], "refs": refs, "end": [-1] * size,
         "count": [0] * size},
        OUT_COLUMNS,
    )  # fmt: skip


def _ref(position: int, event: GraphEvent) -> list[object]:
    """[position, name, seconds, lexical, numeric] of a match's event, and its interval start's
    seconds and lexical form when it spans one (`streaming._outputs` reads them back)."""
    time, start = event.time, event.start
    ref: list[object] = [position, event.name, time.seconds, time.lexical, time.numeric]
    return ref if start is None else [*ref, start.seconds, start.lexical]


def batch_frame(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The batch row: where the micro-batch ends (all clock rows agree)."""
    end = max((int(f["end"].max()) for f in frames), default=-1)
    count = max((int(f["count"].max()) for f in frames), default=0)
    return typed(
        {"batch": [True], "events": [[]], "start_time": [0.0], "end_time": [0.0], "start_rank": [0],
         "end_rank": [0], "mapping": [{}], "refs": ["[]"], "end": [end], "count": [count]},
        OUT_COLUMNS,
    )  # fmt: skip
