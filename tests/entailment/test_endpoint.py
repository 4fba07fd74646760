"""`POST /queries?entailment=rdfs` on the endpoint (Flask test client; the in-process engine, and
the Spark streaming engine for the event patterns' schema update): the option is validated,
persisted with the registration and used again after a restart, and a schema update through
SPARQL Update on /sparql between two events changes the answer: of an event pattern (SPAseq,
EP-SPARQL) for the events processed after it, never for events processed before; of a window
query (C-SPARQL, CQELS) from the next evaluation on, over whatever its windows hold then, events
that arrived before the update included; what was reported is never reported again."""

from __future__ import annotations

import gc

import pytest

from rsep.endpoint.app import create_app
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.event_reader import read_event_file
from tests.entailment.support import folder
from tests.support.streaming_endpoint import (
    OTHER,
    caught_up,
    config,
    nquads_of,
    read_back,
    service,
    shut_down,
    wait_for,
)
from tests.support.streaming_endpoint import ingest as ingest_events

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


# ---------------------------------------------------------------------- a schema update, per dialect

ORG = "http://example.org/org#"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
DIALECTS = {
    "ep-sparql": f"PREFIX : <{ORG}> SELECT ?x WHERE {{ {{ ?x a :Person }} SEQ {{ ?x :done :it }} }}",
    "c-sparql": f"""REGISTER QUERY q AS PREFIX : <{ORG}>
SELECT ?x FROM STREAM <{STREAM}> [RANGE {{range}} STEP 1s] WHERE {{{{ ?x a :Person }}}}""",
    "cqels": f"""PREFIX : <{ORG}>
SELECT ?x WHERE {{{{ STREAM <{STREAM}> [RANGE {{range}}] {{{{ ?x a :Person }}}} }}}}""",
}


def event(t: int, name: str, ntriples: str, stream: str = STREAM) -> GraphEvent:
    return GraphEvent(stream, f"<{ORG}{name}>", Timestamp(float(t), str(t), True), ntriples)


def became_manager(t: int, who: str) -> list[GraphEvent]:
    """`who a :Manager` at t, `who :done :it` at t + 1, and a heartbeat on a stream no query reads
    at t + 2, which makes every evaluation before it final."""
    return [
        event(t, f"{who}-m", f"<{ORG}{who}> <{TYPE}> <{ORG}Manager> .\n"),
        event(t + 1, f"{who}-d", f"<{ORG}{who}> <{ORG}done> <{ORG}it> .\n"),
        event(t + 2, f"{who}-tick", "", OTHER),
    ]


def run_with_an_update(app, text: str) -> str:
    """ann's events, the schema update (Manager ⊑ Employee), bob's events; the query's IRI. The
    query is registered after a heartbeat at -10, the log's time then: its t0, so a window query's
    windows up to (-10, 0] open at or after it and every close from the first event on is evaluated."""
    client = app.test_client()
    update(client, schema_v1())
    ingest_events(client, [event(-10, "start-tick", "", OTHER)])
    response = client.post("/queries?entailment=rdfs", data=text, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    ingest_events(client, became_manager(1, "ann"))
    wait_for(caught_up(app), timeout=120)
    update(client, (CASE / "update.ru").read_text(encoding="utf-8"))
    ingest_events(client, became_manager(5, "bob"))
    wait_for(caught_up(app), timeout=120)
    iri: str = response.json["iri"]
    return iri


def evaluations(app, iri: str) -> list[tuple[int, int, str]]:
    rows = read_back(app.test_client(), iri)
    return sorted((r["start"], r["end"], r["bindings"]["x"].split("#")[1][:-1]) for r in rows)


@pytest.mark.parametrize("engine", ["inprocess", pytest.param("spark", marks=pytest.mark.spark)])
def test_an_ep_sparql_sequence_matches_the_events_processed_after_a_schema_update(make_app, request, engine):
    if engine == "spark":
        request.getfixturevalue("spark")
    app = make_app(RSEP_ENGINE=engine, RSEP_MASTER="local[2]")
    iri = run_with_an_update(app, DIALECTS["ep-sparql"])
    assert matched(app.test_client(), iri) == [f"{ORG}bob"]  # ann a Manager was matched before it


@pytest.mark.parametrize("dialect", ["c-sparql", "cqels"])
def test_a_window_holding_one_event_answers_under_the_schema_of_its_evaluation(app, dialect):
    iri = run_with_an_update(app, DIALECTS[dialect].format(range="1s"))
    assert evaluations(app, iri) == [(4, 5, "bob")]  # ann's windows were evaluated before it


def test_c_sparql_evaluations_after_a_schema_update_read_it_for_the_events_their_windows_hold(app):
    """C-SPARQL evaluates at every step: the evaluations at 1 and 2 ran before the update (ann is no
    Person yet) and stay as they were; the evaluations from 3 on (up to 6, before bob's heartbeat
    at 7) ran after it, ann's windows too."""
    iri = run_with_an_update(app, DIALECTS["c-sparql"].format(range="10s"))
    ann = [(end - 10, end, "ann") for end in range(3, 7)]
    bob = [(end - 10, end, "bob") for end in range(5, 7)]
    assert evaluations(app, iri) == sorted(ann + bob)


def test_cqels_evaluations_after_a_schema_update_read_it_for_the_events_their_windows_hold(app):
    """CQELS evaluates when a window's content changes: at 1 and 2, before the update (nothing),
    and at 5 and 6, after it, with ann's events still in the window."""
    iri = run_with_an_update(app, DIALECTS["cqels"].format(range="10s"))
    assert evaluations(app, iri) == sorted((end - 10, end, who) for end in (5, 6) for who in ("ann", "bob"))
