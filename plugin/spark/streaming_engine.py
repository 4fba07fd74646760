"""The Spark Structured Streaming engine (`RSEP_ENGINE=spark`): the
`StreamingEngine` protocol with one streaming query per registered query.

    planner      EventLogReader (log_source): offsets = log positions + rank
                 numbering + background snapshot id; records shipped in the
                 partitions (executors never open the log)
    executors    mapInPandas(StreamGpmStage): GPM rows + one clock row per
                 partition (background snapshot: broadcast, or attached)
                 withWatermark(event time) ... groupBy(key)
                 applyInPandasWithState(StreamKeyStep): the key's RunnerState in
                 the RocksDB state store; event-time timeouts expire runs of
                 keys that get no more rows
    driver       foreachBatch: matches -> projection (+ SELECT DISTINCT's
                 memory) -> match graphs -> OxigraphMatchSink (one
                 transaction, existing graphs skipped) -> flush -> the
                 driver checkpoint -> SSE listeners get the graphs created

Checkpoints of a query live under `DATA/checkpoints/<query id>/`: `spark/`
(Spark's offsets, commits and state store), `kb/` (background snapshots) and
the `CheckpointStore` files of the driver (`*.ckpt`: position, counts,
DISTINCT's memory). Unregistering stops the query and deletes the folder.

Exactly once, however the process stops: Spark writes a batch's offsets before
running it and its commit after `foreachBatch` returns, and the state store
moves with the commits; a batch cut short is run again from the same offsets
(same records, ranks and background snapshot, rows sorted per key), so it
produces the same graphs, which the sink skips and nobody is sent twice. The
store is flushed, and the driver checkpoint written, inside `foreachBatch`,
before Spark commits the batch.

One streaming query per registered query (not one job for all): a query may
start anywhere in the log (`from=0` replays history while others are at the
head), and stopping, failing or replaying one query never touches another.
The price is one planner process and one trigger loop per query.

Only this package imports pyspark: `rsep.endpoint.engines` asks `session.java_problem`
whether Spark can run at all and builds a `SparkStreamingEngine`, which starts
its session when it starts (docs/spark.md, "The streaming engine").
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import pickle
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
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
)

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.errors import InternalError
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.nfa.snapshot import fingerprint
from rsep.plugin.results import Projector
from rsep.plugin.service import checkpoints as checkpoint_format
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.engine import MatchSink, QueryCompiler, QueryProgress
from rsep.plugin.service.lifecycle import QuerySlots, Slot
from rsep.plugin.service.listeners import MatchListeners
from rsep.plugin.service.match_graphs import EventRef, MatchGraph, match_graph
from rsep.plugin.service.registry import RegisteredQuery, Registry
from rsep.plugin.spark.log_source import SOURCE_NAME, EventLogSource, SnapshotFiles
from rsep.plugin.spark.session import get_session
from rsep.plugin.spark.stream_stages import (
    OUT_COLUMNS,
    ROW_COLUMNS,
    TIME_HIGH,
    TIME_LOW,
    TIME_SHIFT,
    WATERMARK_DELAY_MS,
    StreamGpmStage,
    StreamKeyStep,
)
from rsep.plugin.store.kb import BackgroundSnapshot, KnowledgeBase

logger = logging.getLogger("rsep.spark.streaming")

_MAPPING = MapType(StringType(), StringType(), valueContainsNull=False)

ROW_SCHEMA = StructType(
    [
        StructField("key", StringType(), nullable=False),
        StructField("rank", LongType(), nullable=False),
        StructField("time", DoubleType(), nullable=False),
        StructField("event", LongType(), nullable=False),
        StructField("gpm", IntegerType(), nullable=False),
        StructField("mapping", _MAPPING, nullable=False),
        StructField("name", StringType(), nullable=False),
        StructField("lexical", StringType(), nullable=False),
        StructField("numeric", BooleanType(), nullable=False),
        StructField("start", DoubleType(), nullable=True),
        StructField("start_lexical", StringType(), nullable=True),
        StructField("closed", LongType(), nullable=False),
        StructField("clock", DoubleType(), nullable=False),
        StructField("end", LongType(), nullable=False),
        StructField("count", LongType(), nullable=False),
        StructField("prev_closed", LongType(), nullable=False),
        StructField("prev_clock", DoubleType(), nullable=False),
    ]
)
"""`stream_stages.ROW_COLUMNS`: GPM rows and clock rows."""

OUT_SCHEMA = StructType(
    [
        StructField("batch", BooleanType(), nullable=False),
        StructField("events", ArrayType(LongType(), containsNull=False), nullable=False),
        StructField("start_time", DoubleType(), nullable=False),
        StructField("end_time", DoubleType(), nullable=False),
        StructField("start_rank", LongType(), nullable=False),
        StructField("end_rank", LongType(), nullable=False),
        StructField("mapping", _MAPPING, nullable=False),
        StructField("refs", StringType(), nullable=False),
        StructField("end", LongType(), nullable=False),
        StructField("count", LongType(), nullable=False),
    ]
)
"""`stream_stages.OUT_COLUMNS`: matches and batch rows."""

STATE_SCHEMA = StructType([StructField("state", BinaryType(), nullable=False)])
"""A key's `RunnerState` as `runner.dump_state` bytes."""

