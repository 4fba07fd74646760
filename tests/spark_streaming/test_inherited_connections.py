"""Query children forked from a process that talks to a JVM (a Spark engine in the server) leave
the server's py4j connections intact (rsep.plugin.spark.inherited_connections). Without the
guard, CPython's cleanup of the other threads in each child ran py4j's finalisers, whose socket
shutdown reset the server's connections: every thread below lost its connection."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from rsep.plugin import ChildLimits, run_in_child

pytestmark = pytest.mark.spark

CALLERS = 4
FORKS = 20


def test_threads_calling_the_jvm_keep_their_connections_while_queries_fork(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    failures: list[BaseException] = []
    calls = [0] * CALLERS
    stop = threading.Event()

    def call(index: int) -> None:  # each thread has a py4j connection of its own (pinned mode)
        while not stop.is_set():
            try:
                jvm.java.lang.System.currentTimeMillis()
            except BaseException as error:
                failures.append(error)
                return
            calls[index] += 1
            time.sleep(0.001)

    threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    try:
        while min(calls) == 0 and not failures:  # every connection open before the first fork
            time.sleep(0.01)
        for n in range(FORKS):
            assert run_in_child(lambda n=n: n * 2, lambda: None, ChildLimits(30.0)) == n * 2
        before = list(calls)
        time.sleep(0.3)  # the connections are used again after the last child has gone
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert failures == []
    assert all(after > then for after, then in zip(calls, before, strict=True))
    assert spark.range(3).count() == 3
