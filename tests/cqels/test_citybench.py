"""CityBench's CQELS queries: every file parses, and Q1-Q3 run over the first hour of the
converted CSV streams with exactly the solutions an independent oracle computes
(tests/csparql/citybench.py), plus counts and values checked by hand from the CSV rows."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import CQELS
from rsep.plugin.windows import WindowPlanError, plan_windows
from tests.csparql.citybench import (
    START,
    Oracle,
    by_time,
    citybench,
    convert_slice,
    expected_cqels,
    run_rsep,
    seconds,
    sort_rows,
)

QUERIES = sorted((citybench() / "cqels_query").glob("*.txt"))
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
    assert len(QUERIES) == 18


RELATIVE = {"Q4.txt", "Q5.txt", "Q8.txt", "Q9.txt"}
"""These name a graph <culturalevents> or <libraryevents> by a relative IRI."""


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_every_citybench_query_parses_and_plans(path):
    query = parse_event_query(path.read_text(), source=str(path), dialect="cqels")
    assert query.dialect == CQELS and query.streams
    if path.name in RELATIVE:
        with pytest.raises(WindowPlanError, match="is a relative IRI: declare a BASE"):
            plan_windows(query)
        query = parse_event_query(path.read_text(), dialect="cqels", base_iri="http://example.org/")
    ox.Store().query(plan_windows(query).sparql)  # the generated SPARQL is valid for Oxigraph


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
