"""What every streaming engine does with its queries: one lifecycle.

An engine holds a *slot* per registered query it runs. Both engines (in-process, Spark) share
how a slot comes and goes:

- **load**, once, when the engine starts: every registered query the engine accepts is
  *resumed* from its checkpoint (`_restore`, the engine's own part), and the checkpoint folders
  of queries unregistered before a crash are removed;
- **resume**: a query whose plan or checkpoint cannot be restored is *failed* (its error is kept
  on the slot and in the registry, where `/queries` shows it) instead of stopping the engine; a
  restored one is marked active again;
- **fail**: one query's error never stops the others;
- **unregister**: the slot goes, then its checkpoints, its listeners and, with `purge`, its
  match graphs;
- **progress**: `failed` with the error, `running` while the engine runs it, else `waiting`.

`Slot` is what every slot has; an engine's slot type adds its own fields. `EngineWiring` is
what every engine is built from (the log it reads, where its queries and checkpoints live, where
matches go), so both engines take those parts the same way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rsep.plugin.graph_events import Timestamp
from rsep.plugin.log import EventLog
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.engine import FAILED, RUNNING, WAITING, MatchSink
from rsep.plugin.service.listeners import MatchListeners
from rsep.plugin.service.registry import ACTIVE, RegisteredQuery, Registry
from rsep.plugin.vocabulary import QUERY_IRI_PREFIX

logger = logging.getLogger("rsep.service")


@dataclass(slots=True)
class Slot:
    """A registered query as an engine holds it."""

    query: RegisteredQuery
    error: str | None = None
    removed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while the engine works on the query (a step, a batch): unregistering waits for it."""


S = TypeVar("S", bound=Slot)


def _now() -> str:
    return Timestamp.now().lexical


@dataclass(slots=True)
class EngineWiring:
    """The parts an engine is wired to, whichever engine it is."""

    log: EventLog
    registry: Registry
    checkpoints: CheckpointStore
    sink: MatchSink
    listeners: MatchListeners = field(default_factory=MatchListeners)
    """Shared when two engines serve one endpoint (windows in-process beside Spark)."""
    clock: Callable[[], str] = _now
    """The detection time written on each match (a test fixes it)."""
    accepts: Callable[[RegisteredQuery], bool] | None = None
    """Which registrations this engine runs (None: all)."""

    def slots(
        self, *, restore: Callable[[RegisteredQuery], S], broken: Callable[[RegisteredQuery], S]
    ) -> QuerySlots[S]:
        """The engine's slots, with the lifecycle below."""
        return QuerySlots(
            self.registry,
            self.checkpoints,
            self.sink,
            self.listeners,
            restore=restore,
            broken=broken,
            accepts=self.accepts,
        )


class QuerySlots(Generic[S]):
    """The slots of one engine and their lifecycle (see the module docstring)."""

    def __init__(
        self,
        registry: Registry,
        checkpoints: CheckpointStore,
        sink: MatchSink,
        listeners: MatchListeners,
        *,
        restore: Callable[[RegisteredQuery], S],
        broken: Callable[[RegisteredQuery], S],
        accepts: Callable[[RegisteredQuery], bool] | None = None,
    ) -> None:
        self.registry = registry
        self.checkpoints = checkpoints
        self.sink = sink
        self.listeners = listeners
        self.accepts = accepts
        """Which registered queries this engine resumes (None: all); see `SplitEngine`."""
        self._restore = restore
        """The engine's part of resuming: a slot from the query's plan and checkpoint (raises
        what the compiler or the checkpoint raise)."""
        self._broken = broken
        """A slot for a query that could not be restored (it holds the error)."""
        self._slots: dict[str, S] = {}
        self._lock = threading.Lock()
        self._loaded = False

    # ------------------------------------------------------------------ slots

    def add(self, slot: S) -> None:
        with self._lock:
            self._slots[slot.query.id] = slot

    def get(self, query_id: str) -> S | None:
        with self._lock:
            return self._slots.get(query_id)

    def pop(self, query_id: str) -> S | None:
        with self._lock:
            return self._slots.pop(query_id, None)

    def all(self) -> list[S]:
        with self._lock:
            return list(self._slots.values())

    def healthy(self) -> list[S]:
        """The slots that did not fail."""
        return [slot for slot in self.all() if slot.error is None]

    # ------------------------------------------------------------------ lifecycle

    @property
    def loaded(self) -> bool:
        return self._loaded

    def load(self) -> None:
        """Resume every registered query this engine accepts (once), and remove the checkpoints
        of queries that are no longer registered."""
        if self._loaded:
            return
        registered = self.registry.all()
        for query in registered:
            if self.get(query.id) is None and (self.accepts is None or self.accepts(query)):
                self.add(self.resume(query))
        ids = {q.id for q in registered}
        for orphan in set(self.checkpoints.query_ids()) - ids:  # unregistered, then a crash
            self.checkpoints.remove(orphan)
        self._loaded = True

    def resume(self, query: RegisteredQuery) -> S:
        """The query's slot from its checkpoint; a failed slot if it cannot be restored."""
        try:
            slot = self._restore(query)
        except Exception as error:
            slot = self._broken(query)
            self.fail(slot, error)
            return slot
        if query.status != ACTIVE:
            self.registry.set_status(query.id, ACTIVE)
        return slot

    def fail(self, slot: S, error: BaseException | str) -> None:
        """The query stops with `error` (kept on the slot and in the registry); others go on."""
        slot.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        logger.error(
            "query %s failed: %s",
            slot.query.id,
            slot.error,
            exc_info=None if isinstance(error, str) else error,
        )
        if not slot.removed:
            self.registry.set_status(slot.query.id, FAILED, slot.error)

    def forget(self, query_id: str, *, purge: bool) -> None:
        """After the engine stopped running an unregistered query: its checkpoints, listeners
        and (with `purge`) its match graphs go."""
        self.checkpoints.remove(query_id)
        self.listeners.close(query_id)
        if purge:
            self.sink.purge(QUERY_IRI_PREFIX + query_id)

    @staticmethod
    def state(slot: Slot, running: bool) -> str:
        """A query's state as progress reports it."""
        return FAILED if slot.error else RUNNING if running else WAITING
