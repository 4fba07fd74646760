"""`GET /queries/{id}/results`: a query's matches as SPARQL results, one row per match (per
solution of an evaluation for window queries) with `match`, `start`, `end`, `detected` and a
column per projected variable, equal to what `rsep run` prints for the same events."""

from __future__ import annotations

import csv
import io
import json

import pytest
from flask import Flask

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.plugin.store.event_reader import read_event_file
from tests.support.events import QUERIES, synthetic_events
from tests.support.paths import REPO
from tests.support.run_cases import load_cases, output
from tests.support.servers import expected
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS, load_kb, smart_grid_events
from tests.support.streaming_endpoint import (
    caught_up,
    ingest,
    later_event,
    nt,
    number,
    register,
    register_case,
    wait_for,
)

CSPARQL = {case.name: case for case in load_cases(REPO / "tests" / "csparql" / "fixtures")}
CQELS = {case.name: case for case in load_cases(REPO / "tests" / "cqels" / "fixtures")}


def flat(app: Flask, query_id: str, **headers: str):
    response = app.test_client().get(f"/queries/{query_id}/results", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def as_run_lines(document: dict) -> list[dict]:
    """SPARQL JSON rows as `rsep run --format jsonl` lines (start, end, bindings)."""
    own = {"match", "start", "end", "detected"}
    variables = [name for name in document["head"]["vars"] if name not in own]
    return [
        {
            "start": number(row["start"]),
            "end": number(row["end"]),
            "bindings": {name: nt(row[name]) for name in variables if name in row},
        }
        for row in document["results"]["bindings"]
    ]


def test_one_row_per_match_with_its_interval_and_bindings(app: Flask) -> None:
    load_kb(app)
    client = app.test_client()
    query = register(client, (SMART_GRID / "query.rq").read_text()).json
    ingest(client, smart_grid_events())
    wait_for(caught_up(app))
    response = flat(app, query["id"])
    assert response.mimetype == "application/sparql-results+json"
    document = response.json
    assert document["head"]["vars"] == ["match", "start", "end", "detected",
                                         "house", "fr1", "fr2", "house2", "city", "oname", "sp"]  # fmt: skip
    request = RunRequest(SMART_GRID / "query.rq",
                         [StreamFile(iri, path) for iri, path in SMART_GRID_STREAMS.items()],
                         [KbFile(SMART_GRID / "kb.trig")], engine="inprocess")  # fmt: skip
    lines = [json.loads(text) for text in run(request).jsonl().splitlines()]
    cli = [{k: v for k, v in line.items() if k in ("start", "end", "bindings")} for line in lines]
    assert as_run_lines(document) == cli
    (row,) = document["results"]["bindings"]
    assert row["match"]["value"].startswith(f"urn:rsep:match:{query['id']}:")
    assert row["detected"]["datatype"] == "http://www.w3.org/2001/XMLSchema#dateTime"


def test_rows_come_in_event_time_order_and_as_csv_on_request(app: Flask) -> None:
    client = app.test_client()
    query_id = register(client, QUERIES["any"]).json["id"]
    events = synthetic_events(60)
    ingest(client, events)
    wait_for(caught_up(app))
    rows = flat(app, query_id).json["results"]["bindings"]
    assert {row["match"]["value"] for row in rows} == expected(query_id, events)
    ends = [(float(row["end"]["value"]), float(row["start"]["value"])) for row in rows]
    assert ends == sorted(ends)
    table = flat(app, query_id, Accept="text/csv").get_data(as_text=True)
    parsed = list(csv.DictReader(io.StringIO(table)))
    assert list(parsed[0]) == ["match", "start", "end", "detected", "k", "v1", "v2"]
    assert [row["match"] for row in parsed] == [row["match"]["value"] for row in rows]


def test_a_variable_named_like_a_column_keeps_its_name(app: Flask) -> None:
    client = app.test_client()
    query_id = register(client, QUERIES["any"].replace("?v1", "?start")).json["id"]
    ingest(client, synthetic_events(30))
    wait_for(caught_up(app))
    document = flat(app, query_id).json
    assert document["head"]["vars"] == ["match", "_start", "end", "detected", "k", "start", "v2"]
    assert all(row["start"]["datatype"].endswith("#integer") for row in document["results"]["bindings"])


WINDOW_CASES = [CSPARQL["count-window"], CSPARQL["aggregates-per-district"], CQELS["range-slide"]]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=str)
def test_window_queries_give_one_row_per_solution_of_each_evaluation(app: Flask, case) -> None:
    kb = app.extensions["rsep"].kb
    for graph, file in case.kb.items():
        kb.load(case.folder / file, graph=graph or None)
    client = app.test_client()
    query_id = register_case(client, case).json["id"]
    read = [
        read_event_file(case.folder / file, iri, scope=f"s{i}")
        for i, (iri, file) in enumerate(case.streams.items())
    ]
    events = sorted((e for stream in read for e in stream), key=lambda e: e.time.seconds)
    ingest(client, [*events, later_event(events)])
    wait_for(caught_up(app))
    lines = as_run_lines(flat(app, query_id).json)
    assert sorted(lines, key=by_time) == sorted(output(case.request()), key=by_time)
    assert [line["end"] for line in lines] == sorted(line["end"] for line in lines)


def by_time(line: dict) -> tuple:
    return line["end"], line["start"], sorted(line["bindings"].items())


def test_an_unknown_query_is_404(app: Flask) -> None:
    assert app.test_client().get("/queries/0000000000000000/results").status_code == 404
