"""/queries: register, list, read, delete; bad queries; restarts."""

from __future__ import annotations

import gc

from rsep.endpoint.app import create_app
from rsep.endpoint.engines import compile_registered
from tests.support.smart_grid import SMART_GRID, load_kb, smart_grid_events
from tests.support.streaming_endpoint import caught_up, config, nquads_of, service, shut_down, wait_for

QUERY = (SMART_GRID / "query.rq").read_text()
STREAMS = [
    "http://smartgrid.org/mainSource",
    "http://smartgrid.org/weather",
    "http://smartgrid.org/storageSource",
]


def register(client, text=QUERY, query_string="", **kwargs):
    url = "/queries" + (f"?{query_string}" if query_string else "")
    return client.post(url, data=text, content_type="application/sparql-query", **kwargs)


def ingest(client, events):
    for event in events:
        response = client.post(
            f"/streams?stream={event.stream}", data=nquads_of(event), content_type="application/n-quads"
        )
        assert response.status_code == 202, response.get_data(as_text=True)


def test_post_query_registers_it(app):
    response = register(app.test_client())
    assert response.status_code == 201
    body = response.json
    assert response.headers["Location"] == f"/queries/{body['id']}"
    assert body["iri"] == f"urn:rsep:query:{body['id']}"
    assert (body["dialect"], body["streams"], body["start"]) == ("spaseq", STREAMS, 0)
    assert service(app).registry.get(body["id"]).text == QUERY


def test_post_bad_query_reports_position(app):
    client = app.test_client()
    response = register(client, "SELECT ?x WHERE { SEQ (A; B) DEFINE GPM A ON S1 { ?x <urn:p> } }")
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("query:1:")
    as_json = register(client, "SELECT ?x\nWHERE { SEQ (A; }", headers={"Accept": "application/json"}).json
    assert (as_json["parameter"], as_json["line"]) == ("query", 2) and as_json["column"] > 1
    assert service(app).registry.all() == []


def test_post_with_a_policy_registers_it(app):
    response = register(app.test_client(), query_string="policy=chronological")
    assert response.status_code == 201
    (registered,) = service(app).registry.all()
    assert registered.options["policy"] == "chronological"


def test_a_match_limit_is_kept_with_the_registration_and_compiled_into_its_automaton(app):
    response = register(app.test_client(), query_string="match-limit=25")
    assert response.status_code == 201, response.get_data(as_text=True)
    (registered,) = service(app).registry.all()
    assert registered.options["match-limit"] == "25"
    assert compile_registered(registered).automaton.match_limit == 25
    for bad in ("0", "-3", "ten", "1e3"):
        refused = register(app.test_client(), query_string=f"match-limit={bad}")
        assert refused.status_code == 400 and refused.get_data(as_text=True).startswith("match-limit: ")


def test_post_unknown_parameter_values_name_the_parameter(app):
    client = app.test_client()
    assert register(client, query_string="policy=eager").get_data(as_text=True).startswith("policy: ")
    assert register(client, query_string="dialect=cql").get_data(as_text=True).startswith("dialect: ")
    assert register(client, query_string="from=-1").get_data(as_text=True).startswith("from: ")
    assert register(client, query_string="from=5").status_code == 400  # beyond the log's end


def test_an_unknown_parameter_is_refused_with_the_known_ones(app):
    client = app.test_client()
    misspelt = register(client, query_string="polcy=recent")
    assert (misspelt.status_code, misspelt.get_data(as_text=True)) == (
        400,
        "polcy: unknown parameter; POST /queries takes policy, dialect, from, entailment, base, match-limit "
        "(the query is the body, or a form's query field)\n",
    )
    in_a_form = client.post("/queries", data={"query": QUERY, "polcy": "recent"})
    assert in_a_form.get_data(as_text=True).startswith("polcy: unknown parameter")
    in_the_url = client.post("/queries?query=x", data={"query": QUERY})
    assert in_the_url.get_data(as_text=True).startswith("query: unknown parameter")
    assert service(app).registry.all() == []


def test_options_are_read_alike_from_the_url_and_a_form_body(app):
    client = app.test_client()
    bad = client.post("/queries", data={"query": QUERY, "from": "bogus"})
    assert bad.status_code == 400 and bad.get_data(as_text=True).startswith(
        "from: expected now or a log position"
    )
    twice = client.post("/queries?policy=recent", data={"query": QUERY, "policy": "chronological"})
    assert twice.get_data(as_text=True) == "policy: given 2 times; send it once\n"
    assert client.post("/queries", data={"query": QUERY, "policy": "chronological"}).status_code == 201
    (registered,) = service(app).registry.all()
    assert registered.options == {"policy": "chronological"}


