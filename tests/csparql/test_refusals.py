"""C-SPARQL queries rsep cannot run are refused by `rsep run` before any event is read, at the
construct at fault: exit 2, nothing on stdout, one line `FILE:line:col: message` on stderr.
Durations that round to no microsecond (windows count whole microseconds), timestamp() where it
cannot be evaluated, COMPUTED EVERY over a count window, DESCRIBE and the AGGREGATE clause."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import Duration, SourcePosition, TimeUnit, TimeWindow
from rsep.plugin.windows import WindowPlanError, plan_windows
from tests.csparql.support import STREAM, refused

PREFIX = "PREFIX : <http://example.org/>\n"
ROUNDS = (
    "a duration here must be at least 1µs (windows count time in whole microseconds, and this rounds to 0)"
)
T = "http://example.org/T"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            f"SELECT ?s\nFROM STREAM <{STREAM}> [RANGE 0.0004ms STEP 1s]\n",
            "2:43",
            f"RANGE 0.0004ms: {ROUNDS}",
        ),
        (f"SELECT ?s\nFROM STREAM <{STREAM}> [RANGE 2s STEP 0.0004ms]\n", "2:51", f"STEP 0.0004ms: {ROUNDS}"),
        (f"SELECT ?s\nFROM STREAM <{STREAM}> [RANGE 0s TUMBLING]\n", "2:43", f"RANGE 0s: {ROUNDS}"),
        (
            f"REGISTER QUERY q COMPUTED EVERY 0.0001ms AS\nSELECT ?s\n"
            f"FROM STREAM <{STREAM}> [RANGE 2s STEP 1s]\n",
            "1:33",
            f"COMPUTED EVERY 0.0001ms: {ROUNDS}",
        ),
        (
            f"REGISTER QUERY q COMPUTED EVERY 5s AS\nSELECT ?s\nFROM STREAM <{STREAM}> [RANGE TRIPLES 2]\n",
            "1:18",
            f"COMPUTED EVERY 5s needs time-based windows: the count window [RANGE TRIPLES 2] of <{STREAM}> "
            "closes at each arrival, so the query is evaluated then, not periodically",
        ),
    ],
    ids=["range", "step", "tumbling", "computed-every", "computed-every-count-window"],
)
def test_durations_and_periods_rsep_cannot_count_are_refused_where_written(
    capsys, tmp_path, text, position, message
):
    query, err = refused(capsys, tmp_path, f"{text}WHERE {{ ?s ?p ?o }}\n")
    assert err == f"{query}:{position}: {message}\n"


def test_one_microsecond_is_the_shortest_window():
    text = f"SELECT ?s FROM STREAM <{STREAM}> [RANGE 0.001ms STEP 0.0006ms] WHERE {{ ?s ?p ?o }}"
    (spec,) = plan_windows(parse_event_query(text, dialect="c-sparql")).windows
    assert isinstance(spec.window, TimeWindow)
    assert (spec.window.width.ticks, spec.window.slide.ticks) == (1, 1)


def where(condition: str) -> str:
    return (
        f"{PREFIX}SELECT ?x\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\n"
        f"FROM STREAM <{T}> [RANGE 5s STEP 1s]\n"
        f"WHERE {{ ?x :p ?y .\n  FILTER ({condition}) }}\n"
    )


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            where("timestamp(?x, <http://example.org/U>) > 1"),
            "6:11",
            "timestamp(?x, <http://example.org/U>): <http://example.org/U> is not a stream of the query "
            f"(FROM STREAM <{STREAM}>, <{T}>)",
        ),
        (
            where("?y > 0 && timestamp(?x, ?g) > 1"),
            "6:21",
            f"timestamp(?x, ?g): the second argument names a stream by its IRI (<{STREAM}>, <{T}>); the "
            "windows are merged into the default graph, so no GRAPH ?g binds a stream",
        ),
        (
            where("timestamp(?nope) > 1"),
            "6:11",
            "timestamp(?nope): no triple pattern of the FILTER's group binds ?nope",
        ),
        (
            f"{PREFIX}SELECT ?x (timestamp(?x) AS ?t)\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\n"
            "WHERE { ?x :p ?y }\n",
            "2:12",
            "timestamp() may only be used in a FILTER, not in SELECT",
        ),
        (
            f"{PREFIX}SELECT ?x\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\nWHERE {{ ?x :p ?y }}\n"
            "GROUP BY ?x HAVING (timestamp(?x) > 1)\n",
            "5:21",
            "timestamp() may only be used in a FILTER, not in GROUP BY, HAVING or ORDER BY",
        ),
    ],
    ids=["not-a-stream-of-the-query", "variable-stream", "unbound", "select", "having"],
)
def test_timestamp_calls_that_cannot_be_evaluated_are_refused_at_the_call(
    capsys, tmp_path, text, position, message
):
    query, err = refused(capsys, tmp_path, text)
    assert err == f"{query}:{position}: {message}\n"


def test_timestamp_of_one_of_the_querys_streams_is_accepted():
    text = where(f"timestamp(?x, <{T}>) > 1")
    assert f"<{T}>, ?x, <http://example.org/p>, ?y" in plan_windows(parse_event_query(text)).sparql


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            f"{PREFIX}SELECT ?x ?n\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\nWHERE {{ ?x :p ?y }}\n"
            "AGGREGATE { (?n, COUNT, {?x}) }\n",
            "5:1",
            "C-SPARQL's AGGREGATE { ... } clause predates SPARQL 1.1, whose aggregates rsep reads instead: "
            "write GROUP BY, with the aggregate in SELECT ((COUNT(?x) AS ?n))",
        ),
        (
            f"{PREFIX}DESCRIBE ?x\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\nWHERE {{ ?x :p ?y }}\n",
            "2:1",
            "a C-SPARQL query is a SELECT, CONSTRUCT or ASK: DESCRIBE is not supported (CONSTRUCT "
            "{ ?x ?p ?o } ... WHERE { ?x ?p ?o } gives what the windows say about ?x)",
        ),
    ],
    ids=["aggregate", "describe"],
)
def test_unsupported_csparql_forms_say_what_to_write(capsys, tmp_path, text, position, message):
    query, err = refused(capsys, tmp_path, text)
    assert err == f"{query}:{position}: {message}\n"


def test_plan_errors_about_a_stream_point_at_its_declaration():
    """A query built or changed after parsing: the plan refuses a window it cannot count, or a stream
    without a window, at the FROM STREAM clause the stream came from."""
    query = parse_event_query(
        f"{PREFIX}SELECT ?x\nFROM STREAM <{STREAM}> [RANGE 5s STEP 1s]\nWHERE {{ ?x :p ?y }}"
    )
    (decl,) = query.streams
    assert decl.position == SourcePosition(3, 1)
    tiny = TimeWindow(Duration(0.0004, TimeUnit.MILLISECONDS), Duration(1))
    for window, message in [(tiny, "has a width or slide under 1µs"), (None, "has no window")]:
        with pytest.raises(WindowPlanError, match=message) as error:
            plan_windows(replace(query, streams=(replace(decl, window=window),)))
        assert error.value.position == SourcePosition(3, 1)
