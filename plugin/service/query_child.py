"""A read of the store in a forked child process, so that it can be stopped.

pyoxigraph 0.5 cannot interrupt an evaluation (Oxigraph has a cancellation token; the Python
binding does not expose it), so a query run on a thread keeps its CPU and its slot until Oxigraph
returns, whoever is still waiting. A fork is a copy-on-write snapshot of the whole process,
the open store included (RocksDB's memtables and table files, or the in-memory store): the child
evaluates and serialises the query, sends the bytes back through a pipe and exits, and the parent
kills it the moment the time limit passes or the client leaves, which frees the CPU and the
slot at once. A child still running after `DEMOTE_AFTER_SECONDS` drops to a lower priority
(`CHILD_NICENESS`), so a runaway query yields the processor to ingest and the other routes (not
from the start: at nice 10 next to busy processes, every short query waited for the processor).
The child sees the store as it was at the fork, after every write the parent had answered: a
client reads its own writes.

Forking a threaded process copies every lock in the state other threads left it in, and a
child that needs a lock held at that moment by a thread that does not exist in it waits for
ever. RocksDB's flush and compaction threads hold its database mutex now and then: in a test
with concurrent writes, 10 of 2,000 forks hung, all in `GetSnapshotImpl`. Hence, in the child:

- it first takes a snapshot with a probe (`ASK {}`) and reports ready; a child that sleeps on a
  futex for `PROBE_SECONDS` before it is ready is killed and the fork retried. A lock the
  probe took and released is free for the child's life (it has no other thread);
- a lock met later shows as a child asleep on a futex that uses no processor time: one that
  stays so for `STALL_SECONDS` is killed and the query retried (not for texts that call a remote
  `SERVICE`, whose child waits on a thread of its own, and is killed at the time limit like any
  other). A child that waits for the processor (a loaded machine) or for a disk is not hung.

After `ATTEMPTS` children that never got going, the caller runs the query on a thread as before
(`ChildUnavailable`). Linux only (`fork`, and `/proc` for the child's state); elsewhere queries
run on threads. (bench note: bench/README.md, "Queries in forked children".)
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import queue
import select
import signal
import stat
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from rsep.plugin.errors import InternalError
from rsep.plugin.spark.inherited_connections import fork_keeps_jvm_connections

T = TypeVar("T")

CHILD_NICENESS = 10
DEMOTE_AFTER_SECONDS = 0.1
PROBE_SECONDS = 0.1
"""A single-threaded child asleep on a futex waits for a lock no thread of its own holds: hung.
Not 0 since the futex test and the processor time are sampled every `POLL_SECONDS`."""
STALL_SECONDS = 2.0
ATTEMPTS = 3
POLL_SECONDS = 0.05
_READY = b"R"
_LENGTH = struct.Struct("<Q")


class ChildUnavailable(InternalError):
    """No child could run the query (no fork here, or every attempt hung): run it in-process."""


class ChildTimeout(InternalError):
    """The time limit passed: the child was killed."""


class ChildCancelled(InternalError):
    """The caller stopped waiting (its client left): the child was killed."""


class ChildFailure(InternalError):
    """The child raised something that could not be sent back as itself, or died (500)."""


@dataclass(frozen=True)
class ChildLimits:
    """When the parent stops a child: `timeout` seconds of wall-clock time, or `cancelled()`
    (polled every `POLL_SECONDS`) returning True; `watch_stall` False for a child that may wait
    without using the processor (a remote call)."""

    timeout: float
    cancelled: Callable[[], bool] = lambda: False
    watch_stall: bool = True


def child_available() -> bool:
    """Whether this process can run a query in a child: Linux's fork and /proc, and no JVM
    connection a child would disturb (`inherited_connections`)."""
    return hasattr(os, "fork") and os.path.isdir("/proc/self") and fork_keeps_jvm_connections()


def run_in_child(work: Callable[[], T], probe: Callable[[], object], limits: ChildLimits) -> T:
    """`work()`'s value (or what it raised), computed in a forked child after `probe()` (see
    the module docstring). Raises ChildTimeout, ChildCancelled or ChildUnavailable."""
    if not child_available():
        raise ChildUnavailable("no fork on this platform, or py4j's unpinned mode in the process")
    deadline = time.monotonic() + limits.timeout
    for _ in range(ATTEMPTS):
        answer = _attempt(work, probe, limits, deadline)
        if answer is not None:
            succeeded, value = pickle.loads(answer)
            if not succeeded:
                raise _rebuilt(*value)
            return cast(T, value)
    raise ChildUnavailable(f"{ATTEMPTS} forked children hung before they could run the query")


def _attempt(
    work: Callable[[], object], probe: Callable[[], object], limits: ChildLimits, deadline: float
) -> bytes | None:
    """The child's pickled answer, or None if it hung (killed: try again)."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError as error:  # no memory or no process left for a child
        os.close(read_end)
        os.close(write_end)
        raise ChildUnavailable(f"cannot fork: {error.strerror or error}") from None
    if pid == 0:  # pragma: no cover - the child; its effects are what the tests check
        os.close(read_end)
        _child(work, probe, write_end, parent)
    os.close(write_end)
    try:
        return _supervise(pid, read_end, limits, deadline)
    finally:
        os.close(read_end)
        _reap(pid)


