"""What the single Spark streaming job runs on executors (plain functions over Arrow and pandas,
testable without a SparkSession), for every registered query at once:

- `gpm_rows` (the source's `read`, `log_source.EventLogReader`): one micro-batch partition
  (the batch's facts per query, then its events, each with its rank in every query that reads
  it) -> GPM rows of every query, plus one *clock row* per partition;
- `StreamKeyStep` (`applyInPandasWithState`, grouped by (plan id, partition key)): the per-key
  half of `QueryRunner.step` with the key's state in Spark's state store -> match rows, plus one
  *batch row* (from the clock group) per batch, and *error rows* for a query that raised.

Each query's plan (GPMs, automaton, key) and background snapshots reach the executors as files
the driver ships with `SparkContext.addFile` (`shipped`), read and cached once per Python worker:
a query registered while the job runs is in the next batch, with nothing restarted.

Both stages mirror `rsep.plugin.service.runner.QueryRunner` exactly, so the Spark engine finds
the matches (and graph IRIs) of the in-process engine:

* ranks are numbered by the source over each query's whole streamset (`number_records`) before
  anything is split by key;
* every row carries its query's `closed` rank and `clock` (the newest time among the records the
  query read in the batch, all streams): ranks up to `closed` are processed for real, the open
  rank (the newest timestamp, when nothing later is in the batch) tentatively on a copy of the
  key's NFA, its rows kept as `pending` until a later batch (or, for keys without new rows, the
  watermark) closes it; then `advance_time(closed, clock)`, as the runner does;
* a key's state is the runner's `RunnerState` restricted to that key (its NFA, pending rows and
  the events its runs still refer to), serialised with the runner's `dump_keyed`.

The runner advances every key after every step; a Spark key is only called when it has rows. So
each batch also carries the query's previous closed rank and clock, and a key first catches up
with them (`StreamKeyStep.on_rows`): its state is then the runner's at every batch where it has
rows. Keys that get no more rows are called on an event-time timeout instead, to free memory:
the watermark (the newest job clock Spark has seen, shifted, see `event_time_seconds`) is a safe
lower bound of every later event's time of a query at the head of the log, so the key can expire
runs by WITHIN and close its pending rank. A query still reading the log's history (`behind`)
sets no timeouts: the watermark says nothing about its later events. Expiry by strict contiguity
needs the rank, which the watermark does not carry: such runs go when the key gets rows again or
by WITHIN.

One query's failure stays its own: an exception of its GPM stage or of one of its keys becomes an
error row (its key's state is left as it was), which the driver turns into that query's failure;
the other queries' rows of the batch go on.
"""

from __future__ import annotations

import json
import math
import pickle
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, Rows, first_run_start, keep_live, pending_rank
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.service.checkpoints import load_pickle
from rsep.plugin.service.runner import dump_keyed, load_keyed
from rsep.plugin.spark.log_source import QueryFacts
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import BackgroundSnapshot

# pyspark's applyInPandasWithState pads its output with all-NA frames before
# pd.concat, which pandas 2 warns about on every call (in this worker process).
warnings.filterwarnings("ignore", "The behavior of DataFrame concatenation with empty", FutureWarning)

CLOCK_PLAN = ""
"""The plan column of clock rows: no plan id is empty."""
ERROR_KEY = "!"
"""The key column of a query's error rows: not a JSON list, so no partition key equals it."""

GPM_ROW = 0
CLOCK_ROW = 1
ERROR_ROW = 2

ROW_COLUMNS = ("plan", "key", "kind", "rank", "time", "event", "gpm", "mapping", "name", "lexical", "numeric",
               "start", "start_lexical", "closed", "clock", "prev_closed", "prev_clock", "behind", "facts",
               "ts")  # fmt: skip
"""A GPM row (`start`/`start_lexical` its event's interval start, NaN/None for an instantaneous
event), a clock row (`plan` = CLOCK_PLAN; `facts` = JSON {plan id: [end, count]}) or an error row
(`key` = ERROR_KEY, `facts` = the message); `ts` is the batch's job clock as event time."""

