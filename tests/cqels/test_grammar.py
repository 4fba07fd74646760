"""CQELS-QL's stream graph patterns and CQELS-CEP's named windows, SEQ clauses and nested paths
(grammar/cqels.lark) in the event algebra."""

from __future__ import annotations

import logging
from pathlib import Path

import lark
import pytest
from lark.load_grammar import FromPackageLoader, PackageResource

from rsep.grammar import parse_event_query
from rsep.grammar.cqels import CQELS
from rsep.grammar.parser import SparqlSyntaxError
from rsep.plugin.algebra.events import (
    CountWindow,
    Duration,
    EventJoin,
    GraphPatternEvent,
    LandmarkWindow,
    MatchElement,
    Negation,
    NowWindow,
    ReportPolicy,
    SelectionStrategy,
    Sequence,
    StreamDecl,
    TimeUnit,
    TimeWindow,
    WindowElement,
)
from rsep.plugin.algebra.nested_paths import PathSelf
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    Filter,
    GroupPattern,
    OptionalPattern,
    PathInverse,
    PathMod,
    PathModifier,
    PathNested,
    PathSequence,
    TriplePattern,
    Var,
)

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


CEP = "PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :W ON <http://s> [RANGE 10m] "
W = "http://e/W"
ANY = SelectionStrategy.SKIP_TILL_ANY


def gpm(name: str, window: str, p: str, o: str = "?s") -> GraphPatternEvent:
    triple = TriplePattern(Var("v"), IRI(f"http://e/{p}"), Var(o[1:]) if o.startswith("?") else IRI(o))
    return GraphPatternEvent(name, (window,), GroupPattern((BGP((triple,)),)))


def test_seq_in_a_window_is_a_sequence_with_one_negation():
    query = parse(
        "PREFIX : <http://e/> SELECT ?s FROM NAMED WINDOW :W ON <http://s> [RANGE 10m] WHERE {\n"
        "  WINDOW :W { SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}, !{?v :arriveAt ?s}) } ?v a :subway }"
    )
    match, static = query.where.elements
    assert isinstance(match, MatchElement) and isinstance(static, BGP)
    assert match.pattern == Sequence(
        (gpm("P1", W, "delayAt"), gpm("P2", W, "delayAt"), Negation(gpm("P3", W, "arriveAt"))), (ANY, ANY)
    )
    assert query.streams == (StreamDecl("http://s", W, TimeWindow(Duration(10, TimeUnit.MINUTES))),)


def test_the_inline_window_form_is_a_named_window_and_its_block():
    """§3.1's WinSpec `WINDOW :W ON <s> [RANGE 10m] { TSP }` is FROM NAMED WINDOW :W ON <s> [...]
    with `WINDOW :W { TSP }`: the same query."""
    body = "{ SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}, !{?v :arriveAt ?s}) } ?v a :subway }"
    declared = parse(f"{CEP}WHERE {{ WINDOW :W {body}")
    inline = parse(f"PREFIX : <http://e/> SELECT * WHERE {{ WINDOW :W ON <http://s> [RANGE 10m] {body}")
    assert inline == declared
    both = parse(
        "PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :A ON <http://s> [RANGE 10m] WHERE { "
        "SEQ(:A, !:B) WINDOW :A { ?v :p ?s } WINDOW :B ON <http://t> [NOW] { ?v :q ?s } }"
    )
    assert both.streams == (
        StreamDecl("http://s", "http://e/A", TimeWindow(Duration(10, TimeUnit.MINUTES))),
        StreamDecl("http://t", "http://e/B", NowWindow()),
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("WINDOW :W ON <http://t> [NOW] { ?v :p ?s }", "window <http://e/W> is declared twice"),
        ("WINDOW :V ON <http://t> [TRIPLES 0] { ?v :p ?s }", "a count window holds at least one triple"),
    ],
)
def test_inline_window_errors_are_located(where, message):
    text = f"{CEP}WHERE {{ {where} }}"
    with pytest.raises(SparqlSyntaxError) as error:
        parse(text)
    column = text.index(where) + 1  # at the inline WINDOW
    assert (error.value.line, error.value.column, error.value.message) == (1, column, message)


def test_seq_over_windows_takes_each_windows_pattern():
    query = parse(
        "PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :A ON <http://s> [RANGE 10m] "
        "FROM NAMED WINDOW :B ON <http://s> [NOW] FROM NAMED WINDOW :C ON <http://t> [RANGE 1m] WHERE { "
        "SEQ(:A, !:B, :C) WINDOW :A { ?v :p ?s } WINDOW :B { SEQ({?v :q ?s}, {?v :r ?s}) } "
        "WINDOW :C { ?v :p ?s } }"
    )
    (match,) = query.where.elements
    b = Sequence((gpm("P2", "http://e/B", "q"), gpm("P3", "http://e/B", "r")), (ANY,))
    assert match.pattern == Sequence(
        (gpm("P1", "http://e/A", "p"), Negation(b), gpm("P4", "http://e/C", "p")), (ANY, ANY)
    )


def test_several_event_clauses_join_by_interval_intersection():
    query = parse(
        "PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :A ON <http://s> [RANGE 10m] "
        "FROM NAMED WINDOW :B ON <http://t> [RANGE 1m] WHERE { "
        "?v a :subway . WINDOW :A { SEQ({?v :p ?s}, !{?v :q ?s}, {?v :p ?s}) } "
        "FILTER(?x != ?s) WINDOW :B { ?v :r ?x } OPTIONAL { ?s :name ?n } }"
    )
    static, match, flt, optional = query.where.elements  # the clauses where the first one stands
    assert isinstance(flt, Filter)
    assert isinstance(static, BGP) and isinstance(optional, OptionalPattern)
    assert isinstance(match.pattern, EventJoin) and match.pattern.intersect
    first, second = match.pattern.operands
    assert isinstance(first, Sequence) and second == gpm("P4", "http://e/B", "r", "?x")


