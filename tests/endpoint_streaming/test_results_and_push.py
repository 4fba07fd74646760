"""Matches end to end: what `rsep run` prints is what the endpoint writes
(read back through /sparql) and pushes (SSE); after a crash, the rest of the
matches come exactly once."""

from __future__ import annotations

import gc
import json
import time

from rsep.endpoint.app import create_app
from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.plugin.service.match_graphs import match_iri
from rsep.plugin.service.runner import load_state
from tests.support.events import QUERIES, plan_of, reference, synthetic_events
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS, load_kb, smart_grid_events
from tests.support.streaming_endpoint import caught_up, config, nquads_of, service, wait_for

QUERY = (SMART_GRID / "query.rq").read_text()
RS = "PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>\n"
RSEP = "PREFIX rsep: <https://w3id.org/rsep#>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"


def cli_lines() -> list[dict]:
    request = RunRequest(
        SMART_GRID / "query.rq",
        [StreamFile(iri, path) for iri, path in SMART_GRID_STREAMS.items()],
        [KbFile(SMART_GRID / "kb.trig")],
        engine="inprocess",
    )
    return [json.loads(line) for line in run(request).jsonl().splitlines()]


def register(client, text=QUERY):
    response = client.post("/queries", data=text, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json


def ingest(client, events):
    for e in events:
        response = client.post(
            f"/streams?stream={e.stream}", data=nquads_of(e), content_type="application/n-quads"
        )
        assert response.status_code == 202, response.get_data(as_text=True)


def sparql(client, query):
    response = client.post(
        "/sparql", data=query, content_type="application/sparql-query",
        headers={"Accept": "application/sparql-results+json"},
    )  # fmt: skip
    assert response.status_code == 200, response.get_data(as_text=True)
    return [{k: v["value"] for k, v in b.items()} for b in response.json["results"]["bindings"]]


def graphs_of(client, query_iri):
    rows = sparql(
        client,
        RSEP + f"SELECT ?g WHERE {{ GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> }} }}",
    )
    return sorted(r["g"] for r in rows)


def test_matches_readable_through_sparql_are_what_rsep_run_prints(app):
    load_kb(app)
    client = app.test_client()
    query = register(client)
    ingest(client, smart_grid_events())
    wait_for(caught_up(app))
    (expected,) = cli_lines()
    (graph,) = graphs_of(client, query["iri"])
    bindings = sparql(
        client,
        RS
        + f"""SELECT ?name ?value WHERE {{ GRAPH <{graph}> {{
        [] a rs:ResultSet ; rs:solution [ rs:binding [ rs:variable ?name ; rs:value ?value ] ] }} }}""",
    )
    assert {b["name"]: b["value"] for b in bindings} == {
        name: term.strip("<>").split('"')[1] if term.startswith('"') else term.strip("<>")
        for name, term in expected["bindings"].items()
    }
    (meta,) = sparql(
        client,
        RSEP
        + f"""SELECT ?start ?end ?query WHERE {{ GRAPH <urn:rsep:matches> {{
        <{graph}> rsep:start ?start ; rsep:end ?end ; prov:wasGeneratedBy ?query }} }}""",
    )
    assert (meta["start"], meta["end"], meta["query"]) == (expected["start"], expected["end"], query["iri"])
    derived = sparql(
        client,
        RSEP + f"SELECT ?e WHERE {{ GRAPH <urn:rsep:matches> {{ <{graph}> prov:wasDerivedFrom ?e }} }}",
    )
    assert sorted(r["e"] for r in derived) == [f"http://smartgrid.org/{n}" for n in ("p1", "s1", "w1", "w2")]


def read_sse(response, want: int, timeout: float = 15.0) -> tuple[list[str], list[dict]]:
    """Chunks of an SSE response until `want` match events arrived."""
    chunks, matches = [], []
    deadline = time.monotonic() + timeout
    iterator = iter(response.response)
    while len(matches) < want:
        assert time.monotonic() < deadline, chunks
        chunk = next(iterator)
        chunk = chunk.decode() if isinstance(chunk, bytes) else chunk
        chunks.append(chunk)
        if chunk.startswith("event: match\n"):
            matches.append(json.loads(chunk.split("data: ", 1)[1]))
    return chunks, matches


def test_sse_delivers_each_match_as_it_is_written(app):
    load_kb(app)
    client = app.test_client()
    query = register(client)
    response = client.get(f"/queries/{query['id']}/events", buffered=False)
    try:
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        assert response.headers["Cache-Control"] == "no-cache"
        assert response.headers["X-Accel-Buffering"] == "no"
        ingest(client, smart_grid_events())
        chunks, (match,) = read_sse(response, 1)
        assert chunks[0] == f": matches of {query['iri']}\n\n"
        (expected,) = cli_lines()
        assert match == {**expected, "graph": graphs_of(client, query["iri"])[0]}
        heartbeat = next(iter(response.response))  # nothing more to say: a comment keeps the line open
        assert heartbeat in (b": heartbeat\n\n", ": heartbeat\n\n")
    finally:
        response.close()
    assert service(app).engine.listeners.count(query["id"]) == 0  # closing unsubscribes


def test_sse_for_an_unknown_query_is_404(app):
    assert app.test_client().get("/queries/0000000000000000/events").status_code == 404


def test_deleting_a_query_ends_its_event_streams(app):
    client = app.test_client()
    query = register(client)
    response = client.get(f"/queries/{query['id']}/events", buffered=False)
    assert client.delete(f"/queries/{query['id']}").status_code == 204
    chunks = [c for c in response.response]  # ends instead of waiting for matches
    assert chunks[0].startswith(b": matches of") or chunks[0].startswith(": matches of")
    response.close()


# --------------------------------------------------------------------------- crash and restart


def test_a_crashed_endpoint_resumes_and_finds_the_rest_exactly_once(data_dir, make_app):
    events = synthetic_events(40)
    first = create_app(config(data_dir, RSEP_START_STREAMING=False))
    client = first.test_client()
    query = register(client, QUERIES["any"])
    ingest(client, events[:14])
    service(first).engine.drain()
    early = graphs_of(client, query["iri"])
    ingest(client, events[14:25])
    service(first).engine.drain()
    before = graphs_of(client, query["iri"])
    assert len(before) > len(early) > 0  # the batch to be replayed found matches
    checkpoints = service(first).checkpoints
    latest = checkpoints.paths(query["id"])[-1]
    latest.write_bytes(latest.read_bytes()[:-10])  # the last checkpoint is torn
    assert load_state(checkpoints.load(query["id"])).position == 14  # so events 14-24 are replayed
    del client, first, checkpoints  # crash: no shutdown hook runs
    gc.collect()

    second = make_app(RSEP_START_STREAMING=False)
    client = second.test_client()
    listener = service(second).engine.listeners.subscribe(query["id"])
    service(second).engine.start()
    ingest(client, events[25:])
    wait_for(caught_up(second))
    after = graphs_of(client, query["iri"])

    log = list(service(second).log.read())
    expected = sorted({match_iri(query["id"], m) for m in reference(plan_of("any"), log)})
    assert after == expected and len(after) > len(before)
    pushed = []
    while (record := listener.get(timeout=0)) is not None:
        pushed.append(record["graph"])
    assert sorted(pushed) == sorted(set(after) - set(before))  # replayed graphs are not pushed again
    assert client.get(f"/queries/{query['id']}").json["matches"] == len(after)