OUT_COLUMNS = ("plan", "kind", "events", "start_time", "end_time", "start_rank", "end_rank", "mapping",
               "refs", "facts")  # fmt: skip
"""A match (`kind` GPM_ROW; `refs` the JSON list of its events' [position, name, seconds, lexical,
numeric], followed by the interval start's seconds and lexical form for an event that spans one),
the batch row (CLOCK_ROW, `facts` as the clock rows') or an error (ERROR_ROW, `facts` the
message)."""

_MAPPING = MapType(StringType(), StringType(), valueContainsNull=False)

ROW_SCHEMA = StructType(
    [
        StructField("plan", StringType()),
        StructField("key", StringType()),
        StructField("kind", IntegerType()),
        StructField("rank", LongType()),
        StructField("time", DoubleType()),
        StructField("event", LongType()),
        StructField("gpm", IntegerType()),
        StructField("mapping", MapType(StringType(), StringType())),
        StructField("name", StringType()),
        StructField("lexical", StringType()),
        StructField("numeric", BooleanType()),
        StructField("start", DoubleType()),
        StructField("start_lexical", StringType()),
        StructField("closed", LongType()),
        StructField("clock", DoubleType()),
        StructField("prev_closed", LongType()),
        StructField("prev_clock", DoubleType()),
        StructField("behind", BooleanType()),
        StructField("facts", StringType()),
        StructField("ts", TimestampType()),
    ]
)
"""`ROW_COLUMNS`: what the source produces (nullable, as Arrow batches from Python are)."""

_ARROW_ROW = pa.schema(
    [("plan", pa.string()), ("key", pa.string()), ("kind", pa.int32()), ("rank", pa.int64()),
     ("time", pa.float64()), ("event", pa.int64()), ("gpm", pa.int32()),
     ("mapping", pa.map_(pa.string(), pa.string())), ("name", pa.string()), ("lexical", pa.string()),
     ("numeric", pa.bool_()), ("start", pa.float64()), ("start_lexical", pa.string()),
     ("closed", pa.int64()), ("clock", pa.float64()), ("prev_closed", pa.int64()),
     ("prev_clock", pa.float64()), ("behind", pa.bool_()), ("facts", pa.string()),
     ("ts", pa.timestamp("us", tz="UTC"))]
)  # fmt: skip

OUT_SCHEMA = StructType(
    [
        StructField("plan", StringType(), nullable=False),
        StructField("kind", IntegerType(), nullable=False),
        StructField("events", ArrayType(LongType(), containsNull=False), nullable=False),
        StructField("start_time", DoubleType(), nullable=False),
        StructField("end_time", DoubleType(), nullable=False),
        StructField("start_rank", LongType(), nullable=False),
        StructField("end_rank", LongType(), nullable=False),
        StructField("mapping", _MAPPING, nullable=False),
        StructField("refs", StringType(), nullable=False),
        StructField("facts", StringType(), nullable=True),
    ]
)
"""`OUT_COLUMNS`: matches, batch rows and error rows."""

STATE_SCHEMA = StructType([StructField("state", BinaryType(), nullable=False)])
"""A key's state as a `keyed` checkpoint (`runner.dump_keyed`)."""

assert tuple(ROW_SCHEMA.fieldNames()) == ROW_COLUMNS == tuple(_ARROW_ROW.names)
assert tuple(OUT_SCHEMA.fieldNames()) == OUT_COLUMNS

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


# ---------------------------------------------------------------- shipped files


@dataclass(frozen=True, slots=True)
class StagePlan:
    """What the executors need of a query's plan (shipped as `plan-<plan id>.pkl`)."""

    gpms: tuple[GpmPlan, ...]
    key: tuple[str, ...]
    automaton: Automaton


def plan_file(plan_id: str) -> str:
    return f"plan-{plan_id}.pkl"


def _spark_files(name: str) -> bytes | None:
    """A file the driver shipped with `SparkContext.addFile` (None: not shipped)."""
    from pyspark import SparkFiles

    try:
        with open(SparkFiles.get(name), "rb") as handle:
            return handle.read()
    except (FileNotFoundError, TypeError):  # TypeError: no SparkFiles root (not in Spark)
        return None


