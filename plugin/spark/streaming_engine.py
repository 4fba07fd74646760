"""The Spark Structured Streaming engine (`RSEP_ENGINE=spark`): the `StreamingEngine` protocol
with ONE long-running streaming job for every registered query.

    driver       the query table (`log_source.QueryTable`: per query its plan id, streamset,
                 registration position); plans and background snapshots shipped to executors
                 as files (`SparkContext.addFile`)
    planner      EventLogReader (log_source): per query its own offsets (log position, rank
                 numbering, snapshot id); each log record read once for the queries at the same
                 position, shipped in the partitions (executors never open the log)
    executors    read = the GPM stage of every query (`stream_stages.gpm_rows`) -> GPM rows,
                 one clock row per partition; withWatermark(job clock) ... groupBy(plan id, key)
                 applyInPandasWithState(StreamKeyStep): each query's keys in the RocksDB state
                 store; event-time timeouts expire runs of keys that get no more rows
    driver       foreachBatch: per query: matches -> projection (+ SELECT DISTINCT's memory)
                 -> match graphs; one OxigraphMatchSink transaction for the batch (existing
                 graphs skipped) -> flush -> the driver checkpoints -> SSE listeners

Registering a query compiles it, ships its plan and rewrites the table: the next micro-batch
planned includes it (from its registration position, or `from=` history: a query behind the
head reads its own records while the others stay at the head). Nothing starts or restarts, so
`POST /queries` answers in milliseconds. Unregistering removes it from the table; a query that
fails (its GPM stage, one of its keys, or its projection raises) is failed alone, the others go
on.

Checkpoints: Spark's (offsets, commits, the state store) at `checkpoint_location` (a URI every
executor and a restarted driver can reach; default `DATA/spark/checkpoint`), the table and the
shipped files in `DATA/spark/`, and per query under `DATA/checkpoints/<query id>/` its
background snapshots (`kb/`) and the driver's `*.ckpt` (position, counts, DISTINCT's memory,
LIMIT/OFFSET's numbered answers, plan id). Unregistering deletes the query's folder.

Exactly once, however the process stops: Spark writes a batch's offsets before running it and its
commit after `foreachBatch` returns, and the state store moves with the commits; a batch cut short
is run again from the same offsets (same records, ranks and background snapshots, rows sorted per
key), so it produces the same graphs, which the sink skips and nobody is sent twice. The store is
flushed, and the driver checkpoints written, inside `foreachBatch`, before Spark commits the batch.

Only this package imports pyspark: `rsep.endpoint.engines` asks `session.java_problem` whether
Spark can run at all and builds a `SparkStreamingEngine`, which starts its session when it starts
(docs/spark.md, "The streaming engine").
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.durable import write_atomically
from rsep.plugin.errors import InternalError
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.nfa.snapshot import fingerprint
from rsep.plugin.results import Projector
from rsep.plugin.service import checkpoints as checkpoint_format
from rsep.plugin.service.engine import QueryCompiler, QueryProgress
from rsep.plugin.service.lifecycle import EngineWiring, QuerySlots, Slot
from rsep.plugin.service.match_graphs import EventRef, MatchGraph, match_graph
from rsep.plugin.service.registry import FAILED, RegisteredQuery
from rsep.plugin.spark.log_source import SOURCE_NAME, EventLogSource, QueryTable, SnapshotFiles, TableEntry
from rsep.plugin.spark.session import failure_message, get_session
from rsep.plugin.spark.stream_stages import (
    CLOCK_ROW,
    ERROR_ROW,
    OUT_SCHEMA,
    STATE_SCHEMA,
    WATERMARK_DELAY_MS,
    StagePlan,
    StreamKeyStep,
    plan_file,
)
from rsep.plugin.store.kb import BackgroundSnapshot, KnowledgeBase

logger = logging.getLogger("rsep.spark.streaming")

Shipper = Callable[[str, Path], None]
"""(snapshot id, file) -> the file shipped to the executors."""

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

JOB_NAME = "rsep"
RESTARTS = 3
"""Times the job is restarted after it failed (not one query: the job) before every query fails."""

# ---------------------------------------------------------------- background knowledge


class KbPublisher:
    """Keeps a query's background snapshot current for the batches to come.

    Whenever the knowledge base's version moved, the plan's background part is
    evaluated again (`KnowledgeBase.snapshot`) and, if the answers changed,
    written as a new snapshot file and made `CURRENT`; the source names the
    current one in each batch's end offset when it plans the batch. Match
    writes move the version too, but rarely change what a plan reads, so the
    content digest keeps snapshots from piling up."""

    def __init__(
        self,
        kb: KnowledgeBase,
        plan: QueryPlan,
        folder: Path,
        ship: Callable[[str, Path], None] | None = None,
    ) -> None:
        self.kb = kb
        self.ship = ship
        """Ships a snapshot file to the executors before it becomes current (the engine's)."""
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
            if not self.current_id.endswith("-" + digest[:16]):  # (after a restart: maybe the same)
                self.current_id = self.files.publish(pickle.dumps(snapshot, protocol=5), digest, self.ship)
            self._version = version  # only once published: a failed publish (a full disk) is retried
            self.snapshot = snapshot


# ---------------------------------------------------------------- the engine


@dataclass(slots=True)
class _Slot(Slot):
    """A registered query as this engine holds it: its plan and its part of the job."""

    plan: QueryPlan | None = None
    plan_id: str = ""
    """`<query id>.<automaton fingerprint>.<generation>`: its keys' namespace in the state store."""
    generation: int = 0
    projector: Projector | None = None
    distinct: bool = False
    publisher: KbPublisher | None = None
    position: int = 0
    events: int = 0
    matches: int = 0
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)
    """SELECT DISTINCT rows already reported (the driver's half of RunnerState.seen)."""


