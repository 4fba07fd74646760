"""The interface every streaming engine implements, and what engines share.

An engine runs the registered continuous queries over the event log: for each
query, from its checkpoint (or its registration position) onwards, it calls
`QueryRunner.step` on the new records, writes the match graphs through a
`MatchSink`, publishes the graphs it created to `listeners`, and checkpoints
the runner after the graphs are written. The in-process engine
(`inprocess.InProcessEngine`) does this on a thread; a Spark Structured
Streaming engine implements the same protocol.

Guarantees an engine keeps (docs/endpoint.md, "Guarantees"):

- a query's matches are exactly those of `Replay` over its events, however
  the log is split into batches (`QueryRunner.step` holds this);
- a checkpoint never covers graphs that are not written (write, then flush
  the sink, then checkpoint), so a restart resumes without losing matches;
- a replayed batch rewrites identical graphs, which the sink skips, and only
  created graphs are published: no duplicate graph, no duplicate push.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa.keyed import GpmEvaluatorLike
from rsep.plugin.service.listeners import MatchListeners
from rsep.plugin.service.match_graphs import ResultGraph
from rsep.plugin.service.registry import RegisteredQuery
from rsep.plugin.windows.window_plan import WindowPlan
from rsep.plugin.windows.window_replay import WindowEvaluator

QueryCompiler = Callable[[RegisteredQuery], QueryPlan]
"""Text -> plan, injected by the endpoint (the core never imports the grammar)."""

PlanCompiler = Callable[[RegisteredQuery], QueryPlan | WindowPlan]
"""Text -> an event-pattern plan (NFA) or a window plan (C-SPARQL, CQELS)."""

EvaluatorFactory = Callable[[QueryPlan], GpmEvaluatorLike]
"""A GPM stage for a plan (the Oxigraph evaluator over the shared knowledge base)."""

WindowEvaluatorFactory = Callable[[WindowPlan], WindowEvaluator]
"""The store side of a window plan (rsep.plugin.store.windows.OxigraphWindows)."""

G = TypeVar("G", bound=ResultGraph)

RUNNING = "running"
WAITING = "waiting"
FAILED = "failed"


@dataclass(frozen=True, slots=True)
class QueryProgress:
    """What an engine reports about one query."""

    state: str
    """`running`, `waiting` (engine not started) or `failed`."""
    position: int
    """The next log position the query reads (every earlier event is processed)."""
    events: int
    """Events of the query's streams processed since registration."""
    matches: int
    """Match graphs created."""
    error: str | None = None


class MatchSink(Protocol):
    """Where match graphs go (the Oxigraph store in both engines)."""

    def write(self, graphs: Sequence[G]) -> list[G]:
        """Write all graphs that do not exist yet in ONE transaction; returns
        those created, in the given order (each IRI once)."""
        ...

    def flush(self) -> None:
        """Make every write so far durable (called before a checkpoint)."""
        ...

    def count(self, query_iri: str) -> int:
        """How many graphs a query has generated (read when a query resumes)."""
        ...

    def purge(self, query_iri: str) -> int:
        """Drop the graphs a query generated and their metadata; returns how many."""
        ...


class RunnerCounts(Protocol):
    event_count: int
    match_count: int


class Runner(Protocol):
    """One query's step over log records: `QueryRunner` (event patterns, on the NFA) or
    `WindowRunner` (window queries)."""

    @property
    def state(self) -> RunnerCounts: ...

    @property
    def position(self) -> int: ...

    @property
    def backlog(self) -> bool:
        """Work is left that a step without records does (a window query's evaluations are
        made a bounded number per step)."""
        ...

    @property
    def settled(self) -> int:
        """The log position before which the query's results are complete (its progress)."""
        ...

    def step(self, records: Sequence[LogRecord]) -> Sequence[ResultGraph]: ...

    def snapshot(self) -> bytes: ...

    def created(self, count: int) -> None: ...


class StreamingEngine(Protocol):
    """What the endpoint needs from an engine."""

    listeners: MatchListeners

    def start(self) -> None:
        """Resume every registered query from its checkpoint and start processing."""
        ...

    def stop(self, timeout: float | None = None) -> None:
        """Finish the batch in progress, checkpoint, end listener streams."""
        ...

    def register(self, query: RegisteredQuery) -> None:
        """Start running a query just added to the registry (from `query.start`).
        Raises what the compiler raises for a query it cannot compile."""
        ...

    def unregister(self, query_id: str, *, purge: bool = False) -> None:
        """Stop running a query and delete its checkpoints (its match graphs
        stay unless `purge`). The caller removes it from the registry."""
        ...

    def notify(self, records: Sequence[LogRecord]) -> None:
        """New events were appended to the log (the records just appended)."""
        ...

    def progress(self, query_id: str) -> QueryProgress | None:
        """Where a registered query is (None if the engine does not run it)."""
        ...