assert tuple(ROW_SCHEMA.fieldNames()) == ROW_COLUMNS
assert tuple(OUT_SCHEMA.fieldNames()) == OUT_COLUMNS

ENGINE_CONF = {
    # Per-key NFA states can be large and many: RocksDB keeps them off the JVM
    # heap; changelog checkpointing writes only what changed per batch.
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # A batch without data would only fire timeouts, which change memory, never
    # matches: not worth a micro-batch (they come with the next data batch).
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.streaming.minBatchesToRetain": "20",
}  # fmt: skip
"""The engine's SQL settings, in its own session (`SparkSession.newSession`):
they do not leak into the session others use."""

# ---------------------------------------------------------------- background knowledge


class KbPublisher:
    """Keeps a query's background snapshot current for the batches to come.

    Whenever the knowledge base's version moved, the plan's background part is
    evaluated again (`KnowledgeBase.snapshot`) and, if the answers changed,
    written as a new snapshot file and made `CURRENT`; the source names the
    current one in each batch's end offset when it plans the batch. Match
    writes move the version too, but rarely change what a plan reads, so the
    content digest keeps snapshots from piling up."""

    def __init__(self, kb: KnowledgeBase, plan: QueryPlan, folder: Path) -> None:
        self.kb = kb
        self.gpms = plan.gpms
        self.needed: bool | None = None
        """Does the plan read the knowledge base at all? (Known at the first refresh.)"""
        self.files = SnapshotFiles(folder)
        self.current_id = ""
        self.snapshot: BackgroundSnapshot | None = None
        self._version: int | None = None
        self._lock = threading.Lock()

    def refresh(self) -> None:
        if self.needed is False:
            return
        with self._lock:
            version = self.kb.version
            if version == self._version and self.snapshot is not None:
                return
            snapshot = self.kb.snapshot(self.gpms)
            if self.needed is None:
                # What a plan reads (background queries, entailment lookups, graphs
                # copied into batches) is fixed by the plan: the snapshot's keys say.
                self.needed = bool(snapshot.answers or snapshot.graphs)
                if not self.needed:
                    return
                self.current_id = self.files.current()
            content = pickle.dumps((dict(snapshot.answers), dict(snapshot.graphs)), protocol=5)
            digest = hashlib.sha256(content).hexdigest()
            self._version = version
            if not self.current_id.endswith("-" + digest[:16]):  # (after a restart: maybe the same)
                self.current_id = self.files.publish(pickle.dumps(snapshot, protocol=5), digest)
            self.snapshot = snapshot


# ---------------------------------------------------------------- the engine


@dataclass(slots=True)
class _Slot(Slot):
    """A registered query as this engine holds it: its plan and streaming query."""

    plan: QueryPlan | None = None
    projector: Projector | None = None
    distinct: bool = False
    handle: StreamingQuery | None = None
    publisher: KbPublisher | None = None
    broadcast: Broadcast[BackgroundSnapshot] | None = None
    position: int = 0
    events: int = 0
    matches: int = 0
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)
    """SELECT DISTINCT rows already reported (the driver's half of RunnerState.seen)."""
    stopping: bool = False


