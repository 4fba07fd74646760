"""The in-process streaming engine: one background thread runs every
registered query over the event log (the `StreamingEngine` protocol).

The thread wakes when the endpoint reports appended events (`notify`) or
after `poll_interval`. Queries that reached the same log position share one
read of the new records; each one's `QueryRunner.step` (`WindowRunner.step`
for C-SPARQL and CQELS window queries) turns them into match graphs, which
the sink writes (one transaction per query and batch, existing graphs
skipped) before the created ones are published to listeners. Every
`checkpoint_interval` seconds (0: after every batch) the sink is flushed and
each runner that moved is checkpointed, so a checkpoint never covers a graph
that is not durable. After a crash the queries resume from their checkpoints
and replay the rest of the log; the replayed graphs exist already, so they
are neither written nor pushed again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.log import LogCorrupted, LogRecord
from rsep.plugin.service.engine import (
    EvaluatorFactory,
    PlanCompiler,
    QueryProgress,
    Runner,
    WindowEvaluatorFactory,
)
from rsep.plugin.service.heap_trim import HeapTrim
from rsep.plugin.service.lifecycle import EngineWiring, QuerySlots, Slot
from rsep.plugin.service.match_graphs import ResultGraph
from rsep.plugin.service.registry import RegisteredQuery
from rsep.plugin.service.runner import QueryRunner
from rsep.plugin.service.window_runner import WindowRunner
from rsep.plugin.windows.window_plan import WindowPlan

logger = logging.getLogger("rsep.service")

CHECKPOINT_SHARE = 9.0
"""The interval between checkpoint rounds is at least this many times the last round's duration."""


@dataclass(slots=True)
class _Slot(Slot):
    """A registered query as this engine holds it: its runner."""

    runner: Runner | None = None
    dirty: bool = False
    seen: tuple[int, int, int] | None = None
    """(position, events, matches) as the last step left them, its graphs written: what
    `progress` answers while a step holds the lock (GET /queries never waits for a batch)."""


