"""SPARQLWrapper's whole matrix against a real `rsep serve` (the session's subprocess): every query
form in every return format SPARQLWrapper offers for it, sent by GET, as a form and posted
directly, and updates as a form and posted directly; then rdflib's SPARQLStore and
SPARQLUpdateStore over /query and /update. SPARQLWrapper sends `format` twice for TSV, RDF/XML
and JSON-LD (a name and the media types of its Accept header), which rsep answers as Oxigraph
does instead of refusing."""

from __future__ import annotations

import csv
import io
import json
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any
from xml.dom.minidom import Document

import pytest
import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore, SPARQLUpdateStore
from SPARQLWrapper import (
    CSV,
    GET,
    JSON,
    JSONLD,
    N3,
    POST,
    POSTDIRECTLY,
    RDFXML,
    TSV,
    TURTLE,
    URLENCODED,
    XML,
    SPARQLWrapper,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Dataset.default_context is deprecated:DeprecationWarning"),
]

EX = "http://example.org/"
ALICE, KNOWS, AGE, BOB = (rdflib.URIRef(f"{EX}{name}") for name in ("alice", "knows", "age", "bob"))
WAYS = {"get": (GET, URLENCODED), "form": (POST, URLENCODED), "direct": (POST, POSTDIRECTLY)}
"""How SPARQLWrapper sends a request: (HTTP method, request method)."""


