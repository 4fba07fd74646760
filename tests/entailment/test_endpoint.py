"""`POST /queries?entailment=rdfs` on the endpoint (Flask test client; the in-process engine, and
the Spark streaming engine for the schema update): the option is validated, persisted with the
registration and used again after a restart, and a schema update through SPARQL Update on /sparql
between two events changes the answer for the events processed after it, not before."""

from __future__ import annotations

import gc

import pytest

from rsep.endpoint.app import create_app
from rsep.plugin.store.rdfio import read_event_file
from tests.endpoint_streaming.conftest import caught_up, config, nquads_of, service, shut_down, wait_for
from tests.entailment.support import folder

CASE = folder("update")
STREAM = "http://example.org/org/people"
QUERY = (CASE / "query.rq").read_text(encoding="utf-8")
PREFIXES = """PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
PREFIX prov: <http://www.w3.org/ns/prov#>
"""


def register(client, entailment="rdfs"):
    response = client.post(
        f"/queries?entailment={entailment}", data=QUERY, content_type="application/sparql-query"
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json


def ingest(client, name, scope):
    for event in read_event_file(CASE / name, STREAM, scope=scope):
        response = client.post(
            f"/streams?stream={STREAM}", data=nquads_of(event), content_type="application/n-quads"
        )
        assert response.status_code == 202, response.get_data(as_text=True)


def update(client, text):
    response = client.post("/sparql", data=text, content_type="application/sparql-update")
    assert response.status_code in (200, 204), response.get_data(as_text=True)


def matched(client, query_iri):
    response = client.post(
        "/sparql",
        data=PREFIXES
        + f"""SELECT ?x WHERE {{
          GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> }}
          GRAPH ?g {{ [] rs:solution [ rs:binding [ rs:variable "x" ; rs:value ?x ] ] }} }}""",
        content_type="application/sparql-query",
        headers={"Accept": "application/sparql-results+json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(b["x"]["value"] for b in response.json["results"]["bindings"])


def schema_v1() -> str:
    return "INSERT DATA { <http://example.org/org#Employee> " \
        "<http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://example.org/org#Person> }"  # fmt: skip


def test_the_option_is_registered_and_shown_with_the_query(app):
    client = app.test_client()
    query = register(client)
    (registered,) = service(app).registry.all()
    assert registered.options == {"entailment": "rdfs"}
    assert client.get(f"/queries/{query['id']}").json["options"] == {"entailment": "rdfs"}


def test_an_unknown_regime_names_the_parameter(app):
    response = app.test_client().post(
        "/queries?entailment=owl", data=QUERY, content_type="application/sparql-query"
    )
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("entailment: unknown entailment regime 'owl'")
    assert service(app).registry.all() == []


@pytest.mark.parametrize("engine", ["inprocess", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_schema_update_between_two_events_changes_the_answer(make_app, request, engine):
    if engine == "spark":
        request.getfixturevalue("spark")  # the session-scoped SparkSession, which the engine joins
    app = make_app(RSEP_ENGINE=engine, RSEP_MASTER="local[2]")
    client = app.test_client()
    update(client, schema_v1())
    query = register(client)
    ingest(client, "first.trig", "a")  # ann a Manager: a Manager is not a Person yet
    wait_for(caught_up(app), timeout=120)
    assert matched(client, query["iri"]) == []
    update(client, (CASE / "update.ru").read_text(encoding="utf-8"))  # Manager ⊑ Employee
    ingest(client, "second.trig", "b")  # bob a Manager, processed under the new schema
    wait_for(caught_up(app), timeout=120)
    assert matched(client, query["iri"]) == ["http://example.org/org#bob"]


def test_without_the_option_the_same_events_match_nothing(app):
    client = app.test_client()
    update(client, schema_v1())
    update(client, (CASE / "update.ru").read_text(encoding="utf-8"))
    response = client.post("/queries", data=QUERY, content_type="application/sparql-query")
    iri = response.json["iri"]
    ingest(client, "first.trig", "a")
    ingest(client, "second.trig", "b")
    wait_for(caught_up(app))
    assert matched(client, iri) == []


def test_a_restarted_endpoint_compiles_the_query_with_its_option_again(make_app, data_dir):
    app = create_app(config(data_dir))
    client = app.test_client()
    update(client, schema_v1())
    update(client, (CASE / "update.ru").read_text(encoding="utf-8"))
    query = register(client)
    ingest(client, "first.trig", "a")
    wait_for(caught_up(app))
    shut_down(app)
    del client, app
    gc.collect()  # closes the store, as the end of the process would
    app = make_app()
    client = app.test_client()
    ingest(client, "second.trig", "b")
    wait_for(caught_up(app))
    assert matched(client, query["iri"]) == ["http://example.org/org#ann", "http://example.org/org#bob"]
