"""CityBench's CQELS queries: every file parses, and Q1-Q3 run over the first hour of the
converted CSV streams with exactly the solutions an independent oracle computes
(tests/support/citybench.py), plus counts and values checked by hand from the CSV rows.
Q4, Q5, Q8 and Q9 name their graph relatively (`<culturalevents>`): `rsep run` resolves it
against the query file's address, or `--base`."""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest

from rsep.endpoint.cli import main
from rsep.grammar import parse_event_query
from rsep.grammar.cqels import CQELS
from rsep.plugin.windows import plan_windows
from tests.support.citybench import (
    CULTURAL_EVENTS,
    START,
    TRAFFIC,
    Oracle,
    by_time,
    citybench,
    convert_slice,
    expected_cqels,
    q5_row,
    query_files,
    query_params,
    run_rsep,
    seconds,
    sensor_repository,
    sort_rows,
    streams_of,
)

pytestmark = pytest.mark.shared_data("citybench")

XSD_DOUBLE = "<http://www.w3.org/2001/XMLSchema#double>"
T0 = seconds(START)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return convert_slice(tmp_path_factory.mktemp("citybench"))


@pytest.fixture(scope="module")
def oracle():
    return Oracle()


@pytest.fixture(scope="module")
def outputs(files):
    return {name: run_rsep("cqels", name, files) for name in ("Q1", "Q2", "Q3")}


def test_all_eighteen_files_are_there():
    assert len(query_files("cqels")) == 18


RELATIVE = {"Q4": "culturalevents", "Q5": "culturalevents", "Q8": "libraryevents", "Q9": "culturalevents"}
"""These name a graph by a relative IRI."""


@pytest.mark.parametrize("path", query_params("cqels"))
def test_every_citybench_query_parses_and_plans(path):
    """As `rsep run` reads them: relative IRIs resolve against the file's own address."""
    query = parse_event_query(path.read_text(), source=str(path), dialect="cqels", base_iri=path.as_uri())
    assert query.dialect == CQELS and query.streams
    plan = plan_windows(query)
    ox.Store().query(plan.sparql)  # the generated SPARQL is valid for Oxigraph
    if path.stem in RELATIVE:
        assert (path.parent / RELATIVE[path.stem]).as_uri() in plan.sparql


def run_cli(capsys, *args: str) -> list[dict[str, object]]:
    assert main(["run", *args, "--engine", "inprocess"]) == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_q5_reads_its_relative_graph_from_the_query_files_address(files, capsys):
    """Q5 over the traffic slice, with two cultural events (tests/fixtures/citybench) in the graph
    <culturalevents> resolved against Q5's own file. Every reading of AarhusTrafficData158505
    (rows 3-14 of its CSV, 08:00 to 08:55) puts its CongestionLevel observation in the 3 s window;
    the concert is near the sensor's road, the fair is not (the distance FILTER)."""
    query = citybench("cqels_query", "Q5.txt").resolve()  # rsep run resolves symbolic links
    graph = (query.parent / "culturalevents").as_uri()
    lines = run_cli(
        capsys, str(query), "--stream", f"{TRAFFIC}={files[TRAFFIC]}", "--kb", str(sensor_repository()),
        "--kb", f"{graph}={CULTURAL_EVENTS}",
    )  # fmt: skip
    assert [seconds(str(line["end"])) - T0 for line in lines] == [m * 300 for m in range(12)]
    assert [line["bindings"] for line in lines] == [q5_row(row) for row in range(3, 15)]


def test_base_names_the_graph_base(files, capsys):
    query = citybench("cqels_query", "Q5.txt")
    lines = run_cli(
        capsys, str(query), "--base", "http://example.org/citybench/",
        "--stream", f"{TRAFFIC}={files[TRAFFIC]}",
        "--kb", str(sensor_repository()), "--kb", f"http://example.org/citybench/culturalevents={CULTURAL_EVENTS}",
    )  # fmt: skip
    assert [line["bindings"] for line in lines] == [q5_row(row) for row in range(3, 15)]


@pytest.mark.parametrize("name", ["Q4", "Q8", "Q9"])
def test_the_other_relative_queries_run_to_completion(name, tmp_path, capsys):
    """CityBench's user-location and parking streams are not in ../shared/data: each stream gets one
    event that matches nothing, so the query is evaluated once (over SensorRepository.n3 and an
    empty graph <culturalevents>/<libraryevents>) and answers nothing."""
    query = citybench("cqels_query", f"{name}.txt")
    event = tmp_path / "event.trig"
    event.write_text(
        "<urn:e> { <urn:s> <urn:p> <urn:o> . }\n"
        '<urn:e> <http://www.w3.org/ns/prov#generatedAtTime> "2014-08-01T08:00:00"^^'
        "<http://www.w3.org/2001/XMLSchema#dateTime> .\n"
    )
    streams = [arg for iri in streams_of(query.read_text()) for arg in ("--stream", f"{iri}={event}")]
    assert streams
    assert run_cli(capsys, str(query), *streams, "--kb", str(sensor_repository())) == []


@pytest.mark.parametrize("name", ["Q1", "Q2", "Q3"])
def test_matches_the_oracle(name, files, oracle, outputs):
    got = by_time(outputs[name])
    expected = expected_cqels(name, files, oracle)
    assert sorted(got) == sorted(expected)
    for t, rows in expected.items():
        assert sort_rows(got[t]) == sort_rows(rows), t


def test_q1_by_hand(outputs):
    # content change: one evaluation per reading (both sensors report on the same minutes)
    lines = outputs["Q1"]
    assert [seconds(line["end"]) - T0 for line in lines] == [m * 300 for m in range(12)]
    assert lines[0]["bindings"]["v1"] == f'"{11 / 511!r}"^^{XSD_DOUBLE}'
    assert lines[0]["bindings"]["v2"] == f'"{1 / 2065!r}"^^{XSD_DOUBLE}'


def test_q2_by_hand(outputs):
    # evaluations at 08:00, 08:20 and 08:50, when the weather window is not empty: 27 x 5 each
    lines = outputs["Q2"]
    assert len(lines) == 3 * 27 * 5
    assert sorted({seconds(line["end"]) - T0 for line in lines}) == [0, 1200, 3000]


def test_q3_by_hand(outputs):
    lines = outputs["Q3"]
    assert len(lines) == 12
    assert set(lines[0]["bindings"]) == {"obId1", "obId3", "v1", "v3"}
