"""C-SPARQL's timestamp(?v [, stream]) (EDBT 2010 §2.7): the time of the most recent stream triple
that bound ?v, evaluated by Oxigraph through the latestTime extension function."""

from __future__ import annotations

import re

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.windows import WindowPlanError, plan_windows
from rsep.plugin.windows.timestamp import LATEST_FUNCTION, LATEST_IN_FUNCTION
from tests.support.run_cases import run_inline

S1, S2 = "http://example.org/s1", "http://example.org/s2"
PREFIX = "PREFIX : <http://example.org/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


def plan(where: str, select: str = "?x"):
    text = f"{PREFIX}SELECT {select} FROM STREAM <{S1}> [RANGE 10s STEP 10s] WHERE {{ {where} }}"
    return plan_windows(parse_event_query(text, dialect="c-sparql"))


def test_timestamp_becomes_latest_time_of_every_pattern_that_binds_the_variable():
    sparql = plan("?x :p ?y . ?y :q ?x . ?z :r ?w FILTER (timestamp(?x) > 3)").sparql
    assert (
        f"<{LATEST_FUNCTION}>(?x, <http://example.org/p>, ?y, ?y, <http://example.org/q>, ?x) > 3" in sparql
    )


def test_patterns_in_nested_groups_count_but_not_optional_ones():
    sparql = plan("{ ?x :p ?y } OPTIONAL { ?x :q ?z } FILTER (timestamp(?x) > 3)").sparql
    assert f"<{LATEST_FUNCTION}>(?x, <http://example.org/p>, ?y) > 3" in sparql


def test_the_stream_argument_selects_latest_time_in():
    sparql = plan(f"?x :p ?y FILTER (timestamp(?x, <{S1}>) > 3)").sparql
    assert f"<{LATEST_IN_FUNCTION}>(<{S1}>, ?x, <http://example.org/p>, ?y) > 3" in sparql


@pytest.mark.parametrize(
    ("where", "select", "message"),
    [
        ("?x :p ?y FILTER (timestamp(?z) > 3)", "?x", "no triple pattern of the FILTER's group binds ?z"),
        ("?x :p/:q ?y FILTER (timestamp(?x) > 3)", "?x", "property path"),
        ("?x :p [] FILTER (timestamp(?x) > 3)", "?x", "not blank nodes"),
        ("?x :p ?y", "(timestamp(?x) AS ?t)", "only be used in a FILTER, not in SELECT"),
        ("?x :p ?y BIND (timestamp(?x) AS ?t)", "?x", "only be used in a FILTER"),
    ],
)
def test_what_cannot_be_evaluated_is_rejected(where, select, message):
    with pytest.raises(WindowPlanError, match=re.escape(message)):
        plan(where, select)


EVENTS = {  # the mark at 0 is t0, so that the window (0, 10] opens at or after it (issue 16)
    S1: ":a0 { :m :mark 0 . } :a0 prov:generatedAtTime 0 .\n"
    ":a1 { :x :p 1 . } :a1 prov:generatedAtTime 1 .\n:a5 { :x :p 1 . } :a5 prov:generatedAtTime 5 .\n",
    S2: ":b3 { :x :p 1 . :y :q 2 . } :b3 prov:generatedAtTime 3 .\n",
}


def query(filter_: str, select: str = "?s") -> str:
    return (
        f"{PREFIX}SELECT {select} FROM STREAM <{S1}> [RANGE 10s TUMBLING] "
        f"FROM STREAM <{S2}> [RANGE 10s TUMBLING] "
        f"WHERE {{ ?s :p ?o . FILTER ({filter_}) }}"
    )


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ("timestamp(?s) = 5", True),  # the latest of the three occurrences (1, 3 and 5)
        ("timestamp(?s) = 1", False),
        (f"timestamp(?s, <{S1}>) = 5", True),
        (f"timestamp(?s, <{S2}>) = 3", True),  # the latest in that stream only
        (f"timestamp(?s, <{S2}>) = 5", False),
        ("datatype(timestamp(?s)) = xsd:integer", True),  # a number, as the event file wrote it
    ],
)
def test_timestamp_is_the_latest_occurrence(tmp_path, filter_, expected):
    lines = run_inline(tmp_path, query(filter_), EVENTS)
    assert lines == (
        [{"start": 0, "end": 10, "bindings": {"s": "<http://example.org/x>"}}] if expected else []
    )


def test_a_variable_bound_by_static_data_only_has_no_timestamp(tmp_path):
    text = (
        f"{PREFIX}SELECT ?s FROM STREAM <{S1}> [RANGE 10s TUMBLING] FROM <http://example.org/kb> "
        "WHERE { ?s :p ?o . ?s :static ?k FILTER (timestamp(?k) > 0 || timestamp(?s) > 0) }"
    )
    kb = {"http://example.org/kb": ":x :static :k ."}
    lines = run_inline(tmp_path, text, {S1: EVENTS[S1]}, kb)
    # timestamp(?k) is undefined (an error), and `error || true` is true (SPARQL §17.2)
    assert lines == [{"start": 0, "end": 10, "bindings": {"s": "<http://example.org/x>"}}]
    strict = text.replace("timestamp(?k) > 0 || timestamp(?s) > 0", "timestamp(?k) > 0")
    assert run_inline(tmp_path, strict, {S1: EVENTS[S1]}, kb) == []


def test_date_time_streams_give_date_time_timestamps(tmp_path):
    stamp = '"2014-08-01T08:00:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    mark = '"2014-08-01T07:59:59"^^<http://www.w3.org/2001/XMLSchema#dateTime>'  # t0
    events = (
        f":m {{ :m :mark 0 . }} :m prov:generatedAtTime {mark} .\n"
        f":e {{ :x :p 1 . }} :e prov:generatedAtTime {stamp} ."
    )
    text = (
        f"{PREFIX}SELECT ?s FROM STREAM <{S1}> [RANGE 1s STEP 1s] "
        'WHERE { ?s :p ?o FILTER (timestamp(?s) = "2014-08-01T08:00:00"^^xsd:dateTime) }'
    )
    assert run_inline(tmp_path, text, {S1: events}) == [
        {
            "start": "2014-08-01T07:59:59Z",
            "end": "2014-08-01T08:00:00Z",
            "bindings": {"s": "<http://example.org/x>"},
        }
    ]
