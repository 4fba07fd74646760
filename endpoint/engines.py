"""The streaming side of the application: the event log, the registry of
continuous queries and the engine that runs them, shared by /streams and
/queries.

`init_app` creates them from the configuration:

- `RSEP_ENGINE`: `inprocess`, or `spark` (the Spark streaming engine; the
  in-process one, with a warning, where pyspark or Java is missing). Window
  queries (C-SPARQL, CQELS) run on the in-process engine: with `spark`, event
  patterns go to Spark and window queries to an in-process engine next to it
  (`SplitEngine`);
- `RSEP_MASTER`, `RSEP_SPARK_TRIGGER_INTERVAL` (seconds) and `RSEP_CHECKPOINT_LOCATION` (the
  streaming job's checkpoint, a path or URI) for Spark;
- `RSEP_START_STREAMING`: start the engine with the app;
- `RSEP_CHECKPOINT_INTERVAL` (seconds; 0 checkpoints after every batch) and
  `RSEP_SSE_HEARTBEAT` (seconds).

Their defaults are `rsep.endpoint.app.DEFAULTS`.

It appends the engine's `stop` to `app.extensions["rsep.shutdown"]`, which
`rsep serve` calls on SIGTERM. It is called by `streams.init_app`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

from rsep.compiler import Plan, parse
from rsep.endpoint.plans import compiled
from rsep.endpoint.resources import Resources
from rsep.plugin import (
    CheckpointStore,
    CompileError,
    EngineWiring,
    EventLog,
    EventTimePolicy,
    GpmEvaluator,
    Ingest,
    InProcessEngine,
    InvalidInput,
    LateEventGraphs,
    MatchListeners,
    OxigraphMatchSink,
    OxigraphWindows,
    Producers,
    QueryPlan,
    RegisteredQuery,
    Registry,
    ReorderBuffer,
    SplitEngine,
    StreamingEngine,
    WindowPlan,
    is_window_query,
)

EXTENSION = "rsep.streaming"
SHUTDOWN = "rsep.shutdown"
STOP_TIMEOUT = 30.0


@dataclass
class Streaming:
    log: EventLog
    registry: Registry
    checkpoints: CheckpointStore
    sink: OxigraphMatchSink
    engine: StreamingEngine
    heartbeat: float
    producers: Producers
    """The REGISTER STREAM queries whose evaluations ingest appends to the log."""
    ingest: Ingest
    """The one door of clients' events into the log (in order, or through the reorder buffer)."""
    registrations: threading.Lock = field(default_factory=threading.Lock)
    """Held from the check of `--max-queries` to the registration's creation, so concurrent
    registrations cannot all pass the cap."""

    @property
    def ingest_lock(self) -> threading.Lock:
        """Serialises ingest requests and the registrations of producers (which start at the
        head of the log)."""
        return self.ingest.lock


@dataclass(frozen=True)
class EngineParts:
    """What an engine factory gets to build an engine from."""

    app: Flask
    resources: Resources
    log: EventLog
    registry: Registry
    checkpoints: CheckpointStore
    sink: OxigraphMatchSink

    def wiring(self, **options: Any) -> EngineWiring:
        """The parts every engine takes (`options`: listeners, accepts)."""
        return EngineWiring(self.log, self.registry, self.checkpoints, self.sink, **options)


def _inprocess(parts: EngineParts, **wiring: Any) -> InProcessEngine:
    kb = parts.resources.kb
    return InProcessEngine(
        parts.wiring(**wiring),
        compile_registered,
        lambda plan: GpmEvaluator(plan.gpms, kb),
        window_evaluators=lambda plan: OxigraphWindows(plan, kb),
        checkpoint_interval=float(parts.app.config["RSEP_CHECKPOINT_INTERVAL"]),
    )


def _spark(parts: EngineParts) -> StreamingEngine:
    """The Spark Structured Streaming engine (`rsep.plugin.spark.streaming_engine`) on
    RSEP_MASTER; its SparkSession starts with the engine. Only when Spark
    cannot run here at all (pyspark not installed, or no Java) do continuous
    queries run in-process instead, with a warning: `spark` is the default
    engine and the results are the same. Any other problem is an error."""
    try:
        from rsep.plugin import SparkStreamingEngine, java_problem
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in ("pyspark", "py4j"):
            raise
        reason: str | None = f"pyspark is not installed ({error})"
    else:
        reason = java_problem()
    if reason is not None:
        parts.app.logger.warning("RSEP_ENGINE=spark: %s; continuous queries run in-process", reason)
        return _inprocess(parts)
    listeners = MatchListeners()
    spark = SparkStreamingEngine(
        parts.wiring(listeners=listeners, accepts=lambda query: not is_window_registration(query)),
        compile_event_query,
        parts.resources.kb,
        master=str(parts.app.config["RSEP_MASTER"]),
        trigger_interval=float(parts.app.config["RSEP_SPARK_TRIGGER_INTERVAL"]),
        checkpoint_location=parts.app.config["RSEP_CHECKPOINT_LOCATION"],
    )
    windows = _inprocess(parts, listeners=listeners, accepts=is_window_registration)
    return SplitEngine(spark, windows, is_window_registration)