def _child(  # pragma: no cover
    work: Callable[[], object], probe: Callable[[], object], out: int, parent: int
) -> None:
    """Never returns: the child leaves with os._exit, running no cleanup of the parent's."""
    code = 0
    try:
        gc.disable()  # a collection would touch (and copy) the parent's whole heap
        _die_with_parent(parent)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        probe()
        os.write(out, _READY)
        _close_sockets(out)
        try:
            answer = pickle.dumps((True, work()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # sent back to be raised in the parent
            answer = _pickled_error(error)
        view = memoryview(_LENGTH.pack(len(answer)) + answer)
        while view:
            view = view[os.write(out, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the child
    """SIGKILL when the server dies (a kill -9, a crash): a runaway query must not outlive it,
    burning a core with no one to answer. Linux's PR_SET_PDEATHSIG, set at once; if the server
    died before that, the child's parent is no longer it and it leaves."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _close_sockets(keep: int) -> None:  # pragma: no cover - runs in the child
    """Close the child's copies of the server's sockets: a client whose connection the parent
    closes must see it closed, not held open by a child that runs for seconds."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd == keep:
            continue
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            continue


def _pickled_error(error: BaseException) -> bytes:  # pragma: no cover - runs in the child
    """The error as its class, args and attributes: pickling an exception calls its class with
    `args` alone, which fails for rsep's errors with keyword-only arguments."""
    try:
        text = pickle.dumps((False, (type(error), error.args, vars(error))), protocol=pickle.HIGHEST_PROTOCOL)
        _rebuilt(*pickle.loads(text)[1])  # a class that is not importable goes as its text
        return text
    except Exception:
        failure = ChildFailure(f"{type(error).__name__}: {error}")
        return pickle.dumps((False, (ChildFailure, failure.args, {})), protocol=pickle.HIGHEST_PROTOCOL)


def _rebuilt(kind: type[BaseException], args: tuple[object, ...], state: dict[str, object]) -> BaseException:
    error = kind.__new__(kind, *args)
    error.args = args
    vars(error).update(state)
    return error


def _supervise(pid: int, pipe: int, limits: ChildLimits, deadline: float) -> bytes | None:
    """Read the child's answer while watching the limits; kill it when one is passed."""
    received = bytearray()
    ready = False
    started = time.monotonic()
    clock, progress = _progress(pid), started
    demoted = False
    while True:
        now = time.monotonic()
        if ready and not demoted and now - started > DEMOTE_AFTER_SECONDS:
            demoted = True
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, pid, CHILD_NICENESS)
        if now >= deadline:
            _kill(pid)
            raise ChildTimeout
        if limits.cancelled():
            _kill(pid)
            raise ChildCancelled
        readable, _, _ = select.select([pipe], [], [], min(POLL_SECONDS, deadline - now))
        if readable:
            chunk = os.read(pipe, 1 << 20)
            if not chunk:
                break  # the child has exited
            received += chunk
            ready = True
            if _complete(received):
                break  # the child exits on its own: its teardown is not the client's wait
            continue
        now, ticks = time.monotonic(), _progress(pid)
        if ticks != clock or ticks is None:  # working, or waiting for the processor
            clock, progress = ticks, now
        elif (not ready or limits.watch_stall) and now - progress > (
            STALL_SECONDS if ready else PROBE_SECONDS
        ):
            _kill(pid)
            return None  # asleep on a lock, no processor time: hung
    if not received.startswith(_READY) or len(received) < 1 + _LENGTH.size:
        raise ChildFailure("the query's child process ended without an answer")
    (length,) = _LENGTH.unpack_from(received, 1)
    answer = bytes(received[1 + _LENGTH.size :])
    if len(answer) != length:
        raise ChildFailure("the query's child process ended half-way through its answer")
    return answer


def _progress(pid: int) -> int | None:
    """The child's processor time (user + system, in clock ticks: /proc/PID/stat fields 14 and
    15) while it sleeps on a futex, the way a thread waits for a lock; None while it runs, waits
    for the processor, or sleeps on anything else (a disk, the network). A child is hung when
    this stays the same number: under load, a child that waits its turn for the processor is
    not taken for hung."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/wchan", "rb") as file:
            waiting_in = file.read()
    except OSError:
        return None
    if fields[0] != b"S" or not waiting_in.startswith(b"futex"):
        return None
    return int(fields[11]) + int(fields[12])


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _complete(received: bytearray) -> bool:
    header = 1 + _LENGTH.size
    return len(received) >= header and len(received) - header >= _LENGTH.unpack_from(received, 1)[0]


def _reap(pid: int) -> None:
    """Collect the child once it has ended (killed, or exiting after its answer) on the reaper
    thread: unmapping a copy of a large process takes milliseconds (3 ms per 200 MB here), which
    the request does not wait for."""
    global _reaper
    with _reaper_lock:
        if _reaper is None or not _reaper.is_alive():
            _reaper = threading.Thread(target=_reap_forever, name="rsep-query-reaper", daemon=True)
            _reaper.start()
    _ended.put(pid)


_ended: queue.SimpleQueue[int] = queue.SimpleQueue()
_reaper: threading.Thread | None = None
_reaper_lock = threading.Lock()


def _reap_forever() -> None:
    while True:
        pid = _ended.get()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
