"""C-SPARQL's syntax (grammar/csparql.lark) and what it becomes in the event algebra."""

from __future__ import annotations

import logging
from pathlib import Path

import lark
import pytest
from lark.load_grammar import FromPackageLoader, PackageResource

from rsep.grammar import parse_event_query
from rsep.grammar.csparql import CSPARQL
from rsep.grammar.parser import SparqlSyntaxError
from rsep.plugin.algebra.events import (
    TIMESTAMP_FUNCTION,
    ConstructForm,
    CountWindow,
    Duration,
    ReportPolicy,
    SelectForm,
    StreamDecl,
    TimeUnit,
    TimeWindow,
    WindowElement,
)
from rsep.plugin.algebra.sparql import IRI, Aggregate, Filter, FunctionCall, GroupPattern, Var

S = "http://example.org/s"
BODY = "WHERE { ?s ?p ?o }"


def parse(text: str):
    return parse_event_query(text, dialect="c-sparql")


def window_of(text: str):
    return parse(f"SELECT ?s FROM STREAM <{S}> {text} {BODY}").streams[0].window


def test_a_query_becomes_one_merged_window_element():
    query = parse(f"SELECT ?s FROM STREAM <{S}> [RANGE 5m STEP 1m] FROM <http://g> {BODY}")
    assert query.dialect == CSPARQL and query.dialect.report is ReportPolicy.WINDOW_CLOSE
    assert query.streams == (
        StreamDecl(S, None, TimeWindow(Duration(5, TimeUnit.MINUTES), Duration(1, TimeUnit.MINUTES))),
    )
    assert query.static_graphs == ("http://g",)
    (element,) = query.where.elements
    assert isinstance(element, WindowElement) and element.stream is None
    assert isinstance(element.pattern, GroupPattern)
    assert query.name is None


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("[range 3000ms step 1s]", TimeWindow(Duration(3000, TimeUnit.MILLISECONDS), Duration(1))),
        ("[RANGE 3s STEP 1s]", TimeWindow(Duration(3), Duration(1))),
        ("[RANGE 5 m STEP 30 s]", TimeWindow(Duration(5, TimeUnit.MINUTES), Duration(30))),
        ("[RANGE 2h STEP 1.5h]", TimeWindow(Duration(2, TimeUnit.HOURS), Duration(1.5, TimeUnit.HOURS))),
        ("[RANGE 1d TUMBLING]", TimeWindow(Duration(1, TimeUnit.DAYS), Duration(1, TimeUnit.DAYS))),
        ("[ RANGE TRIPLES 10 ]", CountWindow(10)),
    ],
)
def test_windows(text, window):
    assert window_of(text) == window


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        (f"SELECT ?s FROM STREAM <{S}> [RANGE 3s] {BODY}", 1, 55),  # STEP or TUMBLING needed
        (f"SELECT ?s FROM STREAM <{S}> [RANGE 3 STEP 1s] {BODY}", 1, 53),  # a unit is needed
        (f"SELECT ?s FROM STREAM <{S}> [RANGE 3min STEP 1s] {BODY}", 1, 53),
        (f"SELECT ?s FROM STREAM <{S}> [RANGE 0s STEP 1s] {BODY}", 1, 53),  # at the duration
        (f"SELECT ?s FROM STREAM <{S}> [RANGE TRIPLES 0] {BODY}", 1, 11),
        (f"SELECT ?s FROM <http://g> {BODY}", 1, 1),  # no stream
    ],
)
def test_bad_windows_are_located(text, line, column):
    with pytest.raises(SparqlSyntaxError) as error:
        parse(text)
    assert (error.value.line, error.value.column) == (line, column), str(error.value)


def test_register_query_and_stream():
    query = parse(
        f"REGISTER QUERY q1 AS PREFIX : <http://e/> SELECT ?s FROM STREAM <{S}> [RANGE 1s STEP 1s] {BODY}"
    )
    assert query.name == "q1" and query.prologue.prefixes == (("", "http://e/"),)
    stream = parse(
        f"register stream Out-1 computed every 1m as SELECT ?s FROM STREAM <{S}> [RANGE 5m STEP 1m] {BODY}"
    )
    assert stream.name == "Out-1"


def test_computed_every_must_match_the_step():
    with pytest.raises(SparqlSyntaxError, match="COMPUTED EVERY 60s differs from the STEP"):
        parse(
            f"REGISTER STREAM s COMPUTED EVERY 1m AS SELECT ?s FROM STREAM <{S}> [RANGE 5m STEP 30s] {BODY}"
        )


def test_timestamp_parses_to_the_extension_function():
    where = f"WHERE {{ ?s ?p ?o FILTER(TimeStamp(?s, <{S}>) > 3) }}"
    query = parse(f"SELECT ?s FROM STREAM <{S}> [RANGE 1s STEP 1s] {where}")
    pattern = query.where.elements[0].pattern
    (flt,) = [e for e in pattern.elements if isinstance(e, Filter)]
    assert flt.expr.left == FunctionCall(IRI(TIMESTAMP_FUNCTION), (Var("s"), IRI(S)))


def test_aggregates_group_by_having():
    modifiers = "GROUP BY ?s HAVING (COUNT(?o) > 3)"
    query = parse(f"SELECT ?s (COUNT(?o) AS ?n) FROM STREAM <{S}> [RANGE 1s STEP 1s] {BODY} {modifiers}")
    assert query.modifiers.group_by[0].expr == Var("s")
    assert isinstance(query.modifiers.having[0].left, Aggregate)


def test_sparql_static_rules_still_apply():
    with pytest.raises(SparqlSyntaxError, match="neither a GROUP BY key nor aggregated"):
        parse(f"SELECT ?p (COUNT(?o) AS ?n) FROM STREAM <{S}> [RANGE 1s STEP 1s] {BODY} GROUP BY ?s")


def test_construct_and_ask():
    construct = parse(f"CONSTRUCT {{ ?s ?p ?o }} FROM STREAM <{S}> [RANGE 1s STEP 1s] {BODY}")
    assert isinstance(construct.form, ConstructForm) and len(construct.form.template) == 1
    ask = parse(f"ASK FROM STREAM <{S}> [RANGE 1s STEP 1s] {BODY}")
    assert ask.form == SelectForm((), distinct=True)


def test_trailing_values_is_rejected_at_its_keyword():
    with pytest.raises(SparqlSyntaxError) as error:
        parse(f"SELECT ?s FROM STREAM <{S}> [RANGE 1s STEP 1s]\n{BODY}\n   values ?s {{ <http://a> }}")
    assert (error.value.line, error.value.column, error.value.message) == (
        3,
        4,
        "a trailing VALUES clause does not apply to a C-SPARQL query",
    )


def test_dialect_detection_picks_c_sparql():
    query = parse_event_query(f"select ?s from stream <{S}> [range 1s step 1s] {BODY}")
    assert query.dialect == CSPARQL


@pytest.mark.parametrize("name", ["csparql", "cqels"])
def test_dialect_grammars_have_no_lalr_conflicts(name, caplog):
    """As tests/grammar checks for sparql11.lark: lark resolves a shift/reduce conflict silently."""
    path = Path(__file__).resolve().parents[2] / "grammar" / f"{name}.lark"
    lark.logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            lark.Lark(
                path.read_text(encoding="utf-8"),
                parser="lalr",
                start="query_unit",
                source_path=PackageResource("rsep.grammar", f"{name}.lark"),
                import_paths=[FromPackageLoader("rsep.grammar", ("",))],
            )
    finally:
        lark.logger.setLevel(logging.WARNING)
    assert not [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()]