class SparkStreamingEngine:
    """`StreamingEngine` on Spark Structured Streaming (see the module docstring)."""

    def __init__(
        self,
        log: EventLog,
        registry: Registry,
        checkpoints: CheckpointStore,
        sink: MatchSink,
        compiler: QueryCompiler,
        kb: KnowledgeBase,
        spark: SparkSession | None = None,
        *,
        master: str = "local[*]",
        trigger_interval: float = 0.1,
        kb_poll: float = 0.25,
        partition_size: int = 5000,
        max_batch: int = 10_000,
        state_partitions: int | None = None,
        drain_timeout: float = 10.0,
        clock: Callable[[], str] | None = None,
        listeners: MatchListeners | None = None,
        accepts: Callable[[RegisteredQuery], bool] | None = None,
    ) -> None:
        self.log = log
        self.registry = registry
        self.checkpoints = checkpoints
        self.sink = sink
        self.compiler = compiler
        self.kb = kb
        self.trigger_interval = trigger_interval
        self.kb_poll = kb_poll
        self.partition_size = partition_size
        self.max_batch = max_batch
        self.drain_timeout = drain_timeout
        self.clock = clock or (lambda: Timestamp.now().lexical)
        self.listeners = listeners if listeners is not None else MatchListeners()
        self.master = master
        self.state_partitions = state_partitions
        self._spark = spark
        self._session: SparkSession | None = None
        self.parallelism = 1
        self.slots: QuerySlots[_Slot] = QuerySlots(
            registry,
            checkpoints,
            sink,
            self.listeners,
            restore=self._restore,
            broken=_broken,
            accepts=accepts,
        )
        self._control = threading.RLock()
        """Serialises start, stop, register and unregister."""
        self._started = False
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> SparkSession:
        """The engine's SQL session on the active SparkSession's context,
        created by the first `start` (an engine that never starts never starts
        a JVM); `get_session` may raise `SparkUnavailable`."""
        if self._session is None:
            spark = self._spark if self._spark is not None else get_session(self.master)
            self.parallelism = spark.sparkContext.defaultParallelism
            self._session = engine_session(spark, self.state_partitions or self.parallelism)
        return self._session

    def start(self) -> None:
        """Resume every registered query from its checkpoints and start them."""
        with self._control:
            if self._started:
                return
            _ = self.session
            self.slots.load()
            self._started = True
            self._stopping.clear()
            for slot in self._healthy():
                self._launch(slot)
            self._watcher = threading.Thread(target=self._watch, name="rsep-spark-engine", daemon=True)
            self._watcher.start()

    def stop(self, timeout: float | None = None) -> None:
        """Let the queries catch up with the log as it is now (at most
        `drain_timeout`, or `timeout`, seconds), then stop them; their
        checkpoints are Spark's commits. Open event streams end."""
        with self._control:
            self._started = False
            self._stopping.set()
            self._wake.set()
            watcher, self._watcher = self._watcher, None
            if watcher is not None:
                watcher.join(self.kb_poll * 4 + 1)
            limit = self.drain_timeout if timeout is None else min(timeout, self.drain_timeout)
            self._drain(time.monotonic() + limit)
            for slot in self.slots.all():
                self._halt(slot)
            self.listeners.close()

    @property
    def running(self) -> bool:
        return self._started

    def _drain(self, deadline: float) -> None:
        end = self.log.next_position
        while time.monotonic() < deadline:
            behind = [s for s in self._healthy() if s.handle is not None and s.position < end]
            if not behind or not any(s.handle is not None and s.handle.isActive for s in behind):
                return
            time.sleep(0.05)

    # ------------------------------------------------------------------ queries

    def register(self, query: RegisteredQuery) -> None:
        plan = self.compiler(query)
        slot = _Slot(query, plan=plan, position=query.start)
        _project(slot, plan)
        with self._control:
            self.slots.add(slot)
            if self._started:
                self._launch(slot)

    def unregister(self, query_id: str, *, purge: bool = False) -> None:
        with self._control:
            slot = self.slots.pop(query_id)
            if slot is not None:
                slot.removed = True
                self._halt(slot)
            self.slots.forget(query_id, purge=purge)

    def notify(self, records: Iterable[LogRecord]) -> None:
        """Spark's trigger loop reads the log itself; new events only prompt a
        look at the knowledge base, so that a batch planned next sees updates
        made just before the events were posted."""
        self._wake.set()

    def progress(self, query_id: str) -> QueryProgress | None:
        slot = self.slots.get(query_id)
        if slot is None:
            return None
        active = self._started and slot.handle is not None and not slot.stopping
        return QueryProgress(
            self.slots.state(slot, active), slot.position, slot.events, slot.matches, slot.error
        )

    # ------------------------------------------------------------------ streaming queries

    def _launch(self, slot: _Slot) -> None:
        """Start (or resume from its checkpoint) the streaming query of a slot."""
        if slot.error or slot.removed or slot.handle is not None or slot.plan is None:
            return
        try:
            folder = self.checkpoints.root / slot.query.id
            publisher = KbPublisher(self.kb, slot.plan, folder / "kb")
            publisher.refresh()
            broadcast = None
            if publisher.snapshot is not None:
                broadcast = self.session.sparkContext.broadcast(publisher.snapshot)
            slot.publisher, slot.broadcast, slot.stopping = publisher, broadcast, False
            frame = self._pipeline(slot, folder, publisher.current_id if broadcast is not None else "")
            slot.handle = (
                frame.writeStream.queryName(f"rsep-{slot.query.id}")
                .foreachBatch(functools.partial(self._on_batch, slot))
                .option("checkpointLocation", str(folder / "spark"))
                .trigger(processingTime=f"{round(self.trigger_interval * 1000)} milliseconds")
                .start()
            )
        except Exception as error:
            self.slots.fail(slot, error)

    def _pipeline(self, slot: _Slot, folder: Path, broadcast_id: str) -> DataFrame:
        plan = slot.plan
        assert plan is not None
        events = (
            self.session.readStream.format(SOURCE_NAME)
            .option("log", str(self.log.directory))
            .option("snapshots", str(folder / "kb"))
            .option("streams", json.dumps(sorted(plan.streams)))
            .option("start", str(slot.query.start))
            .option("partition_size", str(self.partition_size))
            .option("partitions", str(self.parallelism))
            .option("max_records", str(self.max_batch))
            .option("broadcast", broadcast_id)
            .load()
        )
        stage = StreamGpmStage(plan.gpms, plan.key, slot.broadcast, broadcast_id, self.partition_size)
        rows = events.mapInPandas(stage, ROW_SCHEMA)
        shifted = F.least(F.greatest(F.col("time"), F.lit(TIME_LOW)), F.lit(TIME_HIGH)) + F.lit(TIME_SHIFT)
        rows = rows.withColumn("ts", F.timestamp_seconds(shifted))
        rows = rows.withWatermark("ts", f"{WATERMARK_DELAY_MS} milliseconds")
        return rows.groupBy("key").applyInPandasWithState(
            _keyed(StreamKeyStep(plan.automaton, plan.key)),
            OUT_SCHEMA,
            STATE_SCHEMA,
            "Append",
            GroupStateTimeout.EventTimeTimeout,
        )

    def _halt(self, slot: _Slot) -> None:
        """Stop a slot's streaming query (a batch in progress is cut short and
        run again on restart) and free its broadcast snapshot."""
        slot.stopping = True
        handle, slot.handle = slot.handle, None
        if handle is not None:
            try:
                handle.stop()
            except Exception:
                logger.exception("query %s: stopping its streaming query failed", slot.query.id)
        with slot.lock:  # a foreachBatch in progress finishes (or gives up) first
            pass
        broadcast, slot.broadcast = slot.broadcast, None
        if broadcast is not None:
            broadcast.destroy()

    def _on_batch(self, slot: _Slot, frame: DataFrame, batch_id: int) -> None:
        """`foreachBatch`: write the batch's match graphs, flush, checkpoint the
        driver's part, then push the graphs created. Raising fails the query."""
        _check_running(slot)
        found, end, count = _outputs(frame.toArrow().to_pylist())
        created: list[MatchGraph] = []
        with slot.lock:
            _check_running(slot)
            graphs, distinct_moved = self._graphs(slot, found)
            if graphs:
                created = self.sink.write(graphs)
            if created or distinct_moved:
                self.sink.flush()  # Spark commits the batch when this returns
            if end is not None:
                slot.position, slot.events = end, count
            slot.matches += len(created)
            self.checkpoints.save(slot.query.id, _driver_payload(slot, batch_id))
        if created:
            self.listeners.publish(slot.query.id, [g.record() for g in created])
        if slot.publisher is not None:
            slot.publisher.refresh()  # the writes moved the knowledge base's version

    def _graphs(
        self, slot: _Slot, found: list[tuple[Match, list[EventRef]]]
    ) -> tuple[list[MatchGraph], bool]:
        """`QueryRunner._graphs` over the batch's matches in detection order."""
        projector, query = slot.projector, slot.query
        assert projector is not None
        graphs = []
        moved = False
        detected = self.clock()
        for match, refs in found:
            row = projector.project(match.mapping)
            if row is None:
                continue
            if slot.distinct:
                key = tuple(sorted(row.items()))
                if key in slot.seen:
                    continue
                slot.seen.add(key)
                moved = True
            if not projector.admit(match):  # LIMIT/OFFSET, checkpointed with the driver's state
                continue
            graphs.append(match_graph(query.id, query.iri, match, refs, projector, row, detected))
        return graphs, moved

    # ------------------------------------------------------------------ slots

    def _restore(self, query: RegisteredQuery) -> _Slot:
        """A query's slot: its plan, and where its driver checkpoint says it is (Spark's own
        checkpoint says where its streaming query resumes)."""
        slot = _Slot(query, plan=self.compiler(query), position=query.start)
        assert slot.plan is not None
        _project(slot, slot.plan)
        restored = _restore(self.checkpoints.load(query.id))
        if restored is not None and restored.get("automaton") != fingerprint(slot.plan.automaton):
            # Spark's state store holds NFA states of another automaton (rsep compiles the
            # query differently now), which no key could continue: replay from the start
            logger.warning("query %s: checkpoint of another automaton, replaying it", query.id)
            self.checkpoints.remove(query.id)
            restored = None
        if restored is not None:
            slot.position, slot.events = restored["position"], restored["events"]
            slot.seen = set(map(tuple, restored.get("seen") or ()))
            slot.projector.slice.numbered = dict(restored.get("numbered") or {})  # type: ignore[union-attr]
        # graphs created after the last driver checkpoint are not new on replay: count the store
        slot.matches = self.sink.count(query.iri)
        return slot

    def _healthy(self) -> list[_Slot]:
        return [slot for slot in self.slots.healthy() if slot.plan is not None]

    def _watch(self) -> None:
        """Refresh background snapshots when the knowledge base moved, and
        notice streaming queries that died."""
        while not self._stopping.is_set():
            self._wake.wait(self.kb_poll)
            self._wake.clear()
            for slot in self._healthy():
                handle = slot.handle
                if handle is None or slot.stopping or slot.removed:
                    continue
                try:
                    if slot.publisher is not None:
                        slot.publisher.refresh()
                    if not handle.isActive and not slot.stopping:
                        error = handle.exception()
                        self.slots.fail(slot, summary(str(error)) if error is not None else "stopped")
                except Exception:
                    logger.exception("query %s: watching it failed", slot.query.id)