def test_a_register_posted_to_sparql_reads_options_from_the_form_and_refuses_a_dataset(app):
    client = app.test_client()
    register_query = (
        "REGISTER QUERY q AS SELECT ?s FROM STREAM <http://ex.org/s> [RANGE 10s STEP 5s] WHERE { ?s ?p ?o }"
    )
    refused = {"from": "bogus", "default-graph-uri": "http://ex.org/g", "named-graph-uri": "http://ex.org/g"}
    for parameter, value in refused.items():
        params = {parameter: value}
        in_form = client.post("/sparql", data={"query": register_query, **params})
        in_url = client.post(
            "/sparql", query_string=params, data=register_query, content_type="application/sparql-query"
        )
        for response in (in_form, in_url):
            assert response.status_code == 400 and response.get_data(as_text=True).startswith(
                f"{parameter}: "
            )
    assert service(app).registry.all() == []
    response = client.post("/sparql", data={"query": register_query, "dialect": "c-sparql", "from": "0"})
    assert response.status_code == 201, response.get_data(as_text=True)
    (registered,) = service(app).registry.all()
    assert (registered.options, registered.start) == ({"dialect": "c-sparql"}, 0)


def test_a_form_query_that_is_not_utf8_is_400_naming_it(app):
    client = app.test_client()
    response = client.post(
        "/queries", data=b"query=SELECT%20%FF", content_type="application/x-www-form-urlencoded"
    )
    assert (response.status_code, response.get_data(as_text=True)) == (
        400,
        "query: not UTF-8 (its value, byte 7)\n",
    )
    assert service(app).registry.all() == []


def test_post_query_as_another_content_type_is_415(app):
    response = app.test_client().post("/queries", data=QUERY, content_type="text/plain")
    assert response.status_code == 415


def test_a_query_can_be_posted_as_a_form(app):
    response = app.test_client().post("/queries", data={"query": QUERY})
    assert response.status_code == 201


def test_list_and_read_report_status_counts_and_lag(make_app):
    app = make_app(RSEP_START_STREAMING=False)
    load_kb(app)
    client = app.test_client()
    query_id = register(client, query_string="policy=unrestricted").json["id"]
    ingest(client, smart_grid_events())
    listed = client.get("/queries").json["queries"]
    assert [q["id"] for q in listed] == [query_id]
    waiting = client.get(f"/queries/{query_id}").json
    assert (waiting["status"], waiting["position"], waiting["lag"], waiting["events"]) == ("waiting", 0, 8, 0)
    service(app).engine.drain()
    read = client.get(f"/queries/{query_id}").json
    assert read["text"] == QUERY and read["options"] == {"policy": "unrestricted"}
    assert (read["events"], read["matches"], read["position"], read["lag"]) == (8, 1, 8, 0)
    assert client.get("/queries/0000000000000000").status_code == 404


def test_delete_removes_the_query_and_its_checkpoint_but_keeps_its_graphs(app):
    load_kb(app)
    client = app.test_client()
    query_id = register(client).json["id"]
    ingest(client, smart_grid_events())
    wait_for(caught_up(app))
    data = service(app).checkpoints.root
    assert (data / query_id).exists()
    assert client.delete(f"/queries/{query_id}").status_code == 204
    assert not (data / query_id).exists()
    assert client.get(f"/queries/{query_id}").status_code == 404
    assert client.delete(f"/queries/{query_id}").status_code == 404
    assert service(app).sink.count(f"urn:rsep:query:{query_id}") == 1


def test_delete_with_purge_drops_the_match_graphs(app):
    load_kb(app)
    client = app.test_client()
    query_id = register(client).json["id"]
    ingest(client, smart_grid_events())
    wait_for(caught_up(app))
    assert client.delete(f"/queries/{query_id}?purge=true").status_code == 204
    assert service(app).sink.count(f"urn:rsep:query:{query_id}") == 0
    assert client.delete("/queries/0000000000000000?purge=maybe").status_code == 404


def test_registered_queries_survive_a_restart(make_app, data_dir):
    first = create_app(config(data_dir))
    load_kb(first)
    client = first.test_client()
    query_id = register(client).json["id"]
    events = smart_grid_events()
    ingest(client, events[:4])
    wait_for(caught_up(first))
    shut_down(first)
    del client, first
    gc.collect()  # closes the store, as the end of the process would
    second = make_app()
    client = second.test_client()
    assert [q["id"] for q in client.get("/queries").json["queries"]] == [query_id]
    ingest(client, events[4:])
    wait_for(caught_up(second))
    read = client.get(f"/queries/{query_id}").json
    assert (read["status"], read["events"], read["matches"]) == ("running", 8, 1)
