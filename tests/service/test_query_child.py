"""Queries in a forked child (rsep.plugin.service.query_child; issue 15, item 4): the answer or the
error comes back as itself, the time limit and a client that leaves kill the child at once, and a
child that hangs on a lock copied mid-use (what RocksDB's background threads cause) is retried,
then given up, never waited for until the time limit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest

from rsep.plugin import (
    ChildCancelled,
    ChildLimits,
    ChildTimeout,
    ChildUnavailable,
    InvalidInput,
    KnowledgeBase,
    QuerySyntaxError,
    child_available,
    run_in_child,
)
from rsep.plugin.service import query_child

pytestmark = pytest.mark.skipif(not child_available(), reason="needs fork and /proc")


def _children() -> set[int]:
    """This process's living children (a killed child that was reaped is not one)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as file:
                found.update(int(pid) for pid in file.read().split())
        except FileNotFoundError:  # the thread ended since the listing
            continue
    return found


@pytest.fixture
def no_children_left() -> Iterator[None]:
    before = _children()
    yield
    deadline = time.monotonic() + 5  # ended children are collected in the background
    while not _children() <= before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _children() <= before


def _nothing() -> None:
    return None


def _spin() -> None:
    while True:
        pass


def test_the_answer_comes_from_a_snapshot_taken_at_the_fork(no_children_left: None) -> None:
    kb = KnowledgeBase()
    kb.update('INSERT DATA { <http://e/a> <http://e/p> "1" }')

    def count() -> tuple[str, bytes]:
        kb.update('INSERT DATA { <http://e/b> <http://e/p> "2" }')  # the child's copy only
        return kb.query(
            "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }", choose=lambda _: "text/csv", base_iri=None, dataset=None
        )

    media_type, body = run_in_child(count, kb.probe, ChildLimits(timeout=30))
    assert media_type == "text/csv" and body.split() == [b"n", b"2"]
    assert len(kb.store) == 1  # the child's write never reached the parent's store


@pytest.mark.parametrize(
    "error",
    [
        InvalidInput("bad row", line=3, column=7),
        QuerySyntaxError("expected '}'", source="query", line=3, column=7),  # keyword-only arguments
    ],
)
def test_an_error_comes_back_as_itself(no_children_left: None, error: InvalidInput) -> None:
    def refuse() -> None:
        raise error

    with pytest.raises(type(error)) as raised:
        run_in_child(refuse, _nothing, ChildLimits(timeout=30))
    assert (raised.value.line, raised.value.column, str(raised.value)) == (3, 7, str(error))


def test_an_error_that_cannot_travel_comes_back_as_its_text(no_children_left: None) -> None:
    class Local(Exception):  # not importable by name: cannot be unpickled
        pass

    def refuse() -> None:
        raise Local("only here")

    with pytest.raises(query_child.ChildFailure, match="Local: only here"):
        run_in_child(refuse, _nothing, ChildLimits(timeout=30))


def test_the_time_limit_kills_the_child(no_children_left: None) -> None:
    began = time.monotonic()
    with pytest.raises(ChildTimeout):
        run_in_child(_spin, _nothing, ChildLimits(timeout=0.5))
    assert time.monotonic() - began < 5


def test_a_client_that_leaves_stops_the_query(no_children_left: None) -> None:
    leave_at = time.monotonic() + 0.3
    began = time.monotonic()
    with pytest.raises(ChildCancelled):
        run_in_child(_spin, _nothing, ChildLimits(timeout=60, cancelled=lambda: time.monotonic() > leave_at))
    assert time.monotonic() - began < 5


def _held_lock() -> tuple[threading.Lock, Callable[[], None]]:
    """A lock another thread holds (as RocksDB's flush thread holds its mutex) and the function
    that makes it let go."""
    lock, release = threading.Lock(), threading.Event()
    acquired = threading.Event()

    def hold() -> None:
        with lock:
            acquired.set()
            release.wait()

    threading.Thread(target=hold, daemon=True).start()
    acquired.wait()
    return lock, release.set


