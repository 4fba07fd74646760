"""The W3C SPARQL 1.1 Graph Store HTTP Protocol tests (w3c-sparql11/graph-store-protocol) against
/store.

The suite's manifest.ttl includes one manifest per way of naming a graph; every entry describes
HTTP exchanges (method, `/gsp...` path, headers, body; expected status, Content-Type, and a body
that must be isomorphic to the graph returned) and runs as written against the Flask test client
on a fresh store, with `/gsp` mapped to our `/store`:

- indirect identification (`/gsp?graph=<IRI>`, `/gsp?default`) as `/store?graph=...`;
- direct identification (`/gsp/person/1.ttl`) as `/store/person/1.ttl`, a URL under /store/ that
  names its own graph;
- POST graph creation: POST /store with a graph creates one and returns its IRI in Location,
  which later requests of the test use.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.resources import resources
from tests.endpoint.w3c_manifests import Manifest, ProtocolTest, manifest_tests, run_exchanges
from tests.support.shared_data import shared_data

SUITE = ("w3c-sparql11", "graph-store-protocol")
MANIFESTS = [(*SUITE, "manifest-indirect.ttl"), (*SUITE, "manifest-direct.ttl")]
SKIPS: dict[str, str] = {}
"""Entries that cannot run here, with the reason (none today)."""


def included_manifests() -> list[str]:
    """The file names manifest.ttl includes (mf:include), to notice a manifest added upstream."""
    manifest = Manifest(shared_data(*SUITE, "manifest.ttl"))
    return sorted(path.name for path in manifest.includes())


@pytest.mark.parametrize("test", [test for parts in MANIFESTS for test in manifest_tests(*parts)])
def test_w3c_graph_store_protocol(client: FlaskClient, test: ProtocolTest) -> None:
    if test.name in SKIPS:
        pytest.skip(SKIPS[test.name])
    run_exchanges(client, test, prefix=("/gsp", "/store"))


def test_every_included_manifest_runs() -> None:
    assert included_manifests() == sorted(parts[-1] for parts in MANIFESTS)
    counts = [len(manifest_tests(*parts)) for parts in MANIFESTS]
    assert counts == [9, 4]  # manifest-direct.ttl also defines head_non_existing_direct, unlisted


# --------------------------------------------------------------------------- behaviour beyond the suite

EX = "http://example.org/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
TURTLE = "text/turtle"


def put(client: FlaskClient, graph: str, data: str, content_type: str = TURTLE) -> Any:
    return client.put("/store", query_string={"graph": graph}, data=data, content_type=content_type)


def graph_triples(client: FlaskClient, graph: str) -> set[str]:
    response = client.get(
        "/store", query_string={"graph": graph}, headers={"Accept": "application/n-triples"}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return set(response.get_data(as_text=True).splitlines())


def test_put_creates_then_replaces(client: FlaskClient) -> None:
    assert put(client, f"{EX}g", f"<{EX}a> <{EX}p> 1 .").status_code == 201
    assert put(client, f"{EX}g", f"<{EX}a> <{EX}p> 2 .").status_code == 204
    assert graph_triples(client, f"{EX}g") == {
        f'<{EX}a> <{EX}p> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .'
    }


def test_empty_put_creates_an_empty_graph(client: FlaskClient) -> None:
    assert put(client, f"{EX}g", "").status_code == 201
    assert graph_triples(client, f"{EX}g") == set()


def test_malformed_payload_is_400_with_position_and_changes_nothing(client: FlaskClient) -> None:
    put(client, f"{EX}g", f"<{EX}a> <{EX}p> 1 .")
    response = put(client, f"{EX}g", f"<{EX}a> <{EX}p> 2 .\n<{EX}b> <{EX}p> .")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("body:2:")
    assert graph_triples(client, f"{EX}g") == {
        f'<{EX}a> <{EX}p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .'
    }


def test_malformed_payload_error_is_json_for_json_clients(client: FlaskClient) -> None:
    response = client.put(
        "/store?default", data="<a> <b>", content_type=TURTLE, headers={"Accept": "application/json"}
    )
    error = json.loads(response.data)
    assert (error["status"], error["parameter"]) == (400, "body")
    assert error["line"] == 1


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("application/n-triples", f"<{EX}a> <{EX}p> <{EX}o> .\n"),
        ("application/rdf+xml", f'<rdf:RDF xmlns:rdf="{RDF}"><rdf:Description rdf:about="{EX}a">'
         f'<p xmlns="{EX}" rdf:resource="{EX}o"/></rdf:Description></rdf:RDF>'),
        ("application/ld+json", json.dumps({"@id": f"{EX}a", f"{EX}p": {"@id": f"{EX}o"}})),
        ("text/turtle; charset=utf-8", f"<{EX}a> <{EX}p> <{EX}o> ."),
    ],
)  # fmt: skip
def test_put_reads_every_graph_format(client: FlaskClient, content_type: str, data: str) -> None:
    assert put(client, f"{EX}g", data, content_type).status_code == 201
    assert graph_triples(client, f"{EX}g") == {f"<{EX}a> <{EX}p> <{EX}o> ."}


def test_unknown_content_type_is_415(client: FlaskClient) -> None:
    assert put(client, f"{EX}g", "a,b,c", "text/csv").status_code == 415


def test_missing_content_type_is_415(client: FlaskClient) -> None:
    assert client.put("/store?default", data=b"<a> <b> <c> .").status_code == 415


def test_content_type_is_checked_before_parameters(client: FlaskClient) -> None:
    assert client.put("/store?graph=relative", data="x", content_type="text/csv").status_code == 415


def test_dataset_format_for_one_graph_is_415(client: FlaskClient) -> None:
    response = put(client, f"{EX}g", f"<{EX}a> <{EX}p> <{EX}o> <{EX}h> .", "application/n-quads")
    assert response.status_code == 415


def test_relative_graph_iri_is_400(client: FlaskClient) -> None:
    response = put(client, "person/1", "")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("graph: not an absolute IRI")


def test_graph_and_default_together_is_400(client: FlaskClient) -> None:
    response = client.get(f"/store?default&graph={EX}g")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("default: ")


def test_put_and_delete_of_the_whole_store_are_400(client: FlaskClient) -> None:
    assert client.put("/store", data="", content_type=TURTLE).status_code == 400
    assert client.delete("/store").status_code == 400


def test_get_of_a_missing_graph_is_404(client: FlaskClient) -> None:
    assert client.get("/store", query_string={"graph": f"{EX}nothing"}).status_code == 404


def test_get_negotiates_the_graph_format(client: FlaskClient) -> None:
    put(client, f"{EX}g", f"<{EX}a> <{EX}p> <{EX}o> .")
    response = client.get(
        "/store", query_string={"graph": f"{EX}g"}, headers={"Accept": "application/rdf+xml"}
    )
    assert response.mimetype == "application/rdf+xml"
    assert response.headers["Vary"] == "Accept"
    refused = client.get("/store", query_string={"graph": f"{EX}g"}, headers={"Accept": "text/csv"})
    assert refused.status_code == 406


def test_delete_of_the_default_graph_empties_it(client: FlaskClient) -> None:
    client.put("/store?default", data=f"<{EX}a> <{EX}p> <{EX}o> .", content_type=TURTLE)
    assert client.delete("/store?default").status_code == 204
    assert client.get("/store?default", headers={"Accept": "application/n-triples"}).data == b""


def test_blank_nodes_of_two_posts_stay_apart(client: FlaskClient) -> None:
    for value in (1, 2):
        client.post("/store?default", data=f"_:x <{EX}p> {value} .", content_type=TURTLE)
    query = f"SELECT (COUNT(DISTINCT ?s) AS ?n) {{ ?s <{EX}p> ?o }}"
    response = client.get("/sparql", query_string={"query": query}, headers={"Accept": "text/csv"})
    assert response.get_data(as_text=True).splitlines()[1] == "2"


def test_post_of_a_dataset_to_the_store_merges_it(client: FlaskClient) -> None:
    trig = f"<{EX}a> <{EX}p> 1 . <{EX}g> {{ <{EX}b> <{EX}p> 2 }}"
    assert client.post("/store", data=trig, content_type="application/trig").status_code == 204
    dataset = client.get("/store", headers={"Accept": "application/n-quads"})
    assert dataset.mimetype == "application/n-quads"
    assert len(dataset.get_data(as_text=True).splitlines()) == 2


def test_get_of_the_store_defaults_to_trig(client: FlaskClient) -> None:
    assert client.get("/store").mimetype == "application/trig"


def test_post_of_a_graph_to_the_store_creates_a_graph_under_store(client: FlaskClient) -> None:
    response = client.post("/store", data=f"<{EX}a> <{EX}p> <{EX}o> .", content_type=TURTLE)
    assert response.status_code == 201
    location = response.headers["Location"]
    assert location.startswith("http://localhost/store/")
    direct = client.get(
        location.removeprefix("http://localhost"), headers={"Accept": "application/n-triples"}
    )
    assert direct.get_data(as_text=True).splitlines() == [f"<{EX}a> <{EX}p> <{EX}o> ."]


def test_multipart_post_part_without_rdf_type_is_415(client: FlaskClient) -> None:
    data = {"part": (io.BytesIO(b"a,b"), "part.csv", "text/csv")}
    response = client.post(f"/store?graph={EX}g", data=data, content_type="multipart/form-data")
    assert response.status_code == 415


def test_writes_refresh_the_knowledge_base(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        before = resources().kb.version
    put(client, f"{EX}g", "")
    client.post(f"/store?graph={EX}g", data="", content_type=TURTLE)
    client.delete(f"/store?graph={EX}g")
    with app.app_context():
        assert resources().kb.version == before + 3


def test_graph_store_and_sparql_see_the_same_store(client: FlaskClient) -> None:
    put(client, f"{EX}g", f"<{EX}a> <{EX}p> <{EX}o> .")
    query = f"ASK {{ GRAPH <{EX}g> {{ <{EX}a> <{EX}p> <{EX}o> }} }}"
    assert json.loads(client.get("/sparql", query_string={"query": query}).data)["boolean"] is True
