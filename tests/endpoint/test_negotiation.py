"""Content negotiation at /sparql, the full Accept matrix as a table: for each form of answer
(SELECT, ASK, CONSTRUCT) and Accept header, the status, the Content-Type and the format the body
is in. The rules (docs/endpoint.md, "Content negotiation"): the most specific match decides a
type's quality (the type named exactly, else one of its aliases named exactly, else the most
specific wildcard that matches the type itself, never an alias); equal qualities go to the
server's order; an answer an alias chose is labelled with that alias."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app
from rsep.endpoint.negotiation import Choice, choose, negotiate, parse_accept

EX = "http://example.org/"
QUERIES = {
    "select": f"SELECT ?o WHERE {{ <{EX}s> <{EX}p> ?o }}",
    "ask": f"ASK {{ <{EX}s> <{EX}p> ?o }}",
    "construct": f"CONSTRUCT WHERE {{ <{EX}s> <{EX}p> ?o }}",
}
JSON, XML = "application/sparql-results+json", "application/sparql-results+xml"
CSV, TSV = "text/csv", "text/tab-separated-values"
TURTLE, NT, RDFXML, JSONLD = (
    "text/turtle",
    "application/n-triples",
    "application/rdf+xml",
    "application/ld+json",
)

# (Accept, the format of the body or None for 406, the Content-Type when it is an alias)
RESULTS_MATRIX = [
    (None, JSON, None),
    ("*/*", JSON, None),
    ("text/csv, application/sparql-results+json", JSON, None),  # equal q: the server's order
    ("application/sparql-results+json, text/csv", JSON, None),
    ("text/tab-separated-values, text/csv", CSV, None),
    ("application/sparql-results+json, application/json;q=0", JSON, None),  # the type named decides
    ("application/sparql-results+xml, application/xml;q=0", XML, None),
    ("application/sparql-results+json;q=0.5, application/json", JSON, None),
    ("application/json;q=0, */*;q=0.1", XML, None),  # the alias named decides over a wildcard
    ("application/sparql-results+json;q=0, */*;q=0.1", XML, None),
    ("*/*, text/*", JSON, None),
    ("text/*;q=0, text/csv", CSV, None),
    ("text/*;q=0.3, text/tab-separated-values", TSV, None),
    ("application/ld+json, application/json;q=0", None, None),
    ("application/json", JSON, "application/json"),
    ("application/xml", XML, "application/xml"),
    ("application/xml;q=0, text/xml", XML, "text/xml"),
    ("text/xml;q=0.5, application/sparql-results+json;q=0.4", XML, "text/xml"),
    ("application/json;q=0.5, application/ld+json;q=0.5", JSON, "application/json"),
    ("text/*", CSV, None),  # not SPARQL XML as text/xml: a wildcard matches what we send
    ("application/*", JSON, None),
    ("application/*;q=0.2, text/csv;q=0.1", JSON, None),
    ("text/turtle;q=0.9, application/ld+json;q=0.9, */*;q=0.8", JSON, None),
    ("application/n-triples, text/turtle", None, None),
    ("text/html", None, None),
    ("*/*;q=0", None, None),
    ("nonsense", None, None),
]
GRAPH_MATRIX = [
    (None, TURTLE, None),
    ("*/*", TURTLE, None),
    ("text/csv, application/sparql-results+json", None, None),
    ("text/tab-separated-values, text/csv", None, None),
    ("application/sparql-results+json, application/json;q=0", None, None),
    ("application/sparql-results+xml, application/xml;q=0", None, None),
    ("application/json;q=0, */*;q=0.1", TURTLE, None),
    ("*/*, text/*", TURTLE, None),
    ("text/*;q=0, text/csv", None, None),
    ("application/ld+json, application/json;q=0", JSONLD, None),
    ("application/json", JSONLD, "application/json"),
    ("application/xml", RDFXML, "application/xml"),
    ("text/xml;q=0.5, application/sparql-results+json;q=0.4", RDFXML, "text/xml"),
    ("text/n3", TURTLE, "text/n3"),
    ("application/n-triples, text/turtle", TURTLE, None),
    ("application/n-triples;q=0.9, text/turtle;q=0.8", NT, None),
    ("application/json;q=0.5, application/ld+json;q=0.5", JSONLD, None),
    ("text/*", TURTLE, None),
    ("application/*", NT, None),  # not Turtle as application/turtle
    ("text/turtle;q=0.9, application/ld+json;q=0.9, */*;q=0.8", TURTLE, None),
    ("text/html", None, None),
]
MATRIX = [
    pytest.param(form, accept, body, label, id=f"{form}-{accept}")
    for form, table in (("select", RESULTS_MATRIX), ("ask", RESULTS_MATRIX), ("construct", GRAPH_MATRIX))
    for accept, body, label in table
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    data: Path = tmp_path_factory.mktemp("negotiation") / "data"
    app: Flask = create_app({"RSEP_DATA_DIR": str(data), "RSEP_START_STREAMING": False, "TESTING": True})
    client = app.test_client()
    update = f'INSERT DATA {{ <{EX}s> <{EX}p> "x" }}'
    assert client.post("/sparql", data=update, content_type="application/sparql-update").status_code == 204
    return client


@pytest.mark.parametrize(("form", "accept", "body", "label"), MATRIX)
def test_accept_matrix(
    client: FlaskClient, form: str, accept: str | None, body: str | None, label: str | None
) -> None:
    headers = {} if accept is None else {"Accept": accept}
    response = client.get("/sparql", query_string={"query": QUERIES[form]}, headers=headers)
    if body is None:
        assert response.status_code == 406, response.get_data(as_text=True)
        return
    assert (response.status_code, response.mimetype) == (200, label or body)
    assert response.headers["Vary"] == "Accept"
    _assert_body_is(response.data, body, form)


def _assert_body_is(data: bytes, media_type: str, form: str) -> None:
    """The body is in `media_type` (CSV, which pyoxigraph does not read back, by its text)."""
    if media_type == CSV:
        assert data.decode() == ("o\r\nx\r\n" if form == "select" else "true")
    elif form == "construct":
        triples = list(ox.parse(data, ox.RdfFormat.from_media_type(media_type)))
        assert [str(t.object) for t in triples] == ['"x"']
    else:
        answer = ox.parse_query_results(data, ox.QueryResultsFormat.from_media_type(media_type))
        assert bool(answer) if form == "ask" else [str(row["o"]) for row in answer] == ['"x"']


def test_a_graph_store_get_is_labelled_with_the_alias_that_chose_it(client: FlaskClient) -> None:
    response = client.get("/store?default", headers={"Accept": "application/xml"})
    assert (response.status_code, response.mimetype) == (200, "application/xml")
    assert [str(t.object) for t in ox.parse(response.data, ox.RdfFormat.RDF_XML)] == ['"x"']


def test_a_format_parameter_answers_under_the_canonical_name(client: FlaskClient) -> None:
    response = client.get("/sparql", query_string={"query": QUERIES["select"], "format": "application/json"})
    assert response.mimetype == JSON


def test_choose_returns_the_offer_and_the_name_that_chose_it() -> None:
    offers = [JSON, XML, CSV, TSV]
    assert choose(offers, parse_accept("text/*;q=0, text/csv, */*;q=0.1")) == Choice(CSV, CSV)
    assert choose(offers, parse_accept("application/json;q=0.9, text/xml")) == Choice(XML, "text/xml")
    assert choose([TSV], parse_accept("text/*;q=0, text/csv")) is None
    assert negotiate(offers, accept=f"{XML}, {JSON}", format_value=None) == Choice(JSON, JSON)