class SparkStreamingEngine:
    """`StreamingEngine` on Spark Structured Streaming (see the module docstring)."""

    def __init__(
        self,
        wiring: EngineWiring,
        compiler: QueryCompiler,
        kb: KnowledgeBase,
        spark: SparkSession | None = None,
        *,
        master: str = "local[*]",
        checkpoint_location: str | None = None,
        trigger_interval: float = 0.1,
        kb_poll: float = 0.25,
        partition_size: int = 5000,
        max_batch: int = 10_000,
        state_partitions: int | None = None,
        drain_timeout: float = 10.0,
    ) -> None:
        self.wiring = wiring
        self.listeners = wiring.listeners
        self.compiler = compiler
        self.kb = kb
        self.trigger_interval = trigger_interval
        self.kb_poll = kb_poll
        self.partition_size = partition_size
        self.max_batch = max_batch
        self.drain_timeout = drain_timeout
        self.master = master
        self.state_partitions = state_partitions
        self.job_dir = wiring.checkpoints.root.parent / "spark"
        """The query table and the files shipped to executors (the driver's)."""
        self.checkpoint_location = checkpoint_location or str(self.job_dir / "checkpoint")
        """Spark's checkpoint: offsets, commits, the state store."""
        self.table = QueryTable(self.job_dir / "queries.json")
        self._spark = spark
        self._session: SparkSession | None = None
        self.parallelism = 1
        self.slots: QuerySlots[_Slot] = wiring.slots(restore=self._restore, broken=_broken)
        self._control = threading.RLock()
        """Serialises start, stop, register, unregister and the table."""
        self._batch = threading.Lock()
        """Held by `foreachBatch` while it writes: unregistering waits for it."""
        self._table_lock = threading.Lock()
        self._shipped: set[str] = set()
        self._handle: StreamingQuery | None = None
        self._forward: _Forward | None = None
        self._started = False
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._watcher: threading.Thread | None = None
        self._unobserve: Callable[[], None] = _nothing
        """Stops `_refresh_snapshots` being called after each write of the knowledge base."""
        self._restarts: list[float] = []

    # ------------------------------------------------------------------ lifecycle

    @property
    def session(self) -> SparkSession:
        """The engine's SQL session on the active SparkSession's context,
        created by the first `start` (an engine that never starts never starts
        a JVM); `get_session` may raise `SparkUnavailable`."""
        if self._session is None:
            began = time.monotonic()
            if self._spark is None:
                logger.info("starting Spark (%s)…", self.master)
            spark = self._spark if self._spark is not None else get_session(self.master)
            if self._spark is None:
                logger.info("Spark ready in %.1f s", time.monotonic() - began)
            self.parallelism = spark.sparkContext.defaultParallelism
            self._session = engine_session(spark, self.state_partitions or self.parallelism)
        return self._session

    def start(self) -> None:
        """Resume every registered query from its checkpoints, and start the job."""
        with self._control:
            if self._started:
                return
            _ = self.session
            self.slots.load()
            self._started = True
            self._stopping.clear()
            for slot in self._healthy():
                self._admit(slot)
            self._write_table()
            self._launch()
            self._watcher = threading.Thread(target=self._watch, name="rsep-spark-engine", daemon=True)
            self._watcher.start()
            self._unobserve = self.kb.observe(self._refresh_snapshots)

    def stop(self, timeout: float | None = None) -> None:
        """Let the queries catch up with the log as it is now (at most `drain_timeout`, or
        `timeout`, seconds), then stop the job; its checkpoints are Spark's commits. Open event
        streams end."""
        with self._control:
            self._started = False
            self._unobserve()
            self._unobserve = _nothing
            self._wake.set()
            watcher, self._watcher = self._watcher, None
            limit = self.drain_timeout if timeout is None else min(timeout, self.drain_timeout)
            self._drain(time.monotonic() + limit)
            self._stopping.set()
            if watcher is not None:
                watcher.join(self.kb_poll * 4 + 1)
            self._halt()
            self.listeners.close()

    @property
    def running(self) -> bool:
        return self._started

    def _drain(self, deadline: float) -> None:
        end = self.wiring.log.next_position
        while time.monotonic() < deadline:
            handle = self._handle
            if handle is None or not handle.isActive:
                return
            if not [s for s in self._healthy() if s.position < end]:
                return
            time.sleep(0.05)

    # ------------------------------------------------------------------ queries

    def register(self, query: RegisteredQuery) -> None:
        """Compile, ship the plan, add the query to the table: the next batch planned reads it."""
        plan = self.compiler(query)
        slot = _Slot(query, plan=plan, position=query.start)
        slot.plan_id = plan_id(query.id, plan, 0)
        _project(slot, plan)
        with self._control:
            self.slots.add(slot)
            if self._started:
                try:
                    self._admit(slot)
                except Exception as error:
                    self.slots.fail(slot, error)
                self._write_table()

    def unregister(self, query_id: str, *, purge: bool = False) -> None:
        with self._control, self._batch:  # a batch in progress writes its graphs first
            slot = self.slots.pop(query_id)
            if slot is not None:
                slot.removed = True
                if slot.publisher is not None:
                    slot.publisher.ship = None
                if self._started:
                    self._write_table()
            self.slots.forget(query_id, purge=purge)

    def notify(self, records: Iterable[LogRecord]) -> None:
        """Spark's trigger loop reads the log itself; new events only prompt a look at the
        knowledge base, so that a batch planned next sees updates made just before."""
        self._wake.set()

    def progress(self, query_id: str) -> QueryProgress | None:
        slot = self.slots.get(query_id)
        if slot is None:
            return None
        active = self._started and self._handle is not None
        return QueryProgress(
            self.slots.state(slot, active), slot.position, slot.events, slot.matches, slot.error
        )

    # ------------------------------------------------------------------ the job

    def _admit(self, slot: _Slot) -> None:
        """Make a slot's query readable by the job: its plan (and background snapshots) shipped."""
        assert slot.plan is not None
        plan = slot.plan
        self._ship(plan_file(slot.plan_id), pickle.dumps(StagePlan(plan.gpms, plan.key, plan.automaton)))
        folder = self.wiring.checkpoints.root / slot.query.id / "kb"
        for snapshot in SnapshotFiles(folder).ids():  # a replayed batch may read an older one
            self._ship(_kb_file(slot.query.id, snapshot), (folder / f"{snapshot}.pkl").read_bytes())
        query_id = slot.query.id

        def ship(snapshot: str, path: Path) -> None:
            self._ship(_kb_file(query_id, snapshot), path.read_bytes())

        slot.publisher = KbPublisher(self.kb, plan, folder, ship)
        slot.publisher.refresh()

    def _ship(self, name: str, payload: bytes) -> None:
        """A file every executor can read by name (`stream_stages.shipped`)."""
        if name in self._shipped:
            return
        folder = self.job_dir / "files"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        if not path.exists() or path.read_bytes() != payload:
            write_atomically(path, payload)
        self.session.sparkContext.addFile(str(path))
        self._shipped.add(name)

    def _write_table(self) -> None:
        with self._table_lock:  # its own lock: a batch may write it while `stop` holds `_control`
            self.table.write([_entry(s) for s in self._healthy()])

    def _launch(self) -> None:
        """Start (or resume from its checkpoint) the one streaming query."""
        rows = (
            self.session.readStream.format(SOURCE_NAME)
            .option("log", str(self.wiring.log.directory))
            .option("table", str(self.table.path))
            .option("snapshots", str(self.wiring.checkpoints.root))
            .option("partition_size", str(self.partition_size))
            .option("partitions", str(self.parallelism))
            .option("max_records", str(self.max_batch))
            .load()
        )
        rows = rows.withWatermark("ts", f"{WATERMARK_DELAY_MS} milliseconds")
        frame = rows.groupBy("plan", "key").applyInPandasWithState(
            _keyed(StreamKeyStep()), OUT_SCHEMA, STATE_SCHEMA, "Append", GroupStateTimeout.EventTimeTimeout
        )
        if self._forward is not None:  # the job of before died (`_recover`)
            self._forward.engine = None
        self._forward = _Forward(self)
        self._handle = (
            frame.writeStream.queryName(JOB_NAME)
            .foreachBatch(self._forward)
            .option("checkpointLocation", self.checkpoint_location)
            .trigger(processingTime=f"{round(self.trigger_interval * 1000)} milliseconds")
            .start()
        )

    def _halt(self) -> None:
        """Stop the job (a batch in progress is cut short and run again on restart)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                handle.stop()
            except Exception:
                logger.exception("stopping the streaming job failed")
        with self._batch:  # a foreachBatch in progress finishes (or gives up) first
            pass
        if self._forward is not None:
            self._forward.engine = None  # py4j keeps the function: it must not keep the engine

    # ------------------------------------------------------------------ a micro-batch

    def _on_batch(self, frame: DataFrame, batch_id: int) -> None:
        """`foreachBatch`: write every query's match graphs (one transaction), flush, checkpoint
        the driver's part, then push the graphs created. A query's error fails that query only;
        raising fails the job (it is then restarted, and the batch run again)."""
        self._check_running()
        found, ends, errors = _outputs(frame.toArrow().to_pylist())
        pushed: list[tuple[_Slot, list[MatchGraph]]] = []
        with self._batch:
            self._check_running()
            slots = {s.plan_id: s for s in self._healthy()}
            failed = False
            for plan, message in errors.items():
                if plan in slots:
                    self.slots.fail(slots.pop(plan), message)
                    failed = True
            work: list[tuple[_Slot, list[MatchGraph], bool]] = []
            for plan in sorted(set(found) | set(ends)):
                slot = slots.get(plan)
                if slot is None:
                    continue  # unregistered, failed, or replayed afresh since the batch was planned
                try:
                    with slot.lock:
                        graphs, moved = self._graphs(slot, found.get(plan, []))
                except Exception as error:
                    self.slots.fail(slot, error)
                    failed = True
                    continue
                work.append((slot, graphs, moved))
            graphs = [g for _, mine, _ in work for g in mine]
            created = self.wiring.sink.write(graphs) if graphs else []
            if created or any(moved for _, _, moved in work):
                self.wiring.sink.flush()  # Spark commits the batch when this returns
            made = {g.iri for g in created}
            for slot, mine, _ in work:
                new = [g for g in mine if g.iri in made]
                with slot.lock:
                    if slot.plan_id in ends:
                        slot.position, slot.events = ends[slot.plan_id]
                    slot.matches += len(new)
                    self.wiring.checkpoints.save(slot.query.id, _driver_payload(slot, batch_id))
                pushed.append((slot, new))
        if failed:
            self._write_table()
        for slot, new in pushed:
            if new:
                self.listeners.publish(slot.query.id, [g.record() for g in new])
            if slot.publisher is not None:
                slot.publisher.refresh()  # the writes moved the knowledge base's version

    def _check_running(self) -> None:
        """A batch of a job being stopped must fail, not return: Spark would commit a batch
        whose graphs were never written."""
        if self._stopping.is_set():
            raise QueryStopped("the streaming job is stopping: its batch will be run again")

    def _graphs(
        self, slot: _Slot, found: list[tuple[Match, list[EventRef]]]
    ) -> tuple[list[MatchGraph], bool]:
        """`QueryRunner._graphs` over the batch's matches in detection order."""
        projector, query = slot.projector, slot.query
        assert projector is not None
        graphs = []
        moved = False
        detected = self.wiring.clock()
        for match, refs in sorted(found, key=lambda item: item[0].key()):
            row = projector.project(match)
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
        """A query's slot: its plan, and where its driver checkpoint says it is (Spark's offsets
        say where its part of the job resumes). A query that failed, or whose checkpoint belongs
        to another automaton (rsep compiles it differently now), starts afresh from its
        registration under a new plan id (its old keys are dropped), finding every graph again
        (those that exist are skipped)."""
        plan = self.compiler(query)
        slot = _Slot(query, plan=plan, position=query.start)
        _project(slot, plan)
        restored = _restore(self.wiring.checkpoints.load(query.id))
        legacy = self.wiring.checkpoints.root / query.id / "spark"
        if legacy.is_dir():  # a streaming query of its own (rsep before the single job)
            logger.info("query %s: leaving its own streaming query, replaying it in the job", query.id)
            shutil.rmtree(legacy)
            restored = None
        generation = int(restored.get("generation", 0)) if restored is not None else 0
        if restored is not None and restored.get("automaton") != fingerprint(plan.automaton):
            logger.warning("query %s: checkpoint of another automaton, replaying it", query.id)
            restored = None
        elif restored is not None and query.status == FAILED:
            logger.info("query %s: failed before the restart, replaying it from its registration", query.id)
            restored, generation = None, generation + 1
        slot.generation = generation
        slot.plan_id = plan_id(query.id, plan, generation)
        if restored is not None:
            slot.position, slot.events = restored["position"], restored["events"]
            slot.seen = set(map(tuple, restored.get("seen") or ()))
            slot.projector.slice.numbered = dict(restored.get("numbered") or {})  # type: ignore[union-attr]
        else:
            self.wiring.checkpoints.save(query.id, _driver_payload(slot, -1))  # the new plan id holds
        # graphs created after the last driver checkpoint are not new on replay: count the store
        slot.matches = self.wiring.sink.count(query.iri)
        return slot

    def _healthy(self) -> list[_Slot]:
        return [slot for slot in self.slots.healthy() if slot.plan is not None and not slot.removed]

    def _watch(self) -> None:
        """Refresh background snapshots when the knowledge base moved, and restart the job if it
        died (the batch it was in is run again)."""
        while not self._stopping.is_set():
            self._wake.wait(self.kb_poll)
            self._wake.clear()
            self._refresh_snapshots()
            handle = self._handle
            if handle is not None and not handle.isActive and not self._stopping.is_set():
                self._recover(handle)

    def _refresh_snapshots(self) -> None:
        """Each query's background snapshot as the knowledge base is now (a no-op for a query
        whose snapshot is of its version already): after each write of it (`KnowledgeBase.observe`,
        in the writer's thread) and on the watcher's poll."""
        for slot in self._healthy():
            try:
                if slot.publisher is not None:
                    slot.publisher.refresh()
            except Exception:
                logger.exception("query %s: refreshing its background snapshot failed", slot.query.id)

    def _recover(self, handle: StreamingQuery) -> None:
        error = handle.exception()
        message = summary(str(error)) if error is not None else "stopped"
        with self._control:
            if self._stopping.is_set() or self._handle is not handle:
                return
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < 300] + [now]
            if len(self._restarts) > RESTARTS:
                logger.error("the streaming job failed %d times in 5 minutes: %s", RESTARTS + 1, message)
                for slot in self._healthy():
                    self.slots.fail(slot, message)
                self._handle = None
                return
            logger.error("the streaming job failed, restarting it: %s", message)
            for slot in self._healthy():  # the batch is run again: the driver's half goes back too
                restored = _restore(self.wiring.checkpoints.load(slot.query.id))
                if restored is not None and restored.get("plan") == slot.plan_id:
                    slot.seen = set(map(tuple, restored.get("seen") or ()))
                    slot.projector.slice.numbered = dict(restored.get("numbered") or {})  # type: ignore[union-attr]
            try:
                self._launch()
            except Exception as error:
                logger.error("restarting the streaming job failed: %s", failure_message(error))