shipped: Callable[[str], bytes | None] = _spark_files
"""How executors read shipped files (the simulation of the tests puts its own here)."""

_LOADED: OrderedDict[str, object] = OrderedDict()
"""Plans and snapshots a Python worker has unpickled, newest last (a worker serves many tasks)."""
_LOADED_KEPT = 64


def load_shipped(name: str) -> Any:
    """The object in a shipped file, cached per worker (None: not shipped)."""
    found = _LOADED.get(name)
    if found is None:
        data = shipped(name)
        if data is None:
            return None
        found = pickle.loads(data) if name.startswith("plan-") else load_pickle(data)
        _LOADED[name] = found
        while len(_LOADED) > _LOADED_KEPT:
            _LOADED.popitem(last=False)
    _LOADED.move_to_end(name)
    return found


def stage_plan(plan_id: str) -> StagePlan | None:
    found = load_shipped(plan_file(plan_id))
    assert found is None or isinstance(found, StagePlan)
    return found


# ---------------------------------------------------------------- GPM stage


def gpm_rows(facts: Sequence[QueryFacts], clock: float, events: Sequence[tuple[Any, ...]]) -> pa.RecordBatch:
    """The rows of one micro-batch partition: every query's GPM rows over the events it reads
    (in slices of at most `GPM_BATCH` events), an error row for a query whose GPM stage raised,
    and the clock row."""
    out: dict[str, list[Any]] = {name: [] for name in ROW_COLUMNS}
    ts = round(event_time_seconds(clock) * 1_000_000)
    for query in facts:
        try:
            plan = stage_plan(query.plan)
            if plan is None:
                continue  # unregistered since the batch was planned: nobody reads its results
            found = _query_rows(plan, query, [event for event in events if query.plan in event[-1]])
        except Exception as error:
            _append(out, _error_row(query, f"{type(error).__name__}: {error}", ts))
            continue
        for row in found:
            _append(out, (*row, ts))
    ends = {q.plan: [q.end, q.count] for q in facts}
    _append(out, (CLOCK_PLAN, "", CLOCK_ROW, -1, clock, -1, -1, {}, "", "", False, None, None, -1, clock, -1,
                  clock, False, json.dumps(ends, sort_keys=True), ts))  # fmt: skip
    return _batch(out)


GPM_BATCH = 5000
"""Events per GPM evaluation (one in-memory Oxigraph store per slice and stream)."""


