"""Reading events in a second process, so that parsing overlaps matching.

`rsep run` reads its event files as it matches (`rsep.plugin.store.event_reader`). Parsing is a
quarter of a replay's CPU time and independent of matching, so on a machine with two cores or
more each file is parsed in a child process (forked: nothing is re-imported or pickled to start
it) while this process matches. Events cross the pipe as batches of plain tuples, which pickle
at a fraction of the cost of the dataclasses (`_pack`/`_unpack`), and the pipe holds about one
batch: a child runs at most a batch ahead, so memory stays bounded as the replay's is.

What the reader raises in the child (a syntax error at its position, a late event) is raised
here at the same point of the stream: after the events before it. An `RsepError` crosses as
its class and attributes; anything else becomes an `EngineFailure` with the child's message.
A caller reads a pipe without it (`rsep run` does): batches wait for their events there.
Where fork is not available, one core is all this process may use, the process runs other
threads (Spark's gateway, a server: forking those is unsafe), or the environment says
`RSEP_READ_AHEAD=0` (to compare, or to debug the reader in one process), events are read here.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from rsep.plugin.errors import EngineFailure, RsepError
from rsep.plugin.graph_events import GraphEvent, Timestamp

BATCH = 2_000
"""Events per message: large enough that the pipe's cost per event is small, small enough that
the child is not far ahead."""

_EVENTS, _ERROR, _END = 0, 1, 2

Packed = tuple[str, float, str, bool, str, float | None, str | None, bool | None]


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available() -> bool:
    """Can events be read in a second process here (fork, a second core, not turned off, and this
    process has no other thread: a thread holding a lock when the process forks would leave it
    held for ever in the child, which would then never answer)?"""
    if os.environ.get("RSEP_READ_AHEAD", "1") == "0" or _other_threads():
        return False
    return "fork" in multiprocessing.get_all_start_methods() and cores() >= 2


def _other_threads() -> bool:
    return threading.active_count() > 1


def read_ahead(read: Callable[[], Iterator[GraphEvent]], *, batch: int = BATCH) -> Iterator[GraphEvent]:
    """The events `read()` yields, read in a child process when `available()`, else here. The
    child starts at the first event asked for, and stops when this iterator ends or is closed."""
    if not available():
        yield from read()
        return
    receiving, sending = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_child, args=(read, sending, batch), name="rsep-read-ahead", daemon=True
    )
    child.start()
    sending.close()
    try:
        while True:
            try:
                kind, payload = receiving.recv()
            except EOFError:
                raise EngineFailure(
                    f"the process reading events ended without a word (exit {child.exitcode})"
                ) from None
            if kind == _EVENTS:
                stream = payload[0]
                for packed in payload[1]:
                    yield _unpack(stream, packed)
            elif kind == _ERROR:
                raise _error(payload)
            else:
                return
    finally:
        receiving.close()
        if child.is_alive():
            child.terminate()
        child.join()


def _child(read: Callable[[], Iterator[GraphEvent]], sending: Connection, batch: int) -> None:
    stream: str | None = None
    packed: list[Packed] = []
    try:
        try:
            for event in read():
                if event.stream != stream and packed:
                    sending.send((_EVENTS, (stream, packed)))
                    packed = []
                stream = event.stream
                packed.append(_pack(event))
                if len(packed) >= batch:
                    sending.send((_EVENTS, (stream, packed)))
                    packed = []
        except BaseException as error:
            if packed:
                sending.send((_EVENTS, (stream, packed)))
            sending.send((_ERROR, _portable(error)))
            return
        if packed:
            sending.send((_EVENTS, (stream, packed)))
        sending.send((_END, None))
    except BrokenPipeError:  # the reader stopped listening
        pass
    finally:
        sending.close()


def _pack(event: GraphEvent) -> Packed:
    time, start = event.time, event.start
    if start is None:
        return (event.name, time.seconds, time.lexical, time.numeric, event.ntriples, None, None, None)
    begins = (start.seconds, start.lexical, start.numeric)
    return (event.name, time.seconds, time.lexical, time.numeric, event.ntriples, *begins)


def _unpack(stream: str, packed: Packed) -> GraphEvent:
    name, seconds, lexical, numeric, ntriples, start_seconds, start_lexical, start_numeric = packed
    start = None
    if start_seconds is not None:
        assert start_lexical is not None and start_numeric is not None
        start = Timestamp(start_seconds, start_lexical, start_numeric)
    return GraphEvent(stream, name, Timestamp(seconds, lexical, numeric), ntriples, start)


def _portable(error: BaseException) -> tuple[str, Any]:
    """The error as it can cross the pipe: an `RsepError` as its class and attributes (its
    constructor may take other arguments than `args`), anything else as its message."""
    if isinstance(error, RsepError):
        try:
            data = pickle.dumps((type(error), error.args, error.__dict__))
            pickle.loads(data)
        except Exception:
            return ("other", f"{type(error).__name__}: {error}")
        return ("rsep", data)
    return ("other", f"{type(error).__name__}: {error}")


def _error(payload: tuple[str, Any]) -> BaseException:
    kind, data = payload
    if kind == "rsep":
        cls, args, attributes = pickle.loads(data)
        error = cls.__new__(cls)
        error.args = args
        error.__dict__.update(attributes)
        return error  # type: ignore[no-any-return]
    return EngineFailure(f"reading events failed: {data}")
