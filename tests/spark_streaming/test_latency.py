"""Ingest-to-visible latency of the Spark engine at a steady rate: measured and
printed, never asserted (timings depend on the machine). Skipped unless
RSEP_LATENCY_SECONDS is set (e.g. 60; RSEP_LATENCY_RATE is events/s, default
5); run pytest with -s to see the report:

    RSEP_LATENCY_SECONDS=60 pytest tests/spark_streaming/test_latency.py -s
"""

from __future__ import annotations

import os
import statistics
import threading
import time

import pytest

from tests.service.support import QUERIES, event
from tests.spark_streaming.conftest import wait_for

MEASURE = "RSEP_LATENCY_SECONDS"
pytestmark = [pytest.mark.spark, pytest.mark.skipif(not os.environ.get(MEASURE), reason=f"set {MEASURE}")]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def test_ingest_to_visible_latency_at_a_steady_rate(make_node, kb):
    seconds = float(os.environ[MEASURE])
    rate = float(os.environ.get("RSEP_LATENCY_RATE", "5"))
    trigger = float(os.environ.get("RSEP_LATENCY_TRIGGER", "0.1"))  # the engine's default
    node = make_node(trigger_interval=trigger)
    node.engine.start()
    query = node.register(QUERIES["strict"])  # SEQ (A, C): every (a, c) pair below is one match
    subscription = node.engine.listeners.subscribe(query.id)
    node.ingest([event(0, "warm-a", val=0), event(1, "warm-c", kind="c", val=1)])
    assert subscription.get(timeout=120) is not None  # the first batch starts the Python workers
    ingested: dict[str, float] = {}
    visible: dict[str, float] = {}

    def collect() -> None:
        while (record := subscription.get(timeout=30)) is not None:
            visible[record["graph"]] = time.monotonic()

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    count = int(seconds * rate)
    names: dict[int, str] = {}
    begin = time.monotonic()
    for i in range(count):
        due = begin + i / rate
        time.sleep(max(0.0, due - time.monotonic()))
        t = 10 + i
        kind = "a" if i % 2 == 0 else "c"
        node.ingest([event(t, f"e{i}", kind=kind, val=i)])  # c's value is above its a's: a match
        if kind == "c":
            names[i] = f"urn:t:e{i}"
            ingested[f"urn:t:e{i}"] = time.monotonic()
    wait_for(lambda: len(visible) >= len(names), 120)
    batches = node.engine.progress(query.id)
    by_event = {}
    for iri, at in visible.items():
        quads = [q for q in _graph_metadata(kb, iri) if "wasDerivedFrom" in q]
        last = max(quads, key=lambda q: int(q.split("urn:t:e")[1].split(">")[0]))
        by_event[last.split()[2][1:-1]] = at
    latencies = [by_event[name] - ingested[name] for name in ingested]
    report = (
        f"\nSpark engine, local[2], trigger {trigger:g} s, {rate:g} events/s for {seconds:g} s: "
        f"{len(latencies)} matches, "
        f"ingest-to-visible p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"p90 {percentile(latencies, 0.9) * 1000:.0f} ms, p99 {percentile(latencies, 0.99) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms (position {batches.position})"
    )
    print(report)
    assert len(latencies) == len(names)


def _graph_metadata(kb, iri: str) -> list[str]:
    import pyoxigraph as ox

    pattern = kb.store.quads_for_pattern(ox.NamedNode(iri), None, None, ox.NamedNode("urn:rsep:matches"))
    return [str(q) for q in pattern]