def _query_rows(
    plan: StagePlan, query: QueryFacts, events: Sequence[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """One query's GPM rows (every column but `ts`)."""
    if not events:
        return []
    background = load_shipped(query.kb) if query.kb else None
    if query.kb and background is None:
        raise FileNotFoundError(f"background snapshot {query.kb} was not shipped")
    assert background is None or isinstance(background, BackgroundSnapshot)
    evaluator = GpmEvaluator(plan.gpms, background)
    batch_facts = (query.closed, query.clock, query.prev_closed, query.prev_clock, query.behind, None)
    rows: list[tuple[Any, ...]] = []
    for first in range(0, len(events), GPM_BATCH):
        part = events[first : first + GPM_BATCH]
        info = {e[0]: e for e in part}
        batch = [(e[0], GraphEvent(e[1], "", Timestamp(e[3], repr(e[3]), True), e[6])) for e in part]
        for gpm, found in evaluator.evaluate(batch).items():
            for event_id, mapping in found:
                _, _, name, seconds, lexical, numeric, _, start, start_lexical, ranks = info[event_id]
                key = json.dumps([mapping[v] for v in plan.key])
                rows.append((query.plan, key, GPM_ROW, ranks[query.plan], seconds, event_id, gpm, mapping,
                             name, lexical, numeric, start, start_lexical, *batch_facts))  # fmt: skip
    return rows


def _error_row(query: QueryFacts, message: str, ts: int) -> tuple[Any, ...]:
    return (query.plan, ERROR_KEY, ERROR_ROW, -1, query.clock, -1, -1, {}, "", "", False, None, None, -1,
            query.clock, -1, query.clock, query.behind, message, ts)  # fmt: skip


def _append(out: dict[str, list[Any]], row: tuple[Any, ...]) -> None:
    for column, value in zip(ROW_COLUMNS, row, strict=True):
        out[column].append(value)


def _batch(out: dict[str, list[Any]]) -> pa.RecordBatch:
    out["mapping"] = [list(m.items()) for m in out["mapping"]]
    out["start"] = [None if s is None or s != s else s for s in out["start"]]  # NaN: no interval
    arrays = [pa.array(out[f.name], type=f.type) for f in _ARROW_ROW]
    return pa.RecordBatch.from_arrays(arrays, schema=_ARROW_ROW)


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
    """`((plan id, key), rows, state) -> match rows` for `applyInPandasWithState`: the per-key
    step (`rsep.plugin.nfa.keyed`) of one query's partition key, whose state (its `KeyedState` and
    the events it still names) lives in Spark's state store as a `keyed` checkpoint. Also turns
    the clock group into the batch row and a query's error rows into one error row each. The
    plans are the shipped ones (`stage_plan`); a key of a plan no longer shipped (its query was
    unregistered, or restarted afresh, before the driver restarted) is dropped."""

    def __init__(self, plans: Callable[[str], StagePlan | None] = stage_plan) -> None:
        self.plans = plans
        self._steps: dict[str, KeyedNfa] = {}

    def __getstate__(self) -> object:
        return self.plans

    def __setstate__(self, state: Any) -> None:
        self.plans = state
        self._steps = {}

    def keyed(self, plan_id: str) -> KeyedNfa | None:
        found = self._steps.get(plan_id)
        if found is None:
            plan = self.plans(plan_id)
            if plan is None:
                return None
            found = self._steps[plan_id] = KeyedNfa(plan.automaton, plan.key)
        return found

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], group: GroupStateLike
    ) -> Iterator[pd.DataFrame]:
        plan_id, part = key
        if plan_id == CLOCK_PLAN:
            yield batch_frame([f for f in frames if len(f)])
            return
        if part == ERROR_KEY:
            messages = [m for f in frames for m in f["facts"].tolist()]
            yield error_frame(plan_id, messages[0] if messages else "failed")
            return
        try:
            keyed = self.keyed(plan_id)
            if keyed is None:  # the query is gone
                if group.exists:
                    group.remove()
                return
            out = self.step(keyed, plan_id, frames, group)
        except Exception as error:  # this query's failure, not the job's: the state stays as it was
            out = error_frame(plan_id, f"{type(error).__name__}: {error}")
        if len(out):  # pyspark concatenates the frames: empty ones only cost (and warn)
            yield out

    def step(
        self, keyed: KeyedNfa, plan_id: str, frames: Iterable[pd.DataFrame], group: GroupStateLike
    ) -> pd.DataFrame:
        automaton = keyed.automaton
        state, events = load_keyed(group.get[0], automaton) if group.exists else (KeyedState(), {})
        behind = False
        if group.hasTimedOut:
            matches = self.on_timeout(keyed, state, events, group.getCurrentWatermarkMs())
        else:
            frame = pd.concat(list(frames), ignore_index=True)
            behind = bool(frame["behind"].any())
            matches = self.on_rows(keyed, state, events, frame)
        out = match_frame(plan_id, matches, events)
        keep_live(events, state)
        if state.states or state.pending:
            group.update((dump_keyed(state, events, automaton),))
            timeout = None if behind else self.timeout(keyed, state, events)
            if timeout is not None:
                group.setTimeoutTimestamp(max(timeout, group.getCurrentWatermarkMs() + 1))
        elif group.exists:
            group.remove()
        return out

    def on_rows(
        self, keyed: KeyedNfa, state: KeyedState, events: dict[int, NumberedEvent], frame: pd.DataFrame
    ) -> list[Match]:
        """New GPM rows of this key (one micro-batch): `QueryRunner.step` for one key. The key
        first catches up with its query's previous batch, in which it may have had no rows (the
        runner steps every key at every batch; Spark calls a key only when it has rows): its
        pending rank processed if that batch closed it, then advanced to that batch's closed rank
        and clock (advancing is monotone, so the last advance stands for all the ones it missed)."""
        matches: list[Match] = []
        prev_closed = int(frame["prev_closed"].max())
        if prev_closed >= 0 and (state.states or state.pending):
            prev_clock = float(frame["prev_clock"].max())
            matches = keyed.step(state, {}, events, prev_closed, prev_clock, tentative=False)
        rows = _rows(frame, events)
        closed, clock = int(frame["closed"].max()), float(frame["clock"].max())
        matches.extend(keyed.step(state, rows, events, closed, clock))
        return matches

    def on_timeout(
        self, keyed: KeyedNfa, state: KeyedState, events: dict[int, NumberedEvent], watermark_ms: int
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
        return keyed.step(state, {}, events, closed, now, tentative=False)

    def timeout(self, keyed: KeyedNfa, state: KeyedState, events: Mapping[int, NumberedEvent]) -> int | None:
        """When to be called without rows: once the pending rank can be complete, or the oldest
        run's WITHIN has passed (None: never)."""
        times = []
        if state.pending:
            times.append(pending_rank(state, events)[1])
        within, first = keyed.automaton.within, first_run_start(state)
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
    "plan": object, "kind": "int32", "events": object, "start_time": "float64", "end_time": "float64",
    "start_rank": "int64", "end_rank": "int64", "mapping": object, "refs": object, "facts": object,
}  # fmt: skip