@pytest.mark.parametrize(
    ("where", "message", "column"),
    [
        ("WINDOW :W { SEQ({?v :p ?s}, !{?v :q ?s}, !{?v :r ?s}) }", "at most one negated element", 42),
        ("WINDOW :W { SEQ({?v :p ?s}, :W) }", "either graph patterns", 13),
        ("SEQ({?v :p ?s}, {?v :q ?s}) WINDOW :W { ?v :p ?s }", "write it inside WINDOW :w { SEQ(...) }", 1),
        ("SEQ(:W, :X) WINDOW :W { ?v :p ?s }", "which has no WINDOW block", 9),
        ("SEQ(:W, :W) WINDOW :W { ?v :p ?s } WINDOW :W { ?v :q ?s }", "2 WINDOW blocks", 5),
        ("WINDOW :W { SEQ({?v :p ?s}, {?v :q ?s}) ?v :r ?x }", "one triple sequence pattern", 13),
        ("WINDOW :W { SEQ(:W, :W) }", "outside window blocks", 13),
        ("OPTIONAL { WINDOW :W { SEQ({?v :p ?s}, {?v :q ?s}) } }", "top level of WHERE", 24),
        ("WINDOW :W { SEQ({?v :p ?s}, {?v :q ?s}) } OPTIONAL { WINDOW :W { ?a ?b ?c } }", "top level", 54),
        (
            "WINDOW :W { ?v :p ?s } OPTIONAL { ?v :n ?m } WINDOW :W { SEQ({?v :p ?s}, {?v :q ?s}) }",
            "both sides of OPTIONAL",
            46,
        ),
        ("SEQ(:W, :W) BIND(1 AS ?one) WINDOW :W { ?v :p ?s }", "both sides of BIND", 29),
        (
            "WINDOW :W { SEQ({?v :p ?s}, {?v :q ?s}) } MINUS { ?v :n ?m } WINDOW :W { ?v :p ?s }",
            "both sides of MINUS",
            62,
        ),
    ],
)
def test_seq_errors_are_located(where, message, column):
    with pytest.raises(SparqlSyntaxError) as error:
        parse(CEP + "WHERE {\n" + where + " }")
    assert message in error.value.message and (error.value.line, error.value.column) == (2, column)


def test_nested_paths_attach_their_test_to_the_step_before():
    query = parse(
        "PREFIX : <http://e/> SELECT ?s WHERE { STREAM <http://s> [NOW] { ?v :delayAt ?s } "
        "?s (^:beg/[:means :subway]/:end)+ :c . ?s (^:beg[:means]/:end)* ?x . ?s :a/[:b/[:c]] ?y }"
    )
    first, second, third = query.where.elements[1].triples
    beg, means, end = IRI("http://e/beg"), IRI("http://e/means"), IRI("http://e/end")
    subway = PathSequence((means, PathSelf(IRI("http://e/subway"))))
    assert first.predicate == PathMod(
        PathSequence((PathNested(PathInverse(beg), subway), end)), PathModifier.ONE_OR_MORE
    )
    assert second.predicate == PathMod(
        PathSequence((PathNested(PathInverse(beg), means), end)), PathModifier.ZERO_OR_MORE
    )
    inner = PathNested(IRI("http://e/b"), IRI("http://e/c"))
    assert third.predicate == PathNested(IRI("http://e/a"), inner)


def test_a_bracket_after_a_top_level_step_is_still_a_blank_node_object():
    query = parse("PREFIX : <http://e/> SELECT * WHERE { STREAM <http://s> [NOW] { ?x :p [ :q ?y ] } }")
    first, second = query.where.elements[0].pattern.elements[0].triples
    assert first.predicate == IRI("http://e/p") and second.subject == first.object


def test_a_nested_test_needs_a_step_before_it():
    with pytest.raises(SparqlSyntaxError, match="follows a path step"):
        parse("PREFIX : <http://e/> SELECT * WHERE { STREAM <http://s> [NOW] { ?x ([:q]/:p) ?y } }")


def test_trailing_values_is_rejected_at_its_keyword():
    with pytest.raises(SparqlSyntaxError) as error:
        parse(f"{CEP}WHERE {{ WINDOW :W {{ ?v :p ?s }} }}\n\n  VALUES ?v {{ :a }}")
    assert (error.value.line, error.value.column, error.value.message) == (
        3,
        3,
        "a trailing VALUES clause does not apply to a CQELS query",
    )


def test_a_query_without_windows_is_not_cqels():
    with pytest.raises(SparqlSyntaxError, match="at least one STREAM"):
        parse("SELECT ?s WHERE { ?s ?p ?o }")


def test_dialect_detection_picks_cqels():
    query = parse_event_query(f"select ?x where {{ stream <{S}> [range 3s] {{ ?x ?p ?o }} }}")
    assert query.dialect == CQELS


def test_the_cqels_grammar_has_no_shift_reduce_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    """Nested paths' `[` must not compete with SPARQL's blank-node objects (lark resolves such a
    conflict silently, as a shift)."""
    text = (Path(__file__).resolve().parents[2] / "grammar" / "cqels.lark").read_text(encoding="utf-8")
    lark.logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            lark.Lark(
                text,
                parser="lalr",
                lexer="contextual",
                start="query_unit",
                source_path=PackageResource("rsep.grammar", "cqels.lark"),
                import_paths=[FromPackageLoader("rsep.grammar", ("",))],
            )
    finally:
        lark.logger.setLevel(logging.WARNING)
    assert not [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()]
