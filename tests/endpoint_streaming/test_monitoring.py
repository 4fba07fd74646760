"""`/health` and Prometheus `/metrics` on the continuous-query endpoint: the numbers follow the
service (events in the log, per query its lag, events read, matches, open SSE clients)."""

from __future__ import annotations

from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from tests.support.events import QUERIES, synthetic_events
from tests.support.servers import expected
from tests.support.streaming_endpoint import caught_up, ingest, register, service, wait_for


def samples(app: Flask) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = app.test_client().get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    found = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_follow_ingest_queries_matches_and_listeners(app: Flask) -> None:
    client = app.test_client()
    assert samples(app)[("rsep_log_events_total", ())] == 0
    query_id = register(client, QUERIES["any"]).json["id"]
    events = synthetic_events(40)
    ingest(client, events)
    wait_for(caught_up(app))
    subscription = service(app).engine.listeners.subscribe(query_id)  # what GET .../events holds
    try:
        found = samples(app)
        labels = (("dialect", "spaseq"), ("query", query_id))
        assert found[("rsep_log_events_total", ())] == len(events)
        assert found[("rsep_query_lag_events", labels)] == 0
        assert found[("rsep_query_position", labels)] == len(events)
        assert found[("rsep_query_matches_total", labels)] == len(expected(query_id, events)) > 0
        assert found[("rsep_query_events_total", labels)] > 0
        assert found[("rsep_sse_clients", labels)] == 1
        assert found[("rsep_queries", (("status", "running"),))] == 1
        assert ("process_resident_memory_bytes", ()) in found
    finally:
        subscription.close()
    assert samples(app)[("rsep_sse_clients", labels)] == 0


def test_health_answers_with_the_log_and_the_failed_queries(app: Flask) -> None:
    client = app.test_client()
    register(client, QUERIES["any"])
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json == {"status": "ok", "log_position": 0, "queries": 1, "failed_queries": []}