def test_a_child_hung_before_its_snapshot_is_retried_then_given_up(
    no_children_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_child, "PROBE_SECONDS", 0.2)
    lock, let_go = _held_lock()
    began = time.monotonic()
    with pytest.raises(ChildUnavailable, match="hung"):  # the lock is held in every fork
        run_in_child(_nothing, lock.acquire, ChildLimits(timeout=60))
    assert time.monotonic() - began < 10
    let_go()
    lock.acquire()  # the holder is done: a fork now finds the lock free
    lock.release()
    assert run_in_child(lambda: 42, lock.acquire, ChildLimits(timeout=60)) == 42


def test_a_child_that_stops_using_the_processor_is_retried(
    no_children_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_child, "STALL_SECONDS", 0.3)
    lock, let_go = _held_lock()
    with pytest.raises(ChildUnavailable):
        run_in_child(lock.acquire, _nothing, ChildLimits(timeout=60))
    let_go()


def test_a_child_waiting_on_a_remote_is_not_taken_for_hung(
    no_children_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SERVICE's child waits for the remote on a thread of its own, its main thread asleep on
    a futex like a hung child's: with `watch_stall=False` it is left to the time limit."""
    monkeypatch.setattr(query_child, "STALL_SECONDS", 0.2)

    def wait_then_answer() -> str:
        threading.Event().wait(1.0)
        return "late"

    assert run_in_child(wait_then_answer, _nothing, ChildLimits(timeout=30, watch_stall=False)) == "late"


def test_a_child_asleep_on_anything_but_a_lock_is_not_hung(
    no_children_left: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_child, "STALL_SECONDS", 0.2)
    monkeypatch.setattr(query_child, "PROBE_SECONDS", 0.2)
    assert (
        run_in_child(lambda: time.sleep(1.0) or "slept", lambda: time.sleep(0.5), ChildLimits(timeout=30))
        == "slept"
    )


def test_the_child_does_not_hold_the_servers_connections_open(no_children_left: None) -> None:
    """A connection the parent closes while a query runs reaches its client as closed at once,
    not when the child exits."""
    server_side, client_side = socket.socketpair()
    client_side.settimeout(10)
    done: list[object] = []

    def run() -> None:
        try:
            done.append(run_in_child(lambda: time.sleep(8) or "answered", _nothing, ChildLimits(timeout=30)))
        except BaseException as error:
            done.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)  # the child has forked, with its copy of `server_side`
    server_side.close()
    began = time.monotonic()
    assert client_side.recv(1) == b""
    assert time.monotonic() - began < 5 and not done  # closed long before the child ends (8 s)
    thread.join()
    assert done == ["answered"]
    client_side.close()


def test_a_large_answer_arrives_whole(no_children_left: None) -> None:
    store = ox.Store()
    big = os.urandom(8 << 20)
    assert run_in_child(lambda: big, lambda: store.query("ASK {}"), ChildLimits(timeout=30)) == big


def test_a_failed_fork_leaves_the_query_to_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(query_child.os, "fork", no_fork)
    with pytest.raises(ChildUnavailable, match="cannot fork: Resource temporarily unavailable"):
        run_in_child(lambda: 1, _nothing, ChildLimits(timeout=30))


ORPHAN = """
import os, sys
from rsep.plugin import ChildLimits, run_in_child

def spin():
    with open(sys.argv[1], "w") as file:
        file.write(str(os.getpid()))
    while True:
        pass

run_in_child(spin, lambda: None, ChildLimits(timeout=600))
"""


def test_a_child_does_not_outlive_a_killed_server(tmp_path: Path) -> None:
    """kill -9 of the process that forked a query: its child goes too (it would burn a core with
    no one to answer for as long as Oxigraph took)."""
    noted = tmp_path / "child.pid"
    server = subprocess.Popen([sys.executable, "-c", ORPHAN, str(noted)])
    deadline = time.monotonic() + 30
    while not (noted.exists() and noted.read_text()):
        assert time.monotonic() < deadline and server.poll() is None
        time.sleep(0.05)
    child = int(noted.read_text())
    server.kill()
    server.wait(timeout=30)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and _state(child) != "Z":
        assert time.monotonic() < deadline, "the query's child outlived its server"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
