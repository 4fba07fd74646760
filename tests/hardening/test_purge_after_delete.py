"""`DELETE /queries/{id}?purge=true` drops a query's match graphs. The registration is removed
first (so that a crash leaves no query to replay) and the graphs one by one after it, so a crash
in the middle of a purge, or a DELETE without `purge` before, left graphs that no request could
drop any more: every later DELETE of the id was a 404. Now `?purge=true` of an id that is no
longer registered drops what is left of its graphs (204), and is a 404 only when there is none."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from tests.support.events import QUERIES, synthetic_events
from tests.support.servers import Server, http_exchange, post_events, until

EVENTS = synthetic_events(30)


def _graphs(server: Server, query_id: str) -> int:
    """The match graphs (with their metadata) the query left in the store."""
    query = ("SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { { GRAPH <urn:rsep:matches> { ?g ?p "
             f"<urn:rsep:query:{query_id}> }} }} UNION {{ GRAPH ?g {{ ?s ?q ?o }} "
             f"FILTER(STRSTARTS(STR(?g), 'urn:rsep:match:{query_id}:')) }} }}")  # fmt: skip
    rows = server.get("/sparql?" + urllib.parse.urlencode({"query": query}))["results"]["bindings"]
    return int(rows[0]["n"]["value"])


def test_purge_drops_what_a_query_deleted_before_left(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        status, body = server.request("POST", "/queries", QUERIES["any"].encode(), "application/sparql-query")
        assert status == 201
        query_id = body["id"]
        post_events(server, EVENTS)
        assert until(lambda: server.get(f"/queries/{query_id}")["position"] == len(EVENTS), 30)
        assert _graphs(server, query_id) > 0

        assert http_exchange(server, "DELETE", f"/queries/{query_id}")[0] == 204  # the graphs stay
        assert _graphs(server, query_id) > 0
        assert http_exchange(server, "DELETE", f"/queries/{query_id}")[0] == 404
        assert http_exchange(server, "DELETE", f"/queries/{query_id}?purge=true")[0] == 204
        assert _graphs(server, query_id) == 0
        assert http_exchange(server, "DELETE", f"/queries/{query_id}?purge=true")[0] == 404
        assert http_exchange(server, "DELETE", "/queries/0000000000000000?purge=true")[0] == 404
        assert http_exchange(server, "DELETE", "/queries/not%20an%20id?purge=true")[0] == 404
        assert http_exchange(server, "DELETE", "/queries/0000000000000000?purge=maybe")[0] == 404
    finally:
        server.terminate()
