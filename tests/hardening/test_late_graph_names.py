"""`--late side` keeps each late event in a graph `urn:rsep:late:<n>` listed in `urn:rsep:late`. The
store is open to SPARQL Update, and `<n>` was the number of listed late events when the server
started: after an update removed a listing (or the whole listing graph) and a restart, the next
late event was written into an existing late event's graph, its triples and metadata mixed with
that one's. A late event now always gets a graph of its own."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest

from tests.support.servers import Server, http_exchange

STREAM = "urn:t:s1"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
NQUADS = "application/n-quads"
OPTIONS = ("--engine", "inprocess", "--late", "side")


def _post(server: Server, name: str, seconds: int) -> dict:
    event = f"<urn:t:{name}>"
    stamp = f'<http://www.w3.org/ns/prov#generatedAtTime> "{seconds}"^^<{XSD_INTEGER}>'
    body = f'{event} <urn:t:p> "{name}" {event} .\n{event} {stamp} .\n'
    status, text = http_exchange(server, "POST", f"/streams?stream={STREAM}", body.encode(), NQUADS)
    assert status == 202, text
    return json.loads(text)


def _late_graphs(server: Server) -> dict[str, set[str]]:
    """Each late event's graph: the events whose triples it holds."""
    query = ("SELECT ?g ?s WHERE { GRAPH ?g { ?s <urn:t:p> ?o } "
             "FILTER(STRSTARTS(STR(?g), 'urn:rsep:late:')) }")  # fmt: skip
    rows = server.get("/sparql?" + urllib.parse.urlencode({"query": query}))["results"]["bindings"]
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["g"]["value"], set()).add(row["s"]["value"])
    return found


def _update(server: Server, text: str) -> None:
    status, body = http_exchange(server, "POST", "/sparql", text.encode(), "application/sparql-update")
    assert status == 204, body


@pytest.mark.parametrize(
    "update",
    [
        "DELETE WHERE { GRAPH <urn:rsep:late> { <urn:rsep:late:0> ?p ?o } }",
        "DROP GRAPH <urn:rsep:late>",
        "DELETE WHERE { GRAPH <urn:rsep:late> { <urn:rsep:late:1> ?p ?o } }",
    ],
)
def test_a_late_event_gets_a_graph_of_its_own_after_its_listing_was_updated(tmp_path: Path, update: str):
    data, log = tmp_path / "data", tmp_path / "server.log"
    server = Server(data, log, options=OPTIONS)
    try:
        _post(server, "e1", 10)
        _post(server, "e2", 20)
        assert _post(server, "late1", 5)["late"] == ["urn:rsep:late:0"]
        assert _post(server, "late2", 6)["late"] == ["urn:rsep:late:1"]
        _update(server, update)
    finally:
        assert server.terminate() == 0
    server = Server(data, log, options=OPTIONS)
    try:
        kept = _post(server, "late3", 7)["late"]
        assert len(kept) == 1 and kept[0] not in ("urn:rsep:late:0", "urn:rsep:late:1")
        assert _late_graphs(server) == {
            "urn:rsep:late:0": {"urn:t:late1"},
            "urn:rsep:late:1": {"urn:t:late2"},
            kept[0]: {"urn:t:late3"},
        }
    finally:
        server.terminate()
