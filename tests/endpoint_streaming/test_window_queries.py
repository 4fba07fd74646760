"""Window queries (C-SPARQL, CQELS) on the endpoint: registered, run continuously by the in-process
engine, one graph per evaluation, read back with SPARQL equal to what `rsep run` prints, resumed
after a restart without writing a graph twice (the Spark engine's refusal: test_queries.py)."""

from __future__ import annotations

import gc
import json
import shutil

import pytest

from rsep.endpoint.app import create_app
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.event_reader import read_event_file
from tests.support.paths import REPO
from tests.support.run_cases import Case, load_cases, output
from tests.support.streaming_endpoint import (
    OTHER,
    caught_up,
    config,
    evaluation_graphs,
    ingest,
    later_event,
    ordered,
    read_back,
    register,
    register_case,
    registration_tick,
    shut_down,
    wait_for,
)

CSPARQL = {case.name: case for case in load_cases(REPO / "tests" / "csparql" / "fixtures")}
CQELS = {case.name: case for case in load_cases(REPO / "tests" / "cqels" / "fixtures")}
WINDOW_QUERY = """REGISTER QUERY q AS SELECT (COUNT(?s) AS ?n)
FROM STREAM <http://ex.org/s> [RANGE 10s STEP 5s] WHERE { ?s ?p ?o }"""


def load_case_kb(app, case: Case) -> None:
    kb = app.extensions["rsep"].kb
    for graph, file in case.kb.items():
        kb.load(case.folder / file, graph=graph or None)


def case_events(case: Case) -> list[GraphEvent]:
    events = [
        e
        for index, (iri, file) in enumerate(case.streams.items())
        for e in read_event_file(case.folder / file, iri, scope=f"s{index}")
    ]
    return sorted(events, key=lambda e: e.time.seconds)


@pytest.mark.parametrize(
    "case",
    [CSPARQL["aggregates-per-district"], CSPARQL["count-window"], CSPARQL["two-steps"], CQELS["range-slide"]],
    ids=str,
)
def test_evaluations_read_back_with_sparql_are_what_rsep_run_prints(app, case):
    load_case_kb(app, case)
    client = app.test_client()
    response = register_case(client, case)
    assert response.status_code == 201, response.get_data(as_text=True)
    query = response.json
    events = case_events(case)
    ingest(client, [*events, later_event(events)])
    wait_for(caught_up(app))
    expected = output(case.request())
    assert read_back(client, query["iri"]) == ordered(expected)
    times = {json.dumps([r["start"], r["end"]]) for r in expected}
    assert len(evaluation_graphs(client, query["iri"])) == len(times)  # one graph per evaluation
    summary = client.get(f"/queries/{query['id']}").json
    assert summary["matches"] == len(times)
    assert summary["events"] == len(events)


def test_a_window_query_waits_for_a_later_event_before_reporting_an_evaluation(app):
    case = CSPARQL["count-window"]
    client = app.test_client()
    query = register_case(client, case).json
    events = case_events(case)
    ingest(client, events)
    wait_for(caught_up(app))
    last = max(e.time.seconds for e in events)
    expected = [r for r in output(case.request()) if r["end"] < last]
    assert read_back(client, query["iri"]) == ordered(expected)


def test_a_restarted_endpoint_resumes_window_queries_without_writing_a_graph_twice(make_app, data_dir):
    case = CSPARQL["aggregates-per-district"]
    events = case_events(case)
    half = len(events) // 2
    app = create_app(config(data_dir))
    load_case_kb(app, case)
    client = app.test_client()
    query = register_case(client, case).json
    ingest(client, events[:half])
    wait_for(caught_up(app))
    before = evaluation_graphs(client, query["iri"])
    assert before
    shut_down(app)
    del client, app
    gc.collect()  # closes the store, as the end of the process would
    app = create_app(config(data_dir))
    client = app.test_client()
    ingest(client, events[half:])
    wait_for(caught_up(app))
    middle = evaluation_graphs(client, query["iri"])
    assert set(before) < set(middle)
    shut_down(app)
    del client, app
    gc.collect()
    shutil.rmtree(data_dir / "checkpoints" / query["id"])  # lost: the query replays from its registration
    app = make_app()
    client = app.test_client()
    ingest(client, [later_event(events)])
    wait_for(caught_up(app))
    assert read_back(client, query["iri"]) == ordered(output(case.request()))
    graphs = evaluation_graphs(client, query["iri"])
    assert set(middle) <= set(graphs)
    assert len(graphs) == client.get(f"/queries/{query['id']}").json["matches"]


