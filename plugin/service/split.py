"""Two engines behind one `StreamingEngine`: event-pattern queries on one (the Spark streaming
engine), window queries (C-SPARQL, CQELS) on the in-process engine, which is the only one that
runs them. Both read the same log, registry, checkpoints and sink, and push through the same
listeners; each resumes only its own queries (`accepts`), so `rsep serve` on its default Spark
engine takes every dialect."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rsep.plugin.log import LogRecord
from rsep.plugin.service.engine import QueryProgress, StreamingEngine
from rsep.plugin.service.listeners import MatchListeners
from rsep.plugin.service.registry import RegisteredQuery


class SplitEngine:
    """`StreamingEngine` routing each query by `is_window` to `windows` or `events`."""

    def __init__(
        self,
        events: StreamingEngine,
        windows: StreamingEngine,
        is_window: Callable[[RegisteredQuery], bool],
    ) -> None:
        if events.listeners is not windows.listeners:
            raise ValueError("both engines must push through the same listeners")
        self.events = events
        self.windows = windows
        self.is_window = is_window
        self.listeners: MatchListeners = events.listeners

    def start(self) -> None:
        self.windows.start()  # starts in well under a second; Spark takes seconds
        self.events.start()

    def stop(self, timeout: float | None = None) -> None:
        try:
            self.events.stop(timeout)
        finally:
            self.windows.stop(timeout)

    def register(self, query: RegisteredQuery) -> None:
        (self.windows if self.is_window(query) else self.events).register(query)

    def unregister(self, query_id: str, *, purge: bool = False) -> None:
        engine = self.windows if self.windows.progress(query_id) is not None else self.events
        engine.unregister(query_id, purge=purge)

    def notify(self, records: Sequence[LogRecord]) -> None:
        self.windows.notify(records)
        self.events.notify(records)

    def progress(self, query_id: str) -> QueryProgress | None:
        found = self.windows.progress(query_id)
        return found if found is not None else self.events.progress(query_id)
