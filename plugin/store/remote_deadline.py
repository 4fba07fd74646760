"""A deadline on `SERVICE` and `LOAD` (issue 15): a slow remote must not hold a query forever.

pyoxigraph 0.5 fetches `SERVICE` and `LOAD` with its own HTTP client, which has no timeout, and
`Store.query`/`Store.update` take none (Oxigraph's Rust API has an HTTP timeout; pyoxigraph does not
expose it). A remote that accepts the connection and never answers kept the query's thread, and
its query slot, until the process ended. So a text with a remote call runs on a thread of its own;
if it has not finished within the deadline (`rsep serve --service-timeout`, default 10 s), the
TCP connections the process opened since it started, to the address of one of its targets, are
shut down (found through /proc/self/fd: the socket's peer is compared with the target's host and
port). Oxigraph's read then fails, the evaluation ends with an error and its thread and slot are
free; the client gets `ServiceTimeout` (504). A target named by a variable (only with
`--allow-remote '*'`) has no address to compare, so its connection is not cut: the client still
gets the 504 at the deadline, but the evaluation keeps its thread until the remote answers.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar
from urllib.parse import urlsplit

from rsep.plugin.errors import RemoteFailure
from rsep.plugin.store.remote import remote_calls

T = TypeVar("T")

GRACE_S = 5.0
"""How long to wait, once the connections are cut, for the evaluation to end."""

_timeout = 10.0


class ServiceTimeout(RemoteFailure):
    """A `SERVICE` or `LOAD` whose remote did not answer within the deadline."""

    http_status = 504


def set_service_timeout(seconds: float) -> None:
    """The process's deadline (`rsep serve --service-timeout`), like its remote policy."""
    global _timeout
    _timeout = float(seconds)


def service_timeout() -> float:
    return _timeout


def within_deadline(text: str, base_iri: str | None, work: Callable[[], T]) -> T:
    """`work()` (the whole evaluation of `text`: pyoxigraph's results must stay on the thread that
    made them) within the deadline when `text` has a SERVICE or LOAD; at once otherwise."""
    calls = remote_calls(text, base_iri)
    if not calls:
        return work()
    deadline = _timeout
    before = _sockets()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # handed to the caller, which raises it
            failure.append(_detached(error))

    thread = threading.Thread(target=run, name="rsep-remote-call", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        cut = _cut(before, _addresses(call.target for call in calls))
        thread.join(GRACE_S if cut else 0)
        keyword = calls[0].keyword
        freed = "" if not thread.is_alive() else " (the evaluation waits for the remote to close)"
        raise ServiceTimeout(
            f"{keyword} <{calls[0].target or 'a variable'}> did not answer within {deadline:g} s "
            f"(rsep serve --service-timeout){freed}"
        )
    if failure:
        raise failure[0]
    return outcome[0]


def _detached(error: BaseException) -> BaseException:
    """`error` without the tracebacks of its chain: they hold the evaluation's frames, and with
    them pyoxigraph's results, which must be dropped on the thread that made them (here, when the
    thread's frame ends), not on the caller's."""
    seen: BaseException | None = error
    while seen is not None:
        seen.__traceback__ = None
        seen = seen.__cause__ or seen.__context__
    return error


def _addresses(targets: Iterable[str | None]) -> set[tuple[str, int]]:
    """The (IP, port) pairs the targets' hosts resolve to."""
    found: set[tuple[str, int]] = set()
    for target in targets:
        if target is None:
            continue
        parts = urlsplit(target)
        if not parts.hostname:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            for *_, address in socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP):
                found.add((_plain(str(address[0])), int(address[1])))
        except OSError:
            continue
    return found


def _plain(ip: str) -> str:
    return ip.removeprefix("::ffff:")


def _sockets() -> set[tuple[int, str]]:
    """(fd, socket:[inode]) of the process's open sockets (none where /proc is missing)."""
    found: set[tuple[int, str]] = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            link = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if link.startswith("socket:"):
            found.add((int(name), link))
    return found


def _cut(before: set[tuple[int, str]], addresses: set[tuple[str, int]]) -> int:
    """Shut down the sockets opened since `before` whose peer is one of `addresses`; how many."""
    if not addresses:
        return 0
    cut = 0
    for fd, _ in _sockets() - before:
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            peer = sock.getpeername()
            if isinstance(peer, tuple) and (_plain(str(peer[0])), int(peer[1])) in addresses:
                sock.shutdown(socket.SHUT_RDWR)  # the original's reads end too: the same socket
                cut += 1
        except OSError:
            pass
        finally:
            sock.close()  # the copy only
    return cut