def test_a_window_query_with_a_policy_is_refused(app):
    response = register(app.test_client(), WINDOW_QUERY, policy="chronological")
    assert response.status_code == 400
    assert "policy applies to event patterns, not to window queries" in response.get_data(as_text=True)


def test_a_csparql_register_posted_to_sparql_registers_as_post_queries_does(app):
    case = CSPARQL["aggregates-per-district"]
    text = (case.folder / "query.rq").read_text(encoding="utf-8")
    assert "REGISTER QUERY" in text
    load_case_kb(app, case)
    client = app.test_client()
    ingest(client, [registration_tick(case.t0)] if case.t0 is not None else [])
    response = client.post("/sparql", data=text, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    query = response.json
    assert response.headers["Location"] == f"/queries/{query['id']}"
    assert query["dialect"] == "c-sparql"
    assert [q["id"] for q in client.get("/queries").json["queries"]] == [query["id"]]
    events = case_events(case)
    ingest(client, [*events, later_event(events)])
    wait_for(caught_up(app))
    assert read_back(client, query["iri"]) == ordered(output(case.request()))
    as_get = client.get("/sparql", query_string={"query": text})
    assert as_get.status_code == 400
    assert "a REGISTER query changes the service: send it with POST" in as_get.get_data(as_text=True)
    assert len(client.get("/queries").json["queries"]) == 1


@pytest.mark.parametrize("write", ["sparql-update", "graph-store"])
def test_a_write_of_the_static_data_applies_from_the_next_evaluation(app, write):
    """A SPARQL Update, or a Graph Store POST to the named graph (which once reached the window
    store only when the default graph changed), between two evaluations."""
    client = app.test_client()
    ex = "http://example.org/"

    def update(text: str) -> None:
        if write == "sparql-update":
            body = f"PREFIX : <{ex}> INSERT DATA {{ GRAPH <{ex}static> {{ {text} }} }}"
            response = client.post("/sparql", data=body, content_type="application/sparql-update")
        else:
            turtle = f"@prefix : <{ex}> . {text} ."
            response = client.post("/store", query_string={"graph": f"{ex}static"}, data=turtle,
                                   content_type="text/turtle")  # fmt: skip
        assert response.status_code in (200, 201, 204), response.get_data(as_text=True)

    def at(t: int, name: str, stream: str = f"{ex}s") -> GraphEvent:
        triples = f"<{ex}a> <{ex}on> <{ex}r> .\n<{ex}b> <{ex}on> <{ex}r> .\n" if stream != OTHER else ""
        return GraphEvent(stream, f"<{ex}{name}>", Timestamp(float(t), str(t), True), triples)

    update(":a a :Car")
    text = f"""REGISTER QUERY cars AS PREFIX : <{ex}>
SELECT ?x FROM <{ex}static> FROM STREAM <{ex}s> [RANGE 1s STEP 1s] WHERE {{ ?x :on ?r ; a :Car }}"""
    ingest(client, [at(0, "tick0", OTHER)])  # registered at 0: the window (0, 1] opens at t0
    query = register(client, text).json
    ingest(client, [at(1, "e1"), at(5, "tick1", OTHER)])
    wait_for(caught_up(app))
    update(":b a :Car")  # between the evaluations at 1 and at 6
    ingest(client, [at(6, "e2"), at(10, "tick2", OTHER)])
    wait_for(caught_up(app))
    rows = read_back(client, query["iri"])
    assert [(r["end"], r["bindings"]["x"]) for r in rows] == [
        (1, f"<{ex}a>"),
        (6, f"<{ex}a>"),
        (6, f"<{ex}b>"),
    ]


@pytest.mark.spark
def test_on_the_spark_engine_window_queries_run_in_process_next_to_it(spark, make_app, data_dir):
    """`rsep serve`'s default engine takes every dialect: event patterns on Spark, window
    queries on an in-process engine beside it (SplitEngine), also after a restart."""
    from rsep.plugin.service.split import SplitEngine

    case = CSPARQL["aggregates-per-district"]
    events = case_events(case)
    half = len(events) // 2
    app = create_app(config(data_dir, RSEP_ENGINE="spark", RSEP_MASTER="local[2]"))
    engine = app.extensions["rsep.streaming"].engine
    assert isinstance(engine, SplitEngine)
    load_case_kb(app, case)
    client = app.test_client()
    response = register_case(client, case)
    assert response.status_code == 201, response.get_data(as_text=True)
    query = response.json
    assert engine.windows.progress(query["id"]) is not None
    assert engine.events.progress(query["id"]) is None
    ingest(client, events[:half])
    wait_for(caught_up(app))
    shut_down(app)
    del client, app, engine
    gc.collect()
    app = make_app(RSEP_ENGINE="spark", RSEP_MASTER="local[2]")
    engine = app.extensions["rsep.streaming"].engine
    assert engine.events.progress(query["id"]) is None  # Spark did not take it up
    client = app.test_client()
    ingest(client, [*events[half:], later_event(events)])
    wait_for(caught_up(app))
    assert read_back(client, query["iri"]) == ordered(output(case.request()))
    assert client.get(f"/queries/{query['id']}").json["status"] == "running"


def test_a_cqels_cep_sequence_before_an_update_joins_the_new_static_data_with_its_own_interval(app):
    """CQELS-CEP eq. (17) labels D [t1, t] with t1 its last change; the endpoint gives an update
    no stream time, so a sequence whose events all came before the update still joins what the
    update added, at every evaluation made after it (3 and 4 are final only once 4 and the later
    tick arrive); read back with the windows' bounds (-7, 3] and (-6, 4]."""
    client = app.test_client()
    ex = "http://example.org/"
    body = f"PREFIX : <{ex}> INSERT DATA {{ GRAPH <{ex}static> {{ :v1 a :Subway }} }}"

    def at(t: int, name: str, triple: str) -> GraphEvent:
        return GraphEvent(f"{ex}s", f"<{ex}{name}>", Timestamp(float(t), str(t), True), triple)

    text = f"""PREFIX : <{ex}>
SELECT ?v FROM <{ex}static> FROM NAMED WINDOW :W ON <{ex}s> [RANGE 10s]
WHERE {{ WINDOW :W {{ SEQ ({{?v :delayAt ?s}}, {{?v :delayAt ?s}}) }} ?v a :Subway . }}"""
    query = register(client, text, base=ex).json
    delay = f"<{ex}v1> <{ex}delayAt> <{ex}stop> .\n"
    ingest(client, [at(1, "d1", delay), at(2, "d2", delay), at(3, "tick1", f"<{ex}x> <{ex}p> <{ex}y> .\n")])
    wait_for(caught_up(app))
    assert read_back(client, query["iri"]) == []  # v1 is no subway yet
    response = client.post("/sparql", data=body, content_type="application/sparql-update")
    assert response.status_code in (200, 204), response.get_data(as_text=True)
    ingest(client, [at(4, "tick2", f"<{ex}x> <{ex}p> <{ex}z> .\n"), later_event([at(4, "t", "")])])
    wait_for(caught_up(app))
    rows = read_back(client, query["iri"])
    assert rows == [{"start": s, "end": s + 10, "bindings": {"v": f"<{ex}v1>"}} for s in (-7, -6)]