def _broken(query: RegisteredQuery) -> _Slot:
    return _Slot(query, position=query.start)


def engine_session(spark: SparkSession, state_partitions: int) -> SparkSession:
    """A session on `spark`'s context with the engine's SQL settings and the
    event-log source registered: settings fixed in a query's checkpoint
    (shuffle partitions = state store partitions) stay the engine's own."""
    session = spark.newSession()
    for name, value in ENGINE_CONF.items():
        session.conf.set(name, value)
    session.conf.set("spark.sql.shuffle.partitions", str(state_partitions))
    session.dataSource.register(EventLogSource)
    return session


def _project(slot: _Slot, plan: QueryPlan) -> None:
    """The slot's projection; DISTINCT's memory is the slot's own, so that it
    is checkpointed with the driver's state and survives restarts."""
    slot.projector = Projector.for_plan(plan)
    slot.distinct = slot.projector.distinct
    slot.projector.distinct = False


_KeyFunction = Callable[[tuple[Any, ...], Iterator[pd.DataFrame], GroupState], Iterator[pd.DataFrame]]


def _keyed(step: StreamKeyStep) -> _KeyFunction:
    """`step` as a plain function, which is what pyspark expects."""

    def keyed(
        key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        return step(key, frames, state)

    return keyed


class QueryStopped(InternalError, RuntimeError):
    """Raised in `foreachBatch` for a query being stopped or unregistered."""


def _check_running(slot: _Slot) -> None:
    """A batch of a query being stopped must fail, not return: Spark would
    commit a batch whose graphs were never written."""
    if slot.removed or slot.stopping:
        raise QueryStopped(f"query {slot.query.id} is stopping: its batch will be run again")


def _outputs(rows: list[dict[str, Any]]) -> tuple[list[tuple[Match, list[EventRef]]], int | None, int]:
    """Output rows -> (match, its events) in detection order, and the batch's
    end position and event count."""
    found = []
    end: int | None = None
    count = 0
    for row in rows:
        if row["batch"]:
            if end is None or row["end"] > end:
                end, count = int(row["end"]), int(row["count"])
            continue
        match = Match(tuple(row["events"]), row["start_time"], row["end_time"], row["start_rank"],
                      row["end_rank"], dict(row["mapping"]))  # fmt: skip
        refs = [_event_ref(*ref) for ref in json.loads(row["refs"])]
        found.append((match, refs))
    found.sort(key=lambda item: item[0].key())
    return found, end, count


def _event_ref(
    position: int, name: str, seconds: float, lexical: str, numeric: bool, *start: Any
) -> EventRef:
    """An event of a match row's `refs` (`stream_stages._ref`), where its interval start follows
    when it spans one."""
    begins = Timestamp(float(start[0]), str(start[1]), bool(numeric)) if start else None
    return EventRef(int(position), name, Timestamp(float(seconds), lexical, bool(numeric)), begins)


def _driver_payload(slot: _Slot, batch_id: int) -> bytes:
    numbered = slot.projector.slice.numbered if slot.projector is not None else None
    assert slot.plan is not None
    body = {
        "batch": batch_id,
        "automaton": fingerprint(slot.plan.automaton),
        "position": slot.position,
        "events": slot.events,
        "seen": sorted(slot.seen),
        "numbered": numbered or {},
    }
    return checkpoint_format.encode("spark-driver", body)


def _restore(payload: bytes | None) -> dict[str, Any] | None:
    """The driver's checkpoint; None when there is none yet or it is the in-process engine's
    (Spark's own checkpoint then decides where to resume)."""
    if payload is None:
        return None
    try:
        return checkpoint_format.decode(payload, "spark-driver", _legacy_driver)
    except checkpoint_format.CheckpointFormatError:
        return None


def _legacy_driver(payload: bytes) -> dict[str, Any]:
    """The format before the checkpoint format: `rsep-spark-driver/1` and a pickled dict."""
    magic = b"rsep-spark-driver/1\n"
    if not payload.startswith(magic):
        raise checkpoint_format.CheckpointFormatError("not a Spark driver checkpoint")
    data = checkpoint_format.load_pickle(payload[len(magic) :])
    assert isinstance(data, dict)
    return data


_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Invalid|Exit)\b.*")


def summary(message: str) -> str:
    """One line for a failed query's `error`: the last exception line of the
    Python traceback a streaming query's failure message embeds, before the
    JVM's stack trace (else its first line)."""
    lines = [line.strip() for line in message.split("\n")]
    before_jvm = lines[: next((i for i, line in enumerate(lines) if line.startswith("at ")), len(lines))]
    raised = [line for line in before_jvm if _RAISED.match(line)]
    return raised[-1] if raised else next((line for line in lines if line), "failed")
