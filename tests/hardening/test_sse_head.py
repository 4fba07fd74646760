"""`HEAD /queries/{id}/events` (a link checker, an uptime probe) answers the stream's headers and
leaves nothing behind: the subscription was taken and, its stream never started, never closed,
so every HEAD stayed an open listener (`rsep_sse_clients`) collecting matches until the query
was deleted."""

from __future__ import annotations

import http.client
import json

from tests.support.events import QUERIES
from tests.support.servers import Server, http_exchange, until


def _listeners(server: Server, query_id: str) -> float:
    status, text = http_exchange(server, "GET", "/metrics")
    assert status == 200, text
    lines = [line for line in text.splitlines() if line.startswith("rsep_sse_clients") and query_id in line]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_head_of_an_event_stream_leaves_no_listener(server: Server) -> None:
    status, body = http_exchange(
        server, "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
    )
    assert status == 201, body
    query_id = json.loads(body)["id"]
    for _ in range(5):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            connection.request("HEAD", f"/queries/{query_id}/events")
            response = connection.getresponse()
            response.read()
            assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
        finally:
            connection.close()
    assert until(lambda: _listeners(server, query_id) == 0, 10), _listeners(server, query_id)