def _entry(slot: _Slot) -> TableEntry:
    assert slot.plan is not None
    reads_kb = slot.publisher is not None and bool(slot.publisher.needed)
    return TableEntry(slot.query.id, slot.plan_id, tuple(slot.plan.streams), slot.query.start, reads_kb)


def plan_id(query_id: str, plan: QueryPlan, generation: int) -> str:
    return f"{query_id}.{fingerprint(plan.automaton)[:12]}.{generation}"


def _kb_file(query_id: str, snapshot: str) -> str:
    """The shipped name of a query's background snapshot (`log_source` names it the same)."""
    return f"kb-{query_id}-{snapshot}.pkl"


def _broken(query: RegisteredQuery) -> _Slot:
    return _Slot(query, position=query.start)


def engine_session(spark: SparkSession, state_partitions: int) -> SparkSession:
    """A session on `spark`'s context with the engine's SQL settings and the
    event-log source registered: settings fixed in the job's checkpoint
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


class _Forward:
    """The job's `foreachBatch` function: the engine's `_on_batch` until the job stops. py4j's
    callback server keeps the function it was given alive for the process's life; through this
    object it lets go of the engine (and its store, whose lock a new engine on the same data
    folder needs)."""

    def __init__(self, engine: SparkStreamingEngine) -> None:
        self.engine: SparkStreamingEngine | None = engine

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        engine = self.engine
        if engine is None:
            raise QueryStopped("the streaming job was stopped: its batch will be run again")
        engine._on_batch(frame, batch_id)


class QueryStopped(InternalError, RuntimeError):
    """Raised in `foreachBatch` while the job is being stopped."""


Found = dict[str, list[tuple[Match, list[EventRef]]]]


def _outputs(rows: list[dict[str, Any]]) -> tuple[Found, dict[str, tuple[int, int]], dict[str, str]]:
    """Output rows -> per plan id: (match, its events); where its part of the batch ends
    (position, event count); its error, if it raised."""
    found: Found = {}
    ends: dict[str, tuple[int, int]] = {}
    errors: dict[str, str] = {}
    for row in rows:
        kind = row["kind"]
        if kind == CLOCK_ROW:
            for plan, (end, count) in json.loads(row["facts"]).items():
                ends[plan] = (int(end), int(count))
        elif kind == ERROR_ROW:
            errors.setdefault(row["plan"], str(row["facts"]))
        else:
            match = Match(tuple(row["events"]), row["start_time"], row["end_time"], row["start_rank"],
                          row["end_rank"], dict(row["mapping"]))  # fmt: skip
            refs = [_event_ref(*ref) for ref in json.loads(row["refs"])]
            found.setdefault(row["plan"], []).append((match, refs))
    return found, ends, errors


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
        "plan": slot.plan_id,
        "generation": slot.generation,
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


def _nothing() -> None:
    pass