class InProcessEngine:
    """`StreamingEngine` on a thread of this process."""

    def __init__(
        self,
        wiring: EngineWiring,
        compiler: PlanCompiler,
        evaluators: EvaluatorFactory,
        *,
        window_evaluators: WindowEvaluatorFactory | None = None,
        checkpoint_interval: float = 1.0,
        poll_interval: float = 1.0,
        max_batch: int = 10_000,
    ) -> None:
        self.wiring = wiring
        self.listeners = wiring.listeners
        self.compiler = compiler
        self.evaluators = evaluators
        self.window_evaluators = window_evaluators
        self.checkpoint_interval = checkpoint_interval
        self.poll_interval = poll_interval
        self.max_batch = max_batch
        self.slots: QuerySlots[_Slot] = wiring.slots(restore=self._restore, broken=_Slot)
        self._work = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_checkpoint = time.monotonic()
        self._checkpoint_cost = 0.0
        """Seconds the last checkpoint round took."""
        self._tail = _Tail(max_batch * 4)
        self.heap = HeapTrim()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self.load()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._loop, name="rsep-inprocess-engine", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                logger.warning("the streaming engine did not stop within %s s; no final checkpoint", timeout)
        else:
            with self._work:
                self._checkpoint(force=True)
        self._thread = None
        self.listeners.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def load(self) -> None:
        """Resume every registered query from its checkpoint (once)."""
        with self._work:
            self.slots.load()

    # ------------------------------------------------------------------ queries

    def register(self, query: RegisteredQuery) -> None:
        runner = self._runner(query, self.compiler(query), None)
        self.slots.add(_Slot(query, runner=runner, dirty=True))
        self._wake.set()

    def unregister(self, query_id: str, *, purge: bool = False) -> None:
        slot = self.slots.pop(query_id)
        if slot is not None:
            with slot.lock:  # waits for a step of this query in progress
                slot.removed = True
        self.slots.forget(query_id, purge=purge)

    def notify(self, records: Sequence[LogRecord]) -> None:
        self._tail.add(records)
        self._wake.set()

    def progress(self, query_id: str) -> QueryProgress | None:
        slot = self.slots.get(query_id)
        if slot is None:
            return None
        # a step moves the position before its graphs are written: wait for both, unless the
        # last step's figures are there
        if not slot.lock.acquire(blocking=slot.seen is None):
            seen = slot.seen
            assert seen is not None
            return QueryProgress(self.slots.state(slot, self.running), *seen, slot.error)
        try:
            runner = slot.runner
            position = runner.settled if runner is not None else slot.query.start
            events = runner.state.event_count if runner is not None else 0
            matches = runner.state.match_count if runner is not None else 0
        finally:
            slot.lock.release()
        return QueryProgress(self.slots.state(slot, self.running), position, events, matches, slot.error)

    # ------------------------------------------------------------------ work

    def drain(self) -> None:
        """Process until every query has read the whole log (checkpointing
        when due): what the thread does on each wake-up; tests call it too."""
        with self._work:
            self.load()
            while not self._stopping.is_set() and self._run_once():
                self._checkpoint()
            self._checkpoint()
            self.heap.maybe()  # caught up: hand back what the batches freed (rsep.plugin.service.heap_trim)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self.drain()
            except Exception:  # a bug outside any one query: keep the engine alive
                logger.exception("the streaming engine failed a cycle")
            self._wake.wait(self._sleep_time())
        with self._work:
            self._checkpoint(force=True)

    def _sleep_time(self) -> float:
        if any(s.dirty for s in self._healthy()):
            remaining = self.checkpoint_interval - (time.monotonic() - self._last_checkpoint)
            return max(0.01, min(self.poll_interval, remaining))
        return self.poll_interval

    def _run_once(self) -> bool:
        """One batch for every query behind the log's end or with a backlog (a window query's
        evaluations, made a bounded number per step, so that a long gap between events holds
        neither every other query nor the memory of all its evaluations); True if any moved."""
        end = self.wiring.log.next_position
        by_position: dict[int, list[_Slot]] = defaultdict(list)
        for slot in self._healthy():
            assert slot.runner is not None
            if slot.runner.position < end or slot.runner.backlog:
                by_position[slot.runner.position].append(slot)
        moved = False
        for position, slots in sorted(by_position.items()):
            if self._stopping.is_set():
                break  # the rest waits in the log for the next start
            try:
                records = self._read(position, min(end, position + self.max_batch))
            except LogCorrupted as error:  # these queries cannot go on; the others must
                for slot in slots:
                    self.slots.fail(slot, str(error))
                continue
            moved = self._step(slots, records) or moved
        positions = [s.runner.position for s in self._healthy() if s.runner is not None]
        self._tail.trim(min(positions, default=end))
        return moved

    def _step(self, slots: list[_Slot], records: list[LogRecord]) -> bool:
        """Step the queries at one log position over `records`, write the graphs of all of them
        in ONE sink transaction (with many queries, one per query was the step's main cost),
        then publish what each created. Each query's lock is held from its step until its graphs
        are written, so `progress` never reports a position whose graphs are not there. Once
        `stop` is asked, no further query starts its step: a lagging engine steps each query
        over up to `max_batch` events, and a shutdown waited for all of them (15 s seen with 10
        queries); the queries not stepped resume from their checkpoints."""
        stepped: list[tuple[_Slot, Runner, Sequence[ResultGraph]]] = []
        held: list[_Slot] = []
        try:
            for slot in slots:
                if self._stopping.is_set():
                    break
                slot.lock.acquire()
                held.append(slot)
                runner = slot.runner
                if slot.removed or slot.error or runner is None:
                    continue
                first = records[0].position if records else runner.position
                if runner.position < first:
                    continue
                todo = records[runner.position - first :]
                if not todo and not runner.backlog:
                    continue
                try:
                    stepped.append((slot, runner, runner.step(todo)))
                except Exception as error:
                    self.slots.fail(slot, error)
            if not stepped:
                return False
            try:
                created = {id(g) for g in self.wiring.sink.write([g for *_, gs in stepped for g in gs])}
            except Exception as error:
                for slot, *_ in stepped:
                    self.slots.fail(slot, error)
                return False
            published = []
            for slot, runner, graphs in stepped:
                mine = [g for g in graphs if id(g) in created]
                runner.created(len(mine))
                slot.dirty = True
                slot.seen = (runner.settled, runner.state.event_count, runner.state.match_count)
                published.append((slot, mine))
        finally:
            for slot in held:
                slot.lock.release()
        for slot, mine in published:
            self.listeners.publish(slot.query.id, [g.record() for g in mine])
        return True

    def _checkpoint(self, force: bool = False) -> None:
        """Flush the sink and checkpoint every query that moved, every `checkpoint_interval`
        seconds (0: after every batch), but otherwise never spending more than a tenth of the
        engine's time on it: with many queries a round (a store flush, a file per query, their
        fsyncs) takes long, and the interval stretches to nine times the last round's duration
        (a crash then replays a few seconds more of the log, which rewrites nothing)."""
        now = time.monotonic()
        interval = self.checkpoint_interval
        if interval > 0:  # 0 asks for a checkpoint after every batch: kept
            interval = max(interval, CHECKPOINT_SHARE * self._checkpoint_cost)
        if not force and now - self._last_checkpoint < interval:
            return
        dirty = [s for s in self._healthy() if s.dirty]
        if dirty:
            self.wiring.sink.flush()  # the checkpoint must not cover graphs that are not durable
            held: list[_Slot] = []
            try:  # every lock held until the files are written: unregistering waits for them
                payloads = []
                for slot in dirty:
                    slot.lock.acquire()
                    held.append(slot)
                    if not (slot.removed or slot.error or slot.runner is None):
                        payloads.append((slot, slot.runner.snapshot()))
                self.wiring.checkpoints.save_many([(slot.query.id, payload) for slot, payload in payloads])
                for slot, _ in payloads:
                    slot.dirty = False
            finally:
                for slot in held:
                    slot.lock.release()
            self._checkpoint_cost = time.monotonic() - now
        self._last_checkpoint = now

    def _read(self, start: int, end: int) -> list[LogRecord]:
        cached = self._tail.get(start, end)
        return cached if cached is not None else list(self.wiring.log.read(start, end))

    # ------------------------------------------------------------------ slots

    def _restore(self, query: RegisteredQuery) -> _Slot:
        """A query's runner from its checkpoint; from its registration when the checkpoint
        cannot be continued (a replayed batch changes nothing: match writes are idempotent)."""
        plan = self.compiler(query)
        snapshot = self.wiring.checkpoints.load(query.id)
        try:
            runner = self._runner(query, plan, snapshot)
        except Exception:
            logger.exception("query %s: unreadable checkpoint, replaying from its start", query.id)
            runner = self._runner(query, plan, None)
        # graphs created after the checkpoint are not replayed as new: count what exists
        runner.state.match_count = self.wiring.sink.count(query.iri)
        return _Slot(query, runner=runner)

    def _runner(self, query: RegisteredQuery, plan: QueryPlan | WindowPlan, snapshot: bytes | None) -> Runner:
        """The runner of a query's plan: the NFA's, or the window runtime's (C-SPARQL, CQELS)."""
        if isinstance(plan, WindowPlan):
            if self.window_evaluators is None:
                raise ValueError("this engine was started without window queries (C-SPARQL, CQELS)")
            return WindowRunner.restore(
                query, plan, self.window_evaluators(plan), snapshot, self.wiring.clock
            )
        return QueryRunner.restore(query, plan, self.evaluators(plan), snapshot, self.wiring.clock)

    def _healthy(self) -> list[_Slot]:
        return [slot for slot in self.slots.healthy() if slot.runner is not None]


class _Tail:
    """The records the endpoint just appended, so that queries at the head of
    the log do not re-read (and re-decode) the log's segment files."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._records: deque[LogRecord] = deque()
        self._lock = threading.Lock()

    def add(self, records: Sequence[LogRecord]) -> None:
        if not records:
            return
        with self._lock:
            end = self._records[-1].position + 1 if self._records else None
            if end is not None and records[0].position < end:
                return
            if end is not None and records[0].position > end:
                self._records.clear()  # a gap (appends reported out of order): start afresh
            self._records.extend(records)
            while len(self._records) > self.limit:
                self._records.popleft()

    def get(self, start: int, end: int) -> list[LogRecord] | None:
        with self._lock:
            if not self._records:
                return None
            first = self._records[0].position
            if start < first or end > self._records[-1].position + 1:
                return None
            return list(islice(self._records, start - first, end - first))

    def trim(self, position: int) -> None:
        with self._lock:
            while self._records and self._records[0].position < position:
                self._records.popleft()
