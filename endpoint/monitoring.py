"""`GET /health` and `GET /metrics` (Prometheus' text format, written by prometheus-client).

The metrics are read from the service when scraped (a collector, no counters kept beside the
engine), so they cannot drift from what `/queries` says: the events in the log (its rate is the
ingest rate: `rate(rsep_log_events_total[1m])`), per query its position, lag, events read,
matches and open SSE clients, and the process's own metrics (CPU, memory, file descriptors).
Each application has its own registry, so that several apps in one process (the tests) do not
share or clash.
"""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, Flask, Response, current_app, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rsep.endpoint.engines import EXTENSION, Streaming
from rsep.plugin import FAILED

bp = Blueprint("monitoring", __name__)

REGISTRY = "rsep.metrics"


class ServiceCollector(Collector):
    """The service's state as metrics, read at each scrape."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        service: Streaming | None = self.app.extensions.get(EXTENSION)
        if service is None:
            return
        head = service.log.next_position
        yield CounterMetricFamily(
            "rsep_log_events",
            "Positions in the event log (events ingested and derived, watermark marks)",
            head,
        )
        yield from _event_time(service)
        labels = ["query", "dialect"]
        queries = GaugeMetricFamily(
            "rsep_queries", "Registered continuous queries by status", labels=["status"]
        )
        lag = GaugeMetricFamily(
            "rsep_query_lag_events", "Events in the log the query has not read yet", labels=labels
        )
        position = GaugeMetricFamily(
            "rsep_query_position", "Log position the query has read up to", labels=labels
        )
        events = CounterMetricFamily("rsep_query_events", "Events the query has read", labels=labels)
        matches = CounterMetricFamily("rsep_query_matches", "Matches the query has found", labels=labels)
        clients = GaugeMetricFamily(
            "rsep_sse_clients", "Open Server-Sent Event streams of the query", labels=labels
        )
        statuses: dict[str, int] = {}
        for query in service.registry.all():
            progress = service.engine.progress(query.id)
            key = [query.id, query.dialect]
            clients.add_metric(key, service.engine.listeners.count(query.id))
            status = query.status if progress is None else progress.state
            statuses[status] = statuses.get(status, 0) + 1
            if progress is None:
                continue
            lag.add_metric(key, max(0, head - progress.position))
            position.add_metric(key, progress.position)
            events.add_metric(key, progress.events)
            matches.add_metric(key, progress.matches)
        for status, count in sorted(statuses.items()):
            queries.add_metric([status], count)
        yield from (queries, lag, position, events, matches, clients)


@bp.get("/health")
def health() -> Response:
    """200 while the store and the event log answer; the failed queries are listed (a query
    failing does not make the service unhealthy)."""
    service: Streaming = current_app.extensions[EXTENSION]
    failed = [q.id for q in service.registry.all() if _state(service, q.id, q.status) == FAILED]
    body = {"status": "ok", "log_position": service.log.next_position,
            "queries": len(service.registry.all()), "failed_queries": failed}  # fmt: skip
    return jsonify(body)


def _state(service: Streaming, query_id: str, registered: str) -> str:
    progress = service.engine.progress(query_id)
    return registered if progress is None else progress.state


def _event_time(service: Streaming) -> Iterator[Metric]:
    """Late events (refused or kept), and with a reorder buffer the events held and the watermark."""
    late = service.ingest.late
    counts = CounterMetricFamily("rsep_late_events", "Events older than the watermark", labels=["outcome"])
    counts.add_metric(["refused"], late.refused)
    counts.add_metric(["kept"], late.kept)
    yield counts
    buffer = service.ingest.buffer
    if buffer is not None:
        yield GaugeMetricFamily("rsep_held_events", "Events the reorder buffer holds", buffer.held)
        watermark = buffer.watermark_time()
        if watermark is not None:
            yield GaugeMetricFamily("rsep_watermark", "The watermark (seconds; epoch for xsd:dateTimes)",
                                    watermark.seconds)  # fmt: skip


@bp.get("/metrics")
def metrics() -> Response:
    registry: CollectorRegistry = current_app.extensions[REGISTRY]
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def init_app(app: Flask) -> None:
    registry = CollectorRegistry()
    registry.register(ServiceCollector(app))
    ProcessCollector(registry=registry)
    app.extensions[REGISTRY] = registry
    app.register_blueprint(bp)