ENGINES: dict[str, Callable[[EngineParts], StreamingEngine]] = {"inprocess": _inprocess, "spark": _spark}
"""Engine name (RSEP_ENGINE) -> factory."""


def init_app(app: Flask) -> None:
    found: Resources = app.extensions["rsep"]
    data = found.data_dir
    log = EventLog(data / "log")
    registry = Registry(data / "queries")
    checkpoints = CheckpointStore(data / "checkpoints")
    sink = OxigraphMatchSink(found.kb)
    engine = _make_engine(EngineParts(app, found, log, registry, checkpoints, sink))
    heartbeat = float(app.config["RSEP_SSE_HEARTBEAT"])
    kb = found.kb
    producers = Producers(
        log, registry, compile_registered, lambda plan: OxigraphWindows(plan, kb), checkpoints
    )
    producers.load()
    ingest = _ingest(app, found, log, producers, engine)
    app.extensions[EXTENSION] = Streaming(
        log, registry, checkpoints, sink, engine, heartbeat, producers, ingest
    )
    ticker = _idle_ticker(ingest, app.config["RSEP_IDLE_TIMEOUT"])

    def shutdown() -> None:
        ticker.set()
        engine.stop(STOP_TIMEOUT)

    app.extensions.setdefault(SHUTDOWN, []).append(shutdown)
    if app.config["RSEP_START_STREAMING"]:
        engine.start()


def _ingest(
    app: Flask, found: Resources, log: EventLog, producers: Producers, engine: StreamingEngine
) -> Ingest:
    """In order, or through the reorder buffer when an event-time policy is set. A buffer left
    with held events by an earlier run is always opened: without a policy now, they are released
    at once (nothing accepted is lost)."""
    lateness, idle = app.config["RSEP_MAX_LATENESS"], app.config["RSEP_IDLE_TIMEOUT"]
    side = app.config["RSEP_LATE"] == "side"
    journal = found.data_dir / "reorder"
    policy = lateness is not None or idle is not None or side
    if not policy and not journal.exists():
        return Ingest(log, producers, engine.notify)
    buffer = ReorderBuffer(journal, log.newest, EventTimePolicy(float(lateness or 0.0), idle, side))
    ingest = Ingest(log, producers, engine.notify, buffer, LateEventGraphs(found.kb) if side else None)
    if not policy:
        with ingest.lock:
            ingest.flush()
        return Ingest(log, producers, engine.notify)
    with ingest.lock:
        ingest.release()
    return ingest


def _idle_ticker(ingest: Ingest, idle_timeout: float | None) -> threading.Event:
    """With an idle timeout, a thread releases what processing time makes due (a quarter of the
    timeout apart, at most a second); set the event returned to stop it."""
    stop = threading.Event()
    if idle_timeout is None or ingest.buffer is None:
        return stop
    period = min(float(idle_timeout) / 4, 1.0)

    def tick() -> None:
        while not stop.wait(period):
            with ingest.lock:
                ingest.release()

    threading.Thread(target=tick, name="rsep-idle-watermark", daemon=True).start()
    return stop


def _make_engine(parts: EngineParts) -> StreamingEngine:
    name = str(parts.app.config["RSEP_ENGINE"])
    factory = ENGINES.get(name)
    if factory is None:
        raise InvalidInput(f"RSEP_ENGINE: unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")
    return factory(parts)


def streaming() -> Streaming:
    found: Streaming = current_app.extensions[EXTENSION]
    return found


def compile_registered(query: RegisteredQuery) -> Plan:
    """The in-process engine's `PlanCompiler`: a registration compiled as it was registered."""
    return compiled(query.text, query.dialect, query.options, match_limit(query.options))


def match_limit(options: Mapping[str, str]) -> int | None:
    """A registration's `match-limit` (validated when it was registered)."""
    limit = options.get("match-limit")
    return None if limit is None else int(limit)


def is_window_registration(query: RegisteredQuery) -> bool:
    """Is a registered query a window query (C-SPARQL, CQELS)? One that no longer parses is
    not: the engine it goes to reports the error."""
    try:
        return isinstance(compile_registered(query), WindowPlan)
    except ValueError:  # the engine it goes to reports the error
        pass
    try:
        return is_window_query(parse(query.text, dialect=query.dialect, base=query.options.get("base")))
    except ValueError:
        return False


def compile_event_query(query: RegisteredQuery) -> QueryPlan:
    """The Spark engine's `QueryCompiler`: event patterns only (a window query registered under the
    in-process engine fails with the reason after a restart on Spark)."""
    plan = compile_registered(query)
    if isinstance(plan, WindowPlan):
        raise CompileError("a window query (C-SPARQL, CQELS) runs on the in-process engine, not on Spark")
    return plan
