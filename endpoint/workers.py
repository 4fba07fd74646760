"""Capped shares of the server's threads for what can run long: SSE listeners and SPARQL
queries (docs/endpoint.md, "Access and limits").

Every request of `rsep serve` runs on one of waitress's threads, an event stream for as long as
its client listens, a query for as long as Oxigraph evaluates it. With a fixed number of
threads, eight listeners or eight runaway queries took them all and ingest stopped. So:

- event streams take a listener slot (`--max-listeners`, default 256) and queries a query slot
  (`--max-running-queries`, default 4); past either cap the answer is 503 at once, never a wait;
- waitress gets `RESERVED_THREADS` more threads than both caps together (`serve_threads`), so
  ingest, updates and every other route always find a free one;
- a query is evaluated in a forked child process (`rsep.plugin.service.query_child`), a
  snapshot of the store that the request's thread kills when `--query-timeout` (default 30 s)
  passes or its client leaves (waitress reports it: `channel_request_lookahead`), which frees
  the slot and the processor at once; the answer is then 503. Where no child can run it (no
  fork, children hung on a lock copied mid-use, or py4j's unpinned mode in the process), the
  query runs on a thread of its own as before: there it keeps its slot until Oxigraph returns,
  since pyoxigraph 0.5 cannot interrupt an evaluation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flask import Flask, current_app, request

from rsep.endpoint.http_errors import ApiError
from rsep.plugin import (
    ChildCancelled,
    ChildLimits,
    ChildTimeout,
    ChildUnavailable,
    child_available,
    run_in_child,
)

LOG = logging.getLogger("rsep.endpoint.workers")

RESERVED_THREADS = 8
"""waitress threads beyond the listener and query caps: what ingest and the other routes use."""

T = TypeVar("T")


class ServiceUnavailable(ApiError):
    status, title = 503, "Service Unavailable"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


@dataclass
class Slots:
    """A cap on how many requests of one kind run at once; `take` never waits."""

    limit: int
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> bool:
        with self._lock:
            if self._used >= self.limit:
                return False
            self._used += 1
            return True

    def give(self) -> None:
        with self._lock:
            self._used -= 1

    @property
    def used(self) -> int:
        return self._used


@dataclass
class Workers:
    listeners: Slots
    queries: Slots
    timeout: float
    in_child: bool
    """Queries run in forked children (`--query-isolation process`), where they can be stopped."""


def workers() -> Workers:
    found: Workers = current_app.extensions["rsep.workers"]
    return found


def _take_query_slot(slots: Slots) -> None:
    if not slots.take():
        raise ServiceUnavailable(
            f"{slots.limit} queries are running, the most this server runs at once "
            "(rsep serve --max-running-queries): try again later"
        )


def client_left() -> Callable[[], bool]:
    """Whether the request's client has closed its connection (waitress reports it with
    `channel_request_lookahead`; never under another server or the test client)."""
    left = request.environ.get("waitress.client_disconnected")
    return left if callable(left) else (lambda: False)


@contextmanager
def query_slot() -> Iterator[None]:
    """A query slot for the block (a continuous query compiled in a child takes one), or 503."""
    slots = workers().queries
    _take_query_slot(slots)
    try:
        yield
    finally:
        slots.give()


def take_listener() -> Callable[[], None]:
    """A listener slot, or 503; returns the function that gives it back (once)."""
    slots = workers().listeners
    if not slots.take():
        raise ServiceUnavailable(
            f"{slots.limit} event streams are open, the most this server serves "
            "(rsep serve --max-listeners): try again later",
            retry_after=5,
        )
    given = threading.Event()

    def give() -> None:
        if not given.is_set():
            given.set()
            slots.give()

    return give


def evaluate_query(
    evaluate: Callable[[], T], *, probe: Callable[[], object] | None = None, remote: bool = False
) -> T:
    """`evaluate()` (a whole query, result serialised: nothing of pyoxigraph's may cross threads
    or processes) within the query timeout: in a child process when `probe` (a read that takes
    the store's snapshot) is given, else on a thread of its own. 503 if all query slots are taken
    or the timeout passes. `remote`: the query calls a SERVICE (its child may wait without
    using the processor)."""
    found = workers()
    slots = found.queries
    _take_query_slot(slots)
    on_thread = False
    try:
        if probe is not None and found.in_child and child_available():
            try:
                return _in_child(evaluate, probe, found.timeout, remote)
            except ChildUnavailable as why:
                LOG.warning("a query runs on a thread, where it cannot be stopped: %s", why)
        on_thread = True
        return _on_thread(evaluate, found)
    finally:
        if not on_thread:
            slots.give()


def _in_child(evaluate: Callable[[], T], probe: Callable[[], object], timeout: float, remote: bool) -> T:
    limits = ChildLimits(timeout, client_left(), watch_stall=not remote)
    try:
        return run_in_child(evaluate, probe, limits)
    except ChildTimeout:
        raise ServiceUnavailable(
            f"the query ran longer than {timeout:g} s (rsep serve --query-timeout) and was stopped"
        ) from None
    except ChildCancelled:
        raise ServiceUnavailable("the client left before the query finished; it was stopped") from None


def _on_thread(evaluate: Callable[[], T], found: Workers) -> T:
    """The query on a daemon thread (a runaway query does not hold up the process's exit), which
    gives its slot back when Oxigraph returns."""
    slots = found.queries
    future: Future[T] = Future()

    def work() -> None:
        try:
            future.set_result(evaluate())
        except BaseException as error:  # handed to the request, which raises it
            future.set_exception(error)
        finally:
            slots.give()

    try:
        threading.Thread(target=work, name="rsep-query", daemon=True).start()
    except BaseException:
        slots.give()
        raise
    try:
        return future.result(timeout=found.timeout)
    except FutureTimeout:
        raise ServiceUnavailable(
            f"the query ran longer than {found.timeout:g} s (rsep serve --query-timeout); it keeps "
            "its slot until Oxigraph finishes it"
        ) from None


def serve_threads(config: Mapping[str, Any]) -> int:
    """waitress's threads for this configuration: both caps and `RESERVED_THREADS`."""
    return RESERVED_THREADS + int(config["RSEP_MAX_LISTENERS"]) + int(config["RSEP_MAX_RUNNING_QUERIES"])


def init_app(app: Flask) -> None:
    app.extensions["rsep.workers"] = Workers(
        Slots(int(app.config["RSEP_MAX_LISTENERS"])),
        Slots(int(app.config["RSEP_MAX_RUNNING_QUERIES"])),
        float(app.config["RSEP_QUERY_TIMEOUT"]),
        app.config["RSEP_QUERY_ISOLATION"] == "process",
    )
