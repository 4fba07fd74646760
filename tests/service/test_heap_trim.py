"""The in-process engine hands freed heap back to the system at most once a minute, once it has
caught up (issue 15's soak: glibc kept what the batches freed, so RSS crept and did not come down
when idle)."""

from __future__ import annotations

import threading

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.service.heap_trim import HeapTrim, _malloc_trim
from tests.support.streaming_endpoint import OTHER, ingest, service


def test_at_most_once_an_interval():
    now = [0.0]
    calls: list[float] = []
    heap = HeapTrim(60.0, trim=lambda: calls.append(now[0]) or True, clock=lambda: now[0])
    assert not heap.maybe()
    now[0] = 59.9
    assert not heap.maybe()
    now[0] = 60.0
    assert heap.maybe()
    now[0] = 100.0
    assert not heap.maybe()
    now[0] = 121.0
    assert heap.maybe()
    assert calls == [60.0, 121.0]


def test_glibc_trims():
    trim = _malloc_trim()
    assert trim is not None  # the development machine and the Docker image run glibc
    trim()


def test_the_engine_trims_once_caught_up(app):
    trimmed = threading.Event()
    engine = service(app).engine
    engine.heap = HeapTrim(0.0, trim=lambda: trimmed.set() or True)
    event = GraphEvent(OTHER, "<urn:e1>", Timestamp(1.0, "1", True), "<urn:a> <urn:b> <urn:c> .\n")
    ingest(app.test_client(), [event])
    assert trimmed.wait(10)
