"""Event time on the endpoint (docs/endpoint.md, "Event time"): `--max-lateness` accepts events
out of order and releases them sorted, so every dialect's answers equal an in-order ingest of the
same events; late events are refused naming the watermark, or kept in <urn:rsep:late>; an idle
timeout reports the newest closes without a heartbeat; held events survive a crash."""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from flask import Flask

from rsep.endpoint.app import create_app
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.vocabulary import WATERMARK_STREAM
from tests.endpoint_streaming.support import post
from tests.support.paths import REPO
from tests.support.streaming_endpoint import OTHER, caught_up, config, register, service, shut_down, wait_for

EXAMPLES = sorted(path for path in (REPO / "examples").iterdir() if path.is_dir())
NUMBERS = "http://example.org/numbers"


class Clock:
    """The reorder buffer's processing time, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def clocked(app: Flask) -> Clock:
    clock = Clock()
    buffer = service(app).ingest.buffer
    assert buffer is not None
    buffer.clock = clock
    return clock


def release(app: Flask) -> None:
    ingest = service(app).ingest
    with ingest.lock:
        ingest.release()


def n(t: float, name: str, stream: str = NUMBERS) -> GraphEvent:
    return GraphEvent(stream, f"<http://example.org/{name}>", Timestamp(t, repr(t), True), "")


def client_events(app: Flask) -> list[str]:
    return [r.event.name for r in service(app).log.read() if r.event.stream != WATERMARK_STREAM]


# --------------------------------------------------------------------------- the examples, every dialect


def example_events(folder: Path) -> list[GraphEvent]:
    manifest = json.loads((folder / "manifest.json").read_text())
    files = {**manifest["streams"], **manifest.get("then", {})}
    events = [
        e
        for index, (iri, name) in enumerate(files.items())
        for e in read_event_file(folder / name, iri, scope=f"x{index}")
    ]
    return sorted(events, key=lambda e: e.time.seconds)


def load_kb(client, folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    for graph, name in manifest.get("kb", {}).items():
        data = (folder / name).read_bytes()
        media = "application/trig" if name.endswith(".trig") else "text/turtle"
        url = f"/store?graph={graph}" if graph else "/store?default"
        if name.endswith(".trig"):
            url = "/store"
        response = client.post(url, data=data, content_type=media)
        assert response.status_code in (200, 201, 204), response.get_data(as_text=True)


def answers(app: Flask, folder: Path, events: list[GraphEvent], finish: Callable[[], None]) -> list[dict]:
    client = app.test_client()
    load_kb(client, folder)
    query = register(client, (folder / "query.rq").read_text()).json
    for event in events:
        response = post(client, event)
        assert response.status_code == 202, response.get_data(as_text=True)
    finish()
    wait_for(caught_up(app))
    rows = client.get(f"/queries/{query['id']}/results").json["results"]["bindings"]
    kept = [{k: v for k, v in row.items() if k not in ("match", "detected")} for row in rows]  # per app
    return sorted(kept, key=lambda row: json.dumps(row, sort_keys=True))


def heartbeat_after(events: list[GraphEvent]) -> GraphEvent:
    last = events[-1].time
    return GraphEvent(
        OTHER, "<http://example.org/heartbeat>", Timestamp.at(last.seconds + 86_400, last.numeric), ""
    )


def within(events: list[GraphEvent], lateness: float, seed: int) -> list[GraphEvent]:
    """A random arrival order in which each event comes at most `lateness` after its time."""
    rng = random.Random(seed)
    delayed = [(e.time.seconds + rng.uniform(0, lateness), i) for i, e in enumerate(events)]
    return [events[i] for _, i in sorted(delayed)]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda folder: folder.name)
def test_every_dialect_answers_out_of_order_arrivals_as_the_sorted_stream(
    folder: Path, seed: int, tmp_path: Path
) -> None:
    events = example_events(folder)
    times = [e.time.seconds for e in events]
    lateness = max((b - a for a, b in pairwise(times)), default=1.0) * 2 or 1.0
    shuffled = within(events, lateness, seed)
    assert shuffled != events or len(events) < 3
    heartbeat = heartbeat_after(events)

    in_order = create_app(config(tmp_path / "in-order"))
    try:
        expected = answers(in_order, folder, [*events, heartbeat], lambda: None)
    finally:
        shut_down(in_order)

    buffered = create_app(config(tmp_path / "buffered", RSEP_MAX_LATENESS=lateness, RSEP_IDLE_TIMEOUT=5.0))
    try:
        clock = clocked(buffered)

        def finish() -> None:
            post(buffered.test_client(), heartbeat)
            clock.now += 10  # every stream silent past the idle timeout: all released
            release(buffered)
            assert service(buffered).ingest.buffer.held == 0  # type: ignore[union-attr]

        got = answers(buffered, folder, [*shuffled], finish)
    finally:
        shut_down(buffered)
    assert expected, "the example answers something"
    assert got == expected


# --------------------------------------------------------------------------- late events


def test_out_of_order_events_within_the_lateness_are_logged_sorted(make_app) -> None:
    app = make_app(RSEP_MAX_LATENESS=3.0)
    client = app.test_client()
    answer = post(client, n(10, "a")).json
    assert answer["accepted"] == 1 and answer["held"] == 1 and answer["watermark"] == 7
    for event in (n(8, "b"), n(12, "c"), n(9, "d"), n(11, "e"), n(9, "f")):
        response = post(client, event)
        assert response.status_code == 202, response.get_data(as_text=True)
    assert client_events(app) == ["<http://example.org/b>"]  # W = 9: 9, 9, 10, 11 and 12 held
    post(client, n(30, "g"))
    names = ["b", "d", "f", "a", "e", "c"]  # ties (9) in arrival order
    assert client_events(app) == [f"<http://example.org/{name}>" for name in names]
    times = [r.event.time.seconds for r in service(app).log.read()]
    assert times == sorted(times)


def test_a_late_event_is_refused_naming_the_watermark_and_counted(make_app) -> None:
    app = make_app(RSEP_MAX_LATENESS=5.0)
    client = app.test_client()
    first = n(10, "a").nquads()
    response = client.post(
        f"/streams?stream={NUMBERS}&max-lateness=PT2S", data=first, content_type="application/n-quads"
    )
    assert response.status_code == 202 and response.json["watermark"] == 8  # this stream's lateness: 2 s
    both = n(9, "fine").nquads() + n(7, "late").nquads()
    response = client.post(f"/streams?stream={NUMBERS}", data=both, content_type="application/n-quads")
    assert response.status_code == 400
    message = response.get_data(as_text=True)
    assert "<http://example.org/late> at 7 is older than the watermark 8" in message
    assert service(app).ingest.buffer.held == 1  # type: ignore[union-attr]  # nothing of it stored
    assert client.get("/queries").json["ingest"] == {
        "late_refused": 1,
        "late_kept": 0,
        "watermark": 8,
        "held": 1,
    }
    assert 'rsep_late_events_total{outcome="refused"} 1.0' in client.get("/metrics").get_data(as_text=True)


def test_late_side_keeps_late_events_in_a_graph_sparql_reads(make_app) -> None:
    app = make_app(RSEP_MAX_LATENESS=1.0, RSEP_LATE="side")
    client = app.test_client()
    post(client, n(10, "a"))
    late = GraphEvent(NUMBERS, "<http://example.org/late>", Timestamp(3.0, "3", True),
                      "<http://example.org/s> <http://example.org/p> <http://example.org/o> .\n")  # fmt: skip
    background = app.extensions["rsep"].kb.data_version
    answer = post(client, late).json
    assert answer["accepted"] == 0 and answer["late"] == ["urn:rsep:late:0"]
    # rsep's output, not background data: window queries do not copy the store again for it
    assert app.extensions["rsep"].kb.data_version == background
    query = """PREFIX rsep: <https://w3id.org/rsep#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?g ?name ?t ?w ?o WHERE {
  GRAPH <urn:rsep:late> { ?g a rsep:LateEvent ; rsep:stream <http://example.org/numbers> ;
                          rsep:postedAs ?name ;
                          prov:generatedAtTime ?t ; rsep:watermark ?w }
  GRAPH ?g { <http://example.org/s> <http://example.org/p> ?o }
}"""
    response = client.post(
        "/sparql", data={"query": query}, headers={"Accept": "application/sparql-results+json"}
    )
    rows = [{k: v["value"] for k, v in row.items()} for row in response.json["results"]["bindings"]]
    assert rows == [{"g": "urn:rsep:late:0", "name": "http://example.org/late", "t": "3", "w": "9",
                     "o": "http://example.org/o"}]  # fmt: skip
    assert client.get("/queries").json["ingest"]["late_kept"] == 1
    assert client_events(app) == []


@pytest.mark.parametrize(
    ("options", "given", "said"),
    [
        ({}, "5", "--max-lateness"),
        ({"RSEP_MAX_LATENESS": 1.0}, "soon", "max-lateness"),
        ({"RSEP_MAX_LATENESS": 1.0}, "%D9%A1", "max-lateness"),
        ({"RSEP_MAX_LATENESS": 1.0}, "PT%D9%A1S", "max-lateness"),
        ({"RSEP_MAX_LATENESS": 1.0}, "1_000", "max-lateness"),
    ],
    ids=["without a policy", "not a duration", "an Arabic-Indic digit", "one in a duration", "an underscore"],
)
def test_a_per_request_lateness_is_refused_without_a_policy_or_a_duration(
    make_app, options, given, said
) -> None:
    app = make_app(**options)
    response = app.test_client().post(
        f"/streams?stream={NUMBERS}&max-lateness={given}",
        data=n(1, "a").nquads(),
        content_type="application/n-quads",
    )
    assert response.status_code == 400 and said in response.get_data(as_text=True)
    assert client_events(app) == []


def test_clients_do_not_post_to_the_watermark_stream(make_app) -> None:
    app = make_app(RSEP_MAX_LATENESS=1.0)
    response = post(app.test_client(), n(1, "a", WATERMARK_STREAM))
    assert response.status_code == 400 and "rsep's own streams" in response.get_data(as_text=True)


# --------------------------------------------------------------------------- idle streams


WINDOW = """REGISTER QUERY counts AS
PREFIX ex: <http://example.org/>
SELECT (COUNT(?s) AS ?n)
FROM STREAM <http://example.org/numbers> [RANGE 4s STEP 4s]
WHERE { ?s ex:p ?o }"""


def counted(t: float, name: str) -> GraphEvent:
    triple = f"<http://example.org/{name}s> <http://example.org/p> <http://example.org/o> .\n"
    return GraphEvent(NUMBERS, f"<http://example.org/{name}>", Timestamp(t, repr(t), True), triple)


def test_an_idle_timeout_reports_the_newest_window_close_without_a_heartbeat(make_app) -> None:
    app = make_app(RSEP_MAX_LATENESS=1.0, RSEP_IDLE_TIMEOUT=3.0)
    clock = clocked(app)
    client = app.test_client()
    # the stream's first event, an empty one at 0, is the query's t0 (registered on an empty log,
    # the buffer holding it): the window (0, 4] opens at t0 (docs/semantics.md, "Evaluation times")
    tick = GraphEvent(NUMBERS, "<http://example.org/tick0>", Timestamp(0.0, "0", True), "")
    assert post(client, tick).status_code == 202
    query = register(client, WINDOW).json
    for t in (1, 2, 5, 6, 7):
        assert post(client, counted(t, f"e{t}")).status_code == 202
    wait_for(caught_up(app))

    def closes() -> list[str]:
        rows = client.get(f"/queries/{query['id']}/results").json["results"]["bindings"]
        return sorted(row["n"]["value"] for row in rows)

    assert closes() == ["2"]  # the close at 4; 8 waits: W = 6
    clock.now = 2.0
    release(app)
    assert closes() == ["2"]  # silent 2 s: under the timeout
    clock.now = 4.5  # silent 4.5 s: W = 7 + 1.5 = 8.5, past the close at 8
    release(app)
    wait_for(caught_up(app))
    assert closes() == ["2", "3"]


# --------------------------------------------------------------------------- crashes


def test_held_events_survive_a_crash_and_are_released_once(data_dir: Path, make_app) -> None:
    first = create_app(config(data_dir, RSEP_MAX_LATENESS=5.0, RSEP_START_STREAMING=False))
    client = first.test_client()
    for t in (10, 6, 12, 9):
        post(client, n(t, f"e{t}"))
    assert client_events(first) == ["<http://example.org/e6>"]  # W = 7
    del client, first  # as kill -9 after the 202s: no shutdown hook runs
    gc.collect()
    second = make_app(RSEP_MAX_LATENESS=5.0)
    assert service(second).ingest.buffer.held == 3  # type: ignore[union-attr]
    post(second.test_client(), n(20, "e20"))
    assert client_events(second) == [f"<http://example.org/e{t}>" for t in (6, 9, 10, 12)]


def test_a_restart_without_a_policy_releases_what_was_held(data_dir: Path, make_app) -> None:
    first = create_app(config(data_dir, RSEP_MAX_LATENESS=5.0))
    client = first.test_client()
    for t in (10, 6, 12):
        post(client, n(t, f"e{t}"))
    shut_down(first)
    del client, first
    gc.collect()
    second = make_app()
    assert service(second).ingest.buffer is None
    assert client_events(second) == [f"<http://example.org/e{t}>" for t in (6, 10, 12)]
    assert post(second.test_client(), n(11, "e11")).status_code == 400  # in order again, after 12
