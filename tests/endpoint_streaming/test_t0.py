"""Issue 16, item 4, on the endpoint: a window query evaluates only the windows that open at or
after its t0, the registration's time in stream time (the log's newest event time before the
query's start; the first event it reads on an empty log), kept with the registration; the same
windows as `rsep run --t0` over the events it read (docs/semantics.md, "Evaluation times")."""

from __future__ import annotations

import gc
import time

import pytest

from rsep.endpoint.app import create_app
from rsep.endpoint.run_command import RunRequest, StreamFile, run
from rsep.plugin.graph_events import GraphEvent, Timestamp
from tests.endpoint_streaming.support import at, ingest_each, logged
from tests.support.run_cases import parse_jsonl
from tests.support.servers import Server, post_events
from tests.support.streaming_endpoint import (
    OTHER,
    caught_up,
    config,
    number,
    read_back,
    register,
    service,
    shut_down,
    wait_for,
)

EX = "http://example.org/"
STREAM = f"{EX}s"
DERIVED = f"{EX}counts"
COUNT = f"""REGISTER QUERY q AS PREFIX : <{EX}>
SELECT (COUNT(*) AS ?n) FROM STREAM <{STREAM}> [RANGE 4s STEP 4s] WHERE {{ ?x :p ?y }}"""
PRODUCER = f"""REGISTER STREAM <{DERIVED}> AS PREFIX : <{EX}>
CONSTRUCT {{ :window :holds ?n }} FROM STREAM <{STREAM}> [RANGE 4s STEP 4s]
WHERE {{ {{ SELECT (COUNT(*) AS ?n) WHERE {{ ?x :p ?y }} }} }}"""


def seen(t: int) -> GraphEvent:
    return GraphEvent(
        STREAM, f"<{EX}e{t}>", Timestamp(float(t), str(t), True), f"<{EX}x{t}> <{EX}p> <{EX}y> .\n"
    )


def counts(lines: list[dict]) -> list[tuple[object, object, int]]:
    """(start, end, ?n) per evaluation, in time order."""
    found = [(line["start"], line["end"], int(line["bindings"]["n"].split('"')[1])) for line in lines]
    return sorted(found, key=lambda item: (item[1], item[0]))


def rsep_run(tmp_path, events: list[GraphEvent], t0: str | None = None) -> list[tuple[object, object, int]]:
    """`rsep run [--t0 T]` of COUNT over the events."""
    (tmp_path / "q.rq").write_text(COUNT, encoding="utf-8")
    (tmp_path / "s.nq").write_text("".join(e.nquads() for e in events), encoding="utf-8")
    request = RunRequest(tmp_path / "q.rq", [StreamFile(STREAM, tmp_path / "s.nq")], engine="inprocess")
    request.t0 = None if t0 is None else Timestamp.parse(t0)
    return counts(parse_jsonl(run(request).jsonl()))


ISSUE_CASE = [(c - 4, c, 4) for c in range(4, 33, 4)] + [(32, 36, 1)]
"""[RANGE 4s STEP 4s] over events at 0 .. 33 registered before them: (0, 4] to (32, 36]."""


@pytest.mark.e2e
def test_rsep_serve_evaluates_the_9_windows_of_the_issue_not_10(tmp_path):
    """A real `rsep serve`: the query registered on an empty log, events at 0 .. 33 and a later
    tick: its t0 is the first event, 0, and (-4, 0] is not evaluated."""
    server = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        status, query = server.request("POST", "/queries", COUNT.encode(), "application/sparql-query")
        assert status == 201, query
        post_events(server, [*(seen(t) for t in range(34)), at(100)])
        deadline = time.monotonic() + 60
        while (summary := server.get(f"/queries/{query['id']}"))["lag"] or summary["matches"] < 9:
            assert time.monotonic() < deadline, summary
            time.sleep(0.1)
        time.sleep(0.5)  # a tenth evaluation, if any, would be written by now
        rows = server.get(f"/queries/{query['id']}/results")["results"]["bindings"]
        found = sorted((number(r["start"]), number(r["end"]), int(r["n"]["value"])) for r in rows)
        assert found == ISSUE_CASE
        assert server.get(f"/queries/{query['id']}")["matches"] == 9
    finally:
        assert server.terminate() == 0
    assert rsep_run(tmp_path, [seen(t) for t in range(34)]) == ISSUE_CASE  # as rsep run does


def test_the_registration_time_is_the_log_s_newest_time_then(app, tmp_path):
    """Registered after a tick at 100, the query's t0 is 100: the event at 101, posted after it,
    is in its first window (100, 104], as `rsep run --t0 100` evaluates it. A query registered
    on the empty log before the tick starts at its first event read, the tick: the same here."""
    client = app.test_client()
    before = register(client, COUNT).json
    ingest_each(client, [at(100)])
    after = register(client, COUNT).json
    events = [seen(t) for t in range(101, 134)]
    ingest_each(client, [*events, at(200)])
    wait_for(caught_up(app))
    expected = [(c - 4, c, 4) for c in range(104, 133, 4)] + [(132, 136, 1)]
    assert counts(read_back(client, after["iri"])) == expected == rsep_run(tmp_path, events, "100")
    assert counts(read_back(client, before["iri"])) == expected
    # registered when the log's time was 101 (after the first car), the query starts there
    assert rsep_run(tmp_path, events)[0] == (104, 108, 4)


def test_a_query_reading_from_a_position_starts_at_the_time_of_the_event_before_it(app, tmp_path):
    client = app.test_client()
    events = [seen(t) for t in range(0, 20)]
    ingest_each(client, events)
    query = register(client, COUNT, **{"from": "10"}).json  # the events from 10 s on; t0 = 9
    ingest_each(client, [at(100)])
    wait_for(caught_up(app))
    expected = [(12, 16, 4), (16, 20, 3)]  # (8, 12] opened before t0: 10 to 12 are in no window
    assert counts(read_back(client, query["iri"])) == expected == rsep_run(tmp_path, events[10:], "9")
    # from=0 replays the whole log as rsep run does: t0 is the log's first event
    whole = register(client, COUNT, **{"from": "0"}).json
    ingest_each(client, [at(101)])
    wait_for(caught_up(app))
    assert counts(read_back(client, whole["iri"])) == rsep_run(tmp_path, events)


def test_the_registration_time_survives_a_restart(make_app, data_dir, tmp_path):
    app = create_app(config(data_dir))
    client = app.test_client()
    ingest_each(client, [at(100)])
    query = register(client, COUNT).json
    assert service(app).registry.get(query["id"]).t0 == 100
    shut_down(app)
    del client, app
    gc.collect()  # closes the store, as the end of the process would
    app = make_app()
    client = app.test_client()
    events = [seen(t) for t in range(101, 110)]
    ingest_each(client, [*events, at(200)])
    wait_for(caught_up(app))
    assert counts(read_back(client, query["iri"])) == rsep_run(tmp_path, events, "100")
    assert counts(read_back(client, query["iri"]))[0] == (100, 104, 4)


def test_a_producer_derives_from_the_windows_opening_after_its_registration(app):
    """REGISTER STREAM: registered after a tick at 2, the producer's first close is 8, (4, 8]:
    (0, 4] opened before it, though its events at 3 and 4 come after the registration."""
    client = app.test_client()
    ingest_each(client, [at(2)])
    assert register(client, PRODUCER).status_code == 201
    ingest_each(client, [seen(3), seen(4), seen(5), seen(9), at(20, OTHER)])
    assert [time for _, time, _ in logged(app, DERIVED)] == ["8", "12", "16"]
