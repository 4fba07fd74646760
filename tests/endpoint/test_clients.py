"""Real clients against a real `rsep serve` (the session's subprocess, waitress, no Spark):
SPARQLWrapper, rdflib's SPARQLStore/SPARQLUpdateStore and plain urllib for the Graph Store
Protocol. The server is shared by the session, so each test writes its own graphs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.dom.minidom import Document

import pytest
import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore, SPARQLUpdateStore
from SPARQLWrapper import CSV, JSON, POST, TURTLE, XML, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from tests.support.paths import REPO
from tests.support.servers import free_port

pytestmark = pytest.mark.e2e

EX = "http://example.org/"


@pytest.fixture
def graph(server_url: str) -> Iterator[str]:
    """A fresh graph IRI holding two triples, dropped afterwards."""
    iri = f"{EX}clients/{uuid.uuid4().hex}"
    data = f"<{EX}alice> <{EX}knows> <{EX}bob> .\n<{EX}alice> <{EX}age> 42 .\n".encode()
    status, _, _ = http(server_url, "PUT", f"store?graph={iri}", data, {"Content-Type": "text/turtle"})
    assert status == 201
    yield iri
    http(server_url, "DELETE", f"store?graph={iri}")


def http(
    base: str, method: str, path: str, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; HTTP errors are answers, not exceptions."""
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def wrapper(server_url: str, query: str, return_format: str) -> Any:
    client = SPARQLWrapper(server_url + "sparql")
    client.setQuery(query)
    client.setReturnFormat(return_format)
    return client.query().convert()


# --------------------------------------------------------------------------- SPARQLWrapper


def test_sparqlwrapper_select_json(server_url: str, graph: str) -> None:
    result = wrapper(server_url, f"SELECT ?o FROM <{graph}> WHERE {{ <{EX}alice> <{EX}knows> ?o }}", JSON)
    assert [row["o"]["value"] for row in result["results"]["bindings"]] == [f"{EX}bob"]


def test_sparqlwrapper_select_xml(server_url: str, graph: str) -> None:
    result = wrapper(server_url, f"SELECT ?o FROM <{graph}> WHERE {{ <{EX}alice> <{EX}knows> ?o }}", XML)
    assert isinstance(result, Document)
    assert [uri.firstChild.data for uri in result.getElementsByTagName("uri")] == [f"{EX}bob"]


def test_sparqlwrapper_select_csv(server_url: str, graph: str) -> None:
    result = wrapper(server_url, f"SELECT ?age FROM <{graph}> WHERE {{ ?s <{EX}age> ?age }}", CSV)
    assert result.decode().splitlines() == ["age", "42"]


@pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
def test_sparqlwrapper_construct(server_url: str, graph: str) -> None:
    query = f"CONSTRUCT {{ ?s <{EX}friendOf> ?o }} FROM <{graph}> WHERE {{ ?s <{EX}knows> ?o }}"
    result = wrapper(server_url, query, XML)  # RDF/XML, parsed by SPARQLWrapper into an rdflib Graph
    assert isinstance(result, rdflib.Graph)
    assert set(result) == {
        (rdflib.URIRef(f"{EX}alice"), rdflib.URIRef(f"{EX}friendOf"), rdflib.URIRef(f"{EX}bob"))
    }
    turtle = wrapper(server_url, query, TURTLE)
    assert len(rdflib.Graph().parse(data=turtle, format="turtle")) == 1


def test_sparqlwrapper_ask(server_url: str, graph: str) -> None:
    assert (
        wrapper(server_url, f"ASK {{ GRAPH <{graph}> {{ <{EX}alice> <{EX}age> 42 }} }}", JSON)["boolean"]
        is True
    )
    assert wrapper(server_url, f"ASK {{ GRAPH <{graph}> {{ <{EX}bob> ?p ?o }} }}", JSON)["boolean"] is False


def test_sparqlwrapper_update(server_url: str, graph: str) -> None:
    client = SPARQLWrapper(server_url + "sparql")
    client.setMethod(POST)
    client.setQuery(f"INSERT DATA {{ GRAPH <{graph}> {{ <{EX}bob> <{EX}knows> <{EX}carol> }} }}")
    client.query()
    assert wrapper(server_url, f"ASK {{ GRAPH <{graph}> {{ <{EX}bob> <{EX}knows> <{EX}carol> }} }}", JSON)[
        "boolean"
    ]


