"""Keeping the JVM connections a forked query child inherits the server's own.

When a threaded process forks, CPython clears every other thread's state in the child (their
frames and thread-locals) inside `os.fork()`, before the child runs a line of its own. py4j
keeps one connection to the JVM per Python thread (pinned-thread mode, PySpark's default) in a
thread-local, and a connection's finaliser shuts its socket down (`shutdown(SHUT_RDWR)`), which
acts on the TCP connection itself, not on the child's copy of the descriptor. So every query
child of a server that runs the Spark engine reset the server's connections of all its other
threads (the engine's watcher, `foreachBatch`'s callback): four threads calling the JVM all
failed within twenty forks, none did with the guard (tests/spark_streaming/test_inherited_connections.py).

The guard makes py4j's socket shutdown do nothing in any process but the one that installed it:
a child then only closes its copies of the descriptors, which the server's connections survive.
py4j's unpinned mode (PYSPARK_PIN_THREAD=false) sends a finalised object's release to the JVM
over a shared connection from whichever thread drops it, so there a child would still talk over
the server's sockets: no guard makes that safe, and the process does not fork its queries.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

_PINNED = "PYSPARK_PIN_THREAD"
_installed = False
_lock = threading.Lock()


def fork_keeps_jvm_connections() -> bool:
    """Whether a child forked now leaves this process's JVM connections (if any) intact,
    installing the guard first when py4j is loaded. Cheap once installed: called per query."""
    if "py4j" not in sys.modules:
        return True
    if os.environ.get(_PINNED, "true").lower() != "true":
        return False
    if not _installed:
        _install()
    return True


def _install() -> None:
    global _installed
    from py4j import clientserver, java_gateway

    with _lock:
        if _installed:
            return
        owner = os.getpid()
        shutdown: Callable[[Any], None] = java_gateway.quiet_shutdown

        def shutdown_in_owner(socket: Any) -> None:
            if os.getpid() == owner:
                shutdown(socket)

        # Both modules call the name from their own globals (clientserver imported it).
        java_gateway.quiet_shutdown = shutdown_in_owner
        clientserver.quiet_shutdown = shutdown_in_owner
        _installed = True
