"""The SPARQL 1.1 Service Description at GET /sparql, /query and /update without a query, read
back with pyoxigraph; --union-default-graph; CORS; /health and /metrics."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app

SD = "http://www.w3.org/ns/sparql-service-description#"
RSEP = "https://w3id.org/rsep#"
FORMATS = "http://www.w3.org/ns/formats/"


def make(tmp_path: Path, **config: object) -> FlaskClient:
    app: Flask = create_app(
        {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True, **config}
    )
    return app.test_client()


def described(client: FlaskClient, path: str, accept: str = "text/turtle") -> ox.Store:
    response = client.get(path, headers={"Accept": accept})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == accept
    store = ox.Store()
    store.load(response.get_data(), format=ox.RdfFormat.from_media_type(accept))
    return store


def objects(store: ox.Store, predicate: str) -> set[str]:
    return {q.object.value for q in store.quads_for_pattern(None, ox.NamedNode(predicate), None)}


@pytest.mark.parametrize(
    "accept", ["text/turtle", "application/n-triples", "application/rdf+xml", "application/ld+json"]
)
def test_get_sparql_without_a_query_describes_the_service(tmp_path: Path, accept: str) -> None:
    store = described(make(tmp_path), "/sparql", accept)
    assert objects(store, f"{SD}endpoint") == {"http://localhost/sparql"}
    assert objects(store, f"{SD}supportedLanguage") == {
        f"{SD}SPARQL10Query",
        f"{SD}SPARQL11Query",
        f"{SD}SPARQL11Update",
    }
    formats = objects(store, f"{SD}resultFormat")
    for name in ("SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV", "SPARQL_Results_TSV",
                 "Turtle", "N-Triples", "RDF_XML"):  # fmt: skip
        assert FORMATS + name in formats
    dialects = objects(store, f"{SD}languageExtension")
    assert dialects == {f"{RSEP}dialect-{name}" for name in ("spaseq", "ep-sparql", "c-sparql", "cqels")}
    assert objects(store, f"{RSEP}dialectName") == {"spaseq", "ep-sparql", "c-sparql", "cqels"}
    features = objects(store, f"{SD}feature")
    assert {
        f"{RSEP}ContinuousQueries",
        f"{RSEP}EventIngest",
        f"{RSEP}MatchPush",
        f"{RSEP}MatchResults",
    } <= features
    assert f"{SD}UnionDefaultGraph" not in features
    assert "http://localhost/queries/{id}/events" in objects(store, f"{RSEP}endpoint")


def test_query_and_update_routes_describe_their_own_language(tmp_path: Path) -> None:
    client = make(tmp_path)
    query = described(client, "/query")
    assert objects(query, f"{SD}supportedLanguage") == {f"{SD}SPARQL10Query", f"{SD}SPARQL11Query"}
    assert objects(query, f"{SD}endpoint") == {"http://localhost/query"}
    update = described(client, "/update")
    assert objects(update, f"{SD}supportedLanguage") == {f"{SD}SPARQL11Update"}
    assert objects(update, f"{SD}resultFormat") == set()


def test_a_post_without_a_query_is_still_a_bad_request(tmp_path: Path) -> None:
    client = make(tmp_path)
    response = client.post("/sparql", data="", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert client.get("/sparql", headers={"Accept": "text/csv"}).status_code == 406


def test_union_default_graph(tmp_path: Path) -> None:
    update = "INSERT DATA { GRAPH <http://example.org/g> { <http://a> <http://b> 1 } }"
    ask = {"query": "ASK { <http://a> <http://b> 1 }"}
    plain = make(tmp_path / "plain")
    assert plain.post("/update", data={"update": update}).status_code == 204
    assert (
        plain.get("/sparql", query_string=ask, headers={"Accept": "application/json"}).json["boolean"]
        is False
    )
    union = make(tmp_path / "union", RSEP_UNION_DEFAULT_GRAPH=True)
    assert union.post("/update", data={"update": update}).status_code == 204
    assert (
        union.get("/sparql", query_string=ask, headers={"Accept": "application/json"}).json["boolean"] is True
    )
    # a protocol dataset still decides
    scoped = {**ask, "default-graph-uri": "http://example.org/other"}
    assert (
        union.get("/query", query_string=scoped, headers={"Accept": "application/json"}).json["boolean"]
        is False
    )
    assert f"{SD}UnionDefaultGraph" in objects(described(union, "/sparql"), f"{SD}feature")


# --------------------------------------------------------------------------- CORS


def test_cors_is_off_by_default(tmp_path: Path) -> None:
    response = make(tmp_path).get("/sparql?query=ASK{}", headers={"Origin": "http://elsewhere"})
    assert "Access-Control-Allow-Origin" not in response.headers


def test_cors_allows_any_origin_and_answers_preflights_before_the_token(tmp_path: Path) -> None:
    client = make(tmp_path, RSEP_CORS=True, RSEP_TOKEN="t0ken")
    preflight = client.options("/queries", headers={
        "Origin": "http://elsewhere", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})  # fmt: skip
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert preflight.headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"].split(", ")
    answer = client.get(
        "/sparql?query=ASK{}", headers={"Origin": "http://elsewhere", "Accept": "application/json"}
    )
    assert answer.status_code == 401 and answer.headers["Access-Control-Allow-Origin"] == "*"
    headers = {"Origin": "http://elsewhere", "Accept": "application/json", "Authorization": "Bearer t0ken"}
    answer = client.get("/sparql?query=ASK{}", headers=headers)
    assert answer.status_code == 200 and answer.headers["Access-Control-Allow-Origin"] == "*"
    assert "Location" in answer.headers["Access-Control-Expose-Headers"]
