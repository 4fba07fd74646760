"""CityBench's C-SPARQL queries: every file parses, and Q1-Q3 run over the first hour of the
converted CSV streams with exactly the solutions an independent oracle computes
(tests/support/citybench.py), plus values checked by hand from the CSV rows."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from rsep.grammar import parse_event_query
from rsep.grammar.csparql import CSPARQL
from rsep.plugin.windows import plan_windows
from tests.support.citybench import (
    START,
    Oracle,
    by_time,
    convert_slice,
    expected_csparql,
    query_files,
    query_params,
    run_rsep,
    seconds,
    sort_rows,
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
    return {name: run_rsep("c-sparql", name, files) for name in ("Q1", "Q2", "Q3")}


def test_all_nineteen_files_are_there():
    assert len(query_files("c-sparql")) == 19


@pytest.mark.parametrize("path", query_params("c-sparql"))
def test_every_citybench_query_parses_and_plans(path):
    query = parse_event_query(path.read_text(), source=str(path), dialect="c-sparql")
    assert query.dialect == CSPARQL and query.streams
    plan = plan_windows(query)
    ox.Store().query(plan.sparql)  # the generated SPARQL is valid for Oxigraph


@pytest.mark.parametrize("name", ["Q1", "Q2", "Q3"])
def test_matches_the_oracle(name, files, oracle, outputs):
    got = by_time(outputs[name])
    expected = expected_csparql(name, files, oracle)
    assert sorted(got) == sorted(expected)
    for close, rows in expected.items():
        assert sort_rows(got[close]) == sort_rows(rows), close
        names = list(got[close][0])
        assert got[close] == sorted(got[close], key=lambda row: [row.get(n, "") for n in names])


def double(value: float) -> str:
    return f'"{value!r}"^^{XSD_DOUBLE}'


def test_q1_by_hand(outputs):
    # Both sensors report every 5 minutes on the minute; a 3 s window closing every second holds
    # a reading at the 3 closes t, t+1, t+2: 12 readings in the hour, 36 closes, one pair each,
    # less the 3 closes of 08:00, the query's t0, whose windows open before it: 33.
    lines = outputs["Q1"]
    closes = [m * 300 + k for m in range(12) for k in range(3)]
    assert [seconds(line["end"]) - T0 for line in lines] == closes[3:]
    # 08:05: 182955 counts 13 vehicles on 511 m, 158505 counts 1 on 2065 m (trafficMetaData.csv)
    assert lines[0]["bindings"]["v1"] == double(13 / 511)
    assert lines[0]["bindings"]["v2"] == double(1 / 2065)


def test_q2_by_hand(outputs):
    # The weather reports at 08:00, 08:20 and 08:50, so 3 x 3 closes; ?obId1-3 range over the
    # 3 weather observations each (27 combinations), ?obId4 over the 5 of the traffic sensor.
    lines = outputs["Q2"]
    assert len(lines) == 2 * 3 * 27 * 5  # 08:00 is t0: its windows open before it
    closes = sorted({seconds(line["end"]) - T0 for line in lines})
    assert closes == [m + k for m in (1200, 3000) for k in range(3)]


def test_q3_by_hand(outputs):
    lines = outputs["Q3"]
    assert len(lines) == 33
    average = float(lines[0]["bindings"]["avgCongest"].split('"')[1])
    assert average == pytest.approx((13 / 511 + 1 / 2065) / 2)
