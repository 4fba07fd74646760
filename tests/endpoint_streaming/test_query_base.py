"""`POST /queries?base=IRI`: the query's relative IRIs resolve against it where the text has no
BASE, as with `rsep run --base`. CityBench's CQELS Q5 names its graph `<culturalevents>`: without
a base it is a 400 at that IRI, with one it registers, reads the graph named by the resolved IRI
and answers what `rsep run --base` prints; the base is kept with the registration, so the query
compiles the same after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.citybench import Repository, convert, stream_iri
from rsep.endpoint.engines import compile_registered, is_window_registration
from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.windows.window_plan import WindowPlan
from tests.support.citybench import CULTURAL_EVENTS, END, START, TRAFFIC, citybench, q5_row, sensor_repository
from tests.support.run_cases import output
from tests.support.streaming_endpoint import OTHER, caught_up, ordered, read_back, register, service, wait_for

pytestmark = pytest.mark.shared_data("citybench")

BASE = "http://example.org/citybench/"
XSD_DATE_TIME = "http://www.w3.org/2001/XMLSchema#dateTime"
LATER = GraphEvent(
    OTHER, "<http://example.org/tick>", Timestamp.from_literal("2014-08-02T00:00:00", XSD_DATE_TIME), ""
)
"""After every reading of the slice: it makes every evaluation final."""


def q5() -> Path:
    """CityBench's CQELS Q5 (../shared/data/citybench)."""
    return citybench("cqels_query", "Q5.txt")


def test_a_relative_iri_without_a_base_is_a_400_at_the_iri(app):
    client = app.test_client()
    response = client.post(
        "/queries",
        data=q5().read_text(),
        content_type="application/sparql-query",
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 400
    found = response.json
    assert (found["parameter"], found["line"], found["column"]) == ("query", 3, 12)
    assert found["message"].startswith("<culturalevents> is a relative IRI and the query has no base")
    assert service(app).registry.all() == []


@pytest.mark.parametrize("base", ["citybench/", "http://example.org/a b/"])
def test_a_base_that_is_not_an_absolute_iri_is_a_400_naming_it(app, base):
    """Checked as Oxigraph checks IRIs: a space would make stream IRIs no POST /streams accepts."""
    response = register(app.test_client(), q5().read_text(), base=base)
    assert (response.status_code, response.get_data(as_text=True)) == (
        400,
        f"base: expected an absolute IRI, got {base!r}\n",
    )


def test_q5_with_a_base_answers_what_rsep_run_base_prints(app, tmp_path):
    graph = BASE + "culturalevents"
    kb = app.extensions["rsep"].kb
    kb.load(sensor_repository())
    kb.load(CULTURAL_EVENTS, graph=graph)
    client = app.test_client()
    response = register(client, q5().read_text(), base=BASE)
    assert response.status_code == 201, response.get_data(as_text=True)
    query = response.json
    traffic = tmp_path / "traffic.trig"
    name = TRAFFIC.rsplit("#", 1)[1]
    assert stream_iri(name) == TRAFFIC
    repository = Repository.load(citybench("dataset"))
    traffic.write_text(convert(citybench("streams", f"{name}.stream"), repository, start=START, end=END))
    events = read_event_file(traffic, TRAFFIC, scope="s0")
    for event in [*events, LATER]:  # the stream IRI has a fragment: sent URL-encoded
        answer = client.post(
            "/streams",
            query_string={"stream": event.stream},
            data=event.nquads(),
            content_type="application/n-quads",
        )
        assert answer.status_code == 202, answer.get_data(as_text=True)
    wait_for(caught_up(app))
    expected = output(
        RunRequest(
            q5(),
            [StreamFile(TRAFFIC, traffic)],
            [KbFile(sensor_repository()), KbFile(CULTURAL_EVENTS, graph)],
            engine="inprocess",
            base=BASE,
        )
    )
    assert [line["bindings"] for line in expected] == [q5_row(row) for row in range(3, 15)]
    assert read_back(client, query["iri"]) == ordered(expected)
    (registered,) = service(app).registry.all()
    assert registered.options == {"base": BASE}
    assert is_window_registration(registered)
    plan = compile_registered(registered)  # as the engine compiles it after a restart
    assert isinstance(plan, WindowPlan) and f"<{graph}>" in plan.sparql