@pytest.fixture(scope="module")
def graph(server_url: str) -> Iterator[str]:
    """A graph of two triples for the module's queries (which only read it)."""
    iri = f"{EX}matrix/{uuid.uuid4().hex}"
    data = f"<{EX}alice> <{EX}knows> <{EX}bob> .\n<{EX}alice> <{EX}age> 42 .\n".encode()
    request = urllib.request.Request(
        f"{server_url}store?graph={iri}", data=data, method="PUT", headers={"Content-Type": "text/turtle"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
    yield iri
    urllib.request.urlopen(urllib.request.Request(f"{server_url}store?graph={iri}", method="DELETE"))


def ask(endpoint: str, query: str, return_format: str, way: str) -> tuple[Any, str]:
    """SPARQLWrapper's converted result and the Content-Type it came with."""
    client = SPARQLWrapper(endpoint)
    client.setQuery(query)
    client.setReturnFormat(return_format)
    method, request_method = WAYS[way]
    client.setMethod(method)
    client.setRequestMethod(request_method)
    result = client.query()
    return result.convert(), result.info()["content-type"]


# --------------------------------------------------------------------------- SELECT and ASK


def select_rows(result: Any, return_format: str) -> list[dict[str, str]]:
    """The rows of a converted SELECT result, as {variable: lexical value}."""
    if return_format == JSON:
        return [{k: v["value"] for k, v in row.items()} for row in result["results"]["bindings"]]
    if return_format == XML:
        assert isinstance(result, Document)
        rows = []
        for solution in result.getElementsByTagName("result"):
            row = {}
            for binding in solution.getElementsByTagName("binding"):
                term = next(node for node in binding.childNodes if node.nodeType == node.ELEMENT_NODE)
                row[binding.getAttribute("name")] = term.firstChild.data
            rows.append(row)
        return rows
    text = result.decode("utf-8")
    if return_format == CSV:
        return list(csv.DictReader(io.StringIO(text)))
    header, *lines = text.splitlines()  # TSV: terms in Turtle syntax
    names = [name.lstrip("?") for name in header.split("\t")]
    return [dict(zip(names, (_tsv_value(cell) for cell in line.split("\t")), strict=True)) for line in lines]


def _tsv_value(cell: str) -> str:
    node = rdflib.util.from_n3(cell)
    return str(node)


SELECT_TYPES = {
    JSON: "application/sparql-results+json",
    XML: "application/sparql-results+xml",
    CSV: "text/csv",
    TSV: "text/tab-separated-values",
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("return_format", SELECT_TYPES)
@pytest.mark.parametrize("route", ["sparql", "query"])
def test_select(server_url: str, graph: str, route: str, return_format: str, way: str) -> None:
    query = f"SELECT ?o ?age FROM <{graph}> WHERE {{ <{EX}alice> <{EX}knows> ?o ; <{EX}age> ?age }}"
    result, content_type = ask(server_url + route, query, return_format, way)
    assert content_type.split(";")[0] == SELECT_TYPES[return_format]
    assert select_rows(result, return_format) == [{"o": f"{EX}bob", "age": "42"}]


def ask_value(result: Any, return_format: str) -> bool:
    if return_format == JSON:
        return bool(result["boolean"])
    if return_format == XML:
        return result.getElementsByTagName("boolean")[0].firstChild.data == "true"
    return result.decode("utf-8").strip().splitlines()[-1] == "true"  # CSV/TSV: Oxigraph's rendering


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("return_format", SELECT_TYPES)
def test_ask(server_url: str, graph: str, return_format: str, way: str) -> None:
    for query, expected in (
        (f"ASK {{ GRAPH <{graph}> {{ <{EX}alice> <{EX}age> 42 }} }}", True),
        (f"ASK {{ GRAPH <{graph}> {{ <{EX}bob> ?p ?o }} }}", False),
    ):
        result, content_type = ask(server_url + "sparql", query, return_format, way)
        assert content_type.split(";")[0] == SELECT_TYPES[return_format]
        assert ask_value(result, return_format) is expected


# --------------------------------------------------------------------------- CONSTRUCT and DESCRIBE

GRAPH_TYPES = {
    TURTLE: ("text/turtle",),
    N3: ("text/turtle", "text/n3", "text/rdf+n3"),  # Turtle is N3
    RDFXML: ("application/rdf+xml",),
    XML: ("application/rdf+xml",),
    JSONLD: ("application/ld+json",),
}


def as_graph(result: Any, return_format: str) -> rdflib.Graph:
    """SPARQLWrapper gives RDF/XML as an rdflib graph, the other formats as bytes."""
    if isinstance(result, rdflib.Graph):
        return result
    syntax = {TURTLE: "turtle", N3: "n3", JSONLD: "json-ld"}[return_format]
    return rdflib.Graph().parse(data=result, format=syntax)


GRAPH_QUERIES = {
    "construct": ("sparql", "CONSTRUCT {{ ?s <{EX}friendOf> ?o }} FROM <{graph}> "
                            "WHERE {{ ?s <{EX}knows> ?o }}", {(ALICE, rdflib.URIRef(f"{EX}friendOf"), BOB)}),
    "describe": ("query", "DESCRIBE <{EX}alice> FROM <{graph}>",
                 {(ALICE, KNOWS, BOB), (ALICE, AGE, rdflib.Literal(42))}),
}  # fmt: skip
"""Per form: the route it goes to, the query (a template), and the triples it answers."""


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("return_format", GRAPH_TYPES)
@pytest.mark.parametrize("form", GRAPH_QUERIES)
def test_construct_and_describe(server_url: str, graph: str, form: str, return_format: str, way: str) -> None:
    route, template, triples = GRAPH_QUERIES[form]
    result, content_type = ask(server_url + route, template.format(EX=EX, graph=graph), return_format, way)
    assert content_type.split(";")[0] in GRAPH_TYPES[return_format]
    assert set(as_graph(result, return_format)) == triples


@pytest.mark.parametrize("way", WAYS)
def test_construct_as_n_triples(server_url: str, graph: str, way: str) -> None:
    """SPARQLWrapper has no N-Triples return format: the client asks by content negotiation only."""
    client = SPARQLWrapper(server_url + "sparql")
    pattern = f"<{EX}alice> <{EX}knows> ?o"
    client.setQuery(f"CONSTRUCT {{ {pattern} }} WHERE {{ GRAPH <{graph}> {{ {pattern} }} }}")
    client.setOnlyConneg(True)
    client.addCustomHttpHeader("Accept", "application/n-triples")
    method, request_method = WAYS[way]
    client.setMethod(method)
    client.setRequestMethod(request_method)
    response = client.query().response
    assert response.headers["Content-Type"] == "application/n-triples"
    body = response.read().decode("utf-8")
    assert body == f"<{EX}alice> <{EX}knows> <{EX}bob> .\n"


# --------------------------------------------------------------------------- updates


@pytest.mark.parametrize("request_method", [URLENCODED, POSTDIRECTLY])
@pytest.mark.parametrize("route", ["sparql", "update"])
def test_update(server_url: str, route: str, request_method: str) -> None:
    iri = f"{EX}matrix/update/{uuid.uuid4().hex}"
    client = SPARQLWrapper(server_url + route)
    client.setMethod(POST)
    client.setRequestMethod(request_method)
    client.setQuery(f"INSERT DATA {{ GRAPH <{iri}> {{ <{EX}bob> <{EX}knows> <{EX}carol> }} }}")
    assert client.query().response.status == 204
    result, _ = ask(server_url + "sparql", f"ASK {{ GRAPH <{iri}> {{ ?s ?p ?o }} }}", JSON, "get")
    assert result["boolean"] is True
    client.setQuery(f"DROP GRAPH <{iri}>")
    client.query()
    result, _ = ask(server_url + "sparql", f"ASK {{ GRAPH <{iri}> {{ ?s ?p ?o }} }}", JSON, "get")
    assert result["boolean"] is False


# --------------------------------------------------------------------------- rdflib


def test_rdflib_sparqlstore_over_query_and_update_routes(server_url: str) -> None:
    iri = rdflib.URIRef(f"{EX}matrix/rdflib/{uuid.uuid4().hex}")
    store = SPARQLUpdateStore(server_url + "query", server_url + "update")
    remote = rdflib.Graph(store, identifier=iri)
    remote.add((ALICE, AGE, rdflib.Literal(42)))
    remote.add((ALICE, KNOWS, BOB))
    assert len(remote) == 2
    query = f"SELECT ?age WHERE {{ GRAPH <{iri}> {{ ?s <{AGE}> ?age }} }}"
    rows = list(SPARQLStore(server_url + "query").query(query))
    assert [row[0].toPython() for row in rows] == [42]  # type: ignore[index]
    assert set(remote.triples((None, KNOWS, None))) == {(ALICE, KNOWS, BOB)}
    remote.remove((ALICE, KNOWS, None))
    assert len(remote) == 1
    store.update(f"DROP GRAPH <{iri}>")
    assert len(remote) == 0


def test_repeated_format_values_are_alternatives(server_url: str, graph: str) -> None:
    """What SPARQLWrapper sends for TSV, by hand: both values name TSV; values that name different
    formats answer with the first one available (CSV), as a list of alternatives."""
    query = urllib.parse.quote(f"SELECT ?age FROM <{graph}> WHERE {{ ?s <{EX}age> ?age }}")
    for formats, expected in (
        ("format=tsv&format=text/tab-separated-values", "text/tab-separated-values"),
        ("format=csv&format=json", "text/csv"),
        ("format=&format=json", "application/sparql-results+json"),
    ):
        with urllib.request.urlopen(f"{server_url}sparql?query={query}&{formats}", timeout=30) as response:
            assert response.headers["Content-Type"].split(";")[0] == expected
            body = response.read().decode()
        if expected.endswith("json"):
            assert json.loads(body)["results"]["bindings"][0]["age"]["value"] == "42"
        else:
            assert body.splitlines()[1] == "42"