def typed(columns: Mapping[str, Sequence[object]], names: Sequence[str]) -> pd.DataFrame:
    """A frame with the dtypes Arrow needs, even when empty (pandas would type
    empty columns float64, which Arrow cannot turn into strings or maps)."""
    return pd.DataFrame({name: pd.Series(columns[name], dtype=_DTYPES[name]) for name in names})


def match_frame(plan_id: str, matches: Sequence[Match], events: Mapping[int, NumberedEvent]) -> pd.DataFrame:
    """Match rows, each with what its graph says about its events."""
    refs = [json.dumps([_ref(events[i].id, events[i].event) for i in m.events], ensure_ascii=False)
            for m in matches]  # fmt: skip
    size = len(matches)
    return typed(
        {"plan": [plan_id] * size, "kind": [GPM_ROW] * size, "events": [list(m.events) for m in matches],
         "start_time": [m.start_time for m in matches], "end_time": [m.end_time for m in matches],
         "start_rank": [m.start_rank for m in matches], "end_rank": [m.end_rank for m in matches],
         "mapping": [dict(m.mapping) for m in matches], "refs": refs, "facts": [None] * size},
        OUT_COLUMNS,
    )  # fmt: skip


def _ref(position: int, event: GraphEvent) -> list[object]:
    """[position, name, seconds, lexical, numeric] of a match's event, and its interval start's
    seconds and lexical form when it spans one (`streaming._outputs` reads them back)."""
    time, start = event.time, event.start
    ref: list[object] = [position, event.name, time.seconds, time.lexical, time.numeric]
    return ref if start is None else [*ref, start.seconds, start.lexical]


def _one(plan_id: str, kind: int, facts: str) -> pd.DataFrame:
    return typed(
        {"plan": [plan_id], "kind": [kind], "events": [[]], "start_time": [0.0], "end_time": [0.0],
         "start_rank": [0], "end_rank": [0], "mapping": [{}], "refs": ["[]"], "facts": [facts]},
        OUT_COLUMNS,
    )  # fmt: skip


def batch_frame(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The batch row: where each query's part of the micro-batch ends (all clock rows agree)."""
    ends: dict[str, list[int]] = {}
    for frame in frames:
        for facts in frame["facts"].tolist():
            ends.update(json.loads(facts))
    return _one(CLOCK_PLAN, CLOCK_ROW, json.dumps(ends, sort_keys=True))


def error_frame(plan_id: str, message: str) -> pd.DataFrame:
    """A query's failure, for the driver."""
    return _one(plan_id, ERROR_ROW, message)
