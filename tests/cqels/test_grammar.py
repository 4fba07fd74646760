"""CQELS-QL's stream graph patterns and CQELS-CEP's named windows (grammar/cqels.lark) in the event
algebra, and the SEQ extension point that is not implemented yet."""

from __future__ import annotations

import pytest

from rsep.grammar import parse_event_query
from rsep.grammar.parser import SparqlSyntaxError
from rsep.plugin.algebra.events import (
    CQELS,
    CountWindow,
    Duration,
    LandmarkWindow,
    NowWindow,
    ReportPolicy,
    StreamDecl,
    TimeUnit,
    TimeWindow,
    WindowElement,
)
from rsep.plugin.algebra.sparql import BGP, GroupPattern, OptionalPattern

S = "http://example.org/s"
T = "http://example.org/t"


def parse(text: str):
    return parse_event_query(text, dialect="cqels")


def test_stream_patterns_become_window_elements_in_place():
    query = parse(
        f"SELECT ?x ?y WHERE {{ ?x a ?c . STREAM <{S}> [RANGE 3s] {{ ?x <http://p> ?y }} "
        f"OPTIONAL {{ STREAM <{T}> [NOW] {{ ?y <http://q> ?z }} }} }}"
    )
    assert query.dialect == CQELS and query.dialect.report is ReportPolicy.CONTENT_CHANGE
    assert query.streams == (
        StreamDecl(S, None, TimeWindow(Duration(3), None)),
        StreamDecl(T, None, NowWindow()),
    )
    static, window, optional = query.where.elements
    assert isinstance(static, BGP)
    assert (
        isinstance(window, WindowElement) and window.stream == S and isinstance(window.pattern, GroupPattern)
    )
    assert isinstance(optional, OptionalPattern)
    assert optional.pattern.elements[0].stream == T


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("[range 3s ]", TimeWindow(Duration(3), None)),
        ("[RANGE 3000ms SLIDE 1s]", TimeWindow(Duration(3000, TimeUnit.MILLISECONDS), Duration(1))),
        ("[RANGE 10 m]", TimeWindow(Duration(10, TimeUnit.MINUTES), None)),
        ("[NOW]", NowWindow()),
        ("[ALL]", LandmarkWindow()),
        ("[TRIPLES 5]", CountWindow(5)),
    ],
)
def test_windows(text, window):
    query = parse(f"SELECT ?x WHERE {{ STREAM <{S}> {text} {{ ?x ?p ?o }} }}")
    assert query.streams[0].window == window


def test_named_windows_and_static_from():
    query = parse(
        "PREFIX : <http://example.org/> SELECT ?s FROM :map "
        f"FROM NAMED WINDOW :W ON <{S}> [RANGE 10m] FROM NAMED <http://g> "
        "WHERE { WINDOW :W { ?v :delayAt ?s } GRAPH <http://g> { ?v a :subway } }"
    )
    assert query.streams == (
        StreamDecl(S, "http://example.org/W", TimeWindow(Duration(10, TimeUnit.MINUTES))),
    )
    assert query.static_graphs == ("http://example.org/map",)
    assert query.where.elements[0].stream == "http://example.org/W"


def test_an_undeclared_window_is_located():
    with pytest.raises(SparqlSyntaxError) as error:
        parse("PREFIX : <http://e/> SELECT ?s WHERE {\n  WINDOW :W { ?v :delayAt ?s } }")
    assert (error.value.line, error.value.column) == (2, 3)
    assert "window <http://e/W> is not declared by FROM NAMED WINDOW" in error.value.message


def test_one_stream_through_two_windows_needs_named_windows():
    with pytest.raises(SparqlSyntaxError, match="two different windows"):
        parse(
            f"SELECT * WHERE {{ STREAM <{S}> [RANGE 3s] {{ ?a ?b ?c }} STREAM <{S}> [NOW] {{ ?a ?b ?d }} }}"
        )
    same = parse(f"SELECT * WHERE {{ STREAM <{S}> [NOW] {{ ?a ?b ?c }} STREAM <{S}> [NOW] {{ ?a ?b ?d }} }}")
    assert len(same.streams) == 1


def test_seq_is_parsed_and_rejected_as_not_implemented_yet():
    text = (
        "PREFIX : <http://e/> SELECT ?s FROM NAMED WINDOW :W ON <http://s> [RANGE 10m] WHERE {\n"
        "  WINDOW :W { SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}, !{?v :arriveAt ?s}) } }"
    )
    with pytest.raises(SparqlSyntaxError) as error:
        parse(text)
    assert "not implemented yet" in error.value.message and (error.value.line, error.value.column) == (2, 15)
    with pytest.raises(SparqlSyntaxError, match="not implemented yet"):
        parse(text.replace("WINDOW :W { SEQ", "SEQ(:W; !:W) WINDOW :W { SEQ"))


def test_a_query_without_windows_is_not_cqels():
    with pytest.raises(SparqlSyntaxError, match="at least one STREAM"):
        parse("SELECT ?s WHERE { ?s ?p ?o }")


def test_dialect_detection_picks_cqels():
    query = parse_event_query(f"select ?x where {{ stream <{S}> [range 3s] {{ ?x ?p ?o }} }}")
    assert query.dialect == CQELS
