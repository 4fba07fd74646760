"""Helpers of the endpoint_streaming tests: events posted one request at a time, registered queries,
the log's events of a stream."""

from __future__ import annotations

from rsep.plugin.graph_events import GraphEvent, Timestamp
from tests.support.congested_roads import EX
from tests.support.streaming_endpoint import OTHER, register, service


def post(client, event: GraphEvent, stream: str | None = None):
    return client.post(
        f"/streams?stream={stream or event.stream}", data=event.nquads(), content_type="application/n-quads"
    )


def ingest_each(client, events: list[GraphEvent]) -> list[dict]:
    """One request per event; the answers."""
    answers = []
    for event in events:
        response = post(client, event)
        assert response.status_code == 202, response.get_data(as_text=True)
        answers.append(response.json)
    return answers


def registered(client, text: str) -> dict:
    response = register(client, text)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json


def logged(app, stream: str) -> list[tuple[str, str, str]]:
    """The log's events of `stream`: (graph name, time, triples)."""
    log = service(app).log
    return [
        (r.event.name, r.event.time.lexical, r.event.ntriples) for r in log.read() if r.event.stream == stream
    ]


def at(t: int, stream: str = OTHER, name: str = "tick") -> GraphEvent:
    return GraphEvent(stream, f"<{EX}{name}{t}>", Timestamp(float(t), str(t), True), "")