def test_sparqlwrapper_sees_syntax_errors_as_bad_requests(server_url: str) -> None:
    """SPARQLWrapper asking for JSON accepts nothing else, so the error comes as JSON too."""
    with pytest.raises(QueryBadFormed, match='"parameter": "query", "line": 1, "column": 11'):
        wrapper(server_url, "SELECT * {", JSON)


# --------------------------------------------------------------------------- rdflib


def test_rdflib_sparqlstore_query(server_url: str, graph: str) -> None:
    store = SPARQLStore(server_url + "sparql")
    rows = list(store.query(f"SELECT ?age WHERE {{ GRAPH <{graph}> {{ ?s <{EX}age> ?age }} }}"))
    assert [row[0].toPython() for row in rows] == [42]  # type: ignore[index]


def test_rdflib_graph_over_the_store(server_url: str, graph: str) -> None:
    """A graph named by its IRI: rdflib asks with default-graph-uri, writes with GRAPH."""
    store = SPARQLUpdateStore(server_url + "sparql", server_url + "sparql")
    remote = rdflib.Graph(store, identifier=rdflib.URIRef(graph))
    remote.add((rdflib.URIRef(f"{EX}carol"), rdflib.URIRef(f"{EX}age"), rdflib.Literal(7)))
    assert len(remote) == 3
    assert remote.value(rdflib.URIRef(f"{EX}carol"), rdflib.URIRef(f"{EX}age")) == rdflib.Literal(7)


def test_rdflib_sparqlupdatestore_update(server_url: str, graph: str) -> None:
    store = SPARQLUpdateStore(server_url + "sparql", server_url + "sparql")
    store.update(f"DELETE WHERE {{ GRAPH <{graph}> {{ <{EX}alice> <{EX}age> ?age }} }}")
    rows = list(store.query(f"SELECT ?s WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}"))
    assert len(rows) == 1


# --------------------------------------------------------------------------- Graph Store Protocol


def test_urllib_graph_store_round_trip(server_url: str) -> None:
    iri = f"{EX}gsp/{uuid.uuid4().hex}"
    turtle = {"Content-Type": "text/turtle; charset=utf-8"}
    assert http(server_url, "PUT", f"store?graph={iri}", b"<http://a> <http://b> 1 .", turtle)[0] == 201
    assert http(server_url, "POST", f"store?graph={iri}", b"<http://a> <http://b> 2 .", turtle)[0] == 204
    status, headers, body = http(
        server_url, "GET", f"store?graph={iri}", headers={"Accept": "application/n-triples"}
    )
    assert (status, headers["Content-Type"]) == (200, "application/n-triples")
    assert len(body.splitlines()) == 2
    assert http(server_url, "DELETE", f"store?graph={iri}")[0] == 204
    assert http(server_url, "GET", f"store?graph={iri}")[0] == 404


def test_urllib_bad_payload_is_located(server_url: str) -> None:
    status, _, body = http(
        server_url, "PUT", f"store?graph={EX}bad", b"<http://a> <http://b> .", {"Content-Type": "text/turtle"}
    )
    assert status == 400
    assert body.decode().startswith("body:1:")


# --------------------------------------------------------------------------- rsep serve itself


def test_serve_with_token_prints_its_url_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "rsep.endpoint.cli",
        "serve",
        "--port",
        str(port),
        "--data",
        str(tmp_path),
    ]
    process = subprocess.Popen(
        [*command, "--engine", "inprocess", "--token", "t0ken"], cwd=REPO, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        while line and "listening" not in line:  # warnings of other components may come first
            line = process.stderr.readline().decode()
        base = f"http://127.0.0.1:{port}/"
        assert f"listening on {base}" in line
        assert http(base, "GET", "sparql?query=ASK%7B%7D")[0] == 401
        status, _, body = http(
            base, "GET", "sparql?query=ASK%7B%7D", headers={"Authorization": "Bearer t0ken"}
        )
        assert (status, json.loads(body)["boolean"]) == (200, True)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
