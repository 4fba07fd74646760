"""Which SPARQL 1.1 constructs an EP-SPARQL query takes, and how it refuses the others
(docs/semantics.md, "SPARQL 1.1 in EP-SPARQL"): solution modifiers, property paths over
triple occurrences, the paper's draft projection syntax, and errors that point where the
construct is written, in EP-SPARQL's words (not another dialect's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.endpoint.app import create_app
from rsep.endpoint.cli import main
from rsep.grammar import SparqlSyntaxError, parse_event_query
from rsep.plugin.algebra.printer import dump
from tests.epsparql.harness import run_rsep

EX = "http://example.org/"
INT = "<http://www.w3.org/2001/XMLSchema#integer>"
P = f"PREFIX : <{EX}>\n"
a, b, c, d = (f"<{EX}{x}>" for x in "abcd")
p, q, r = (f"<{EX}{x}>" for x in "pqr")


def n(value: int) -> str:
    return f'"{value}"^^{INT}'


# --------------------------------------------------------------------------- refused, with a position


@pytest.mark.parametrize(
    ("body", "line", "column", "message"),
    [
        ("SELECT ?x WHERE { ?x :p ?y } GROUP BY ?x", 2, 30, "GROUP BY groups the whole solution set"),
        ("SELECT ?x WHERE { ?x :p ?y }\nHAVING (?x = :a)", 3, 1, "HAVING filters groups"),
        ("SELECT ?x WHERE { ?x :p ?y } ORDER BY ?y", 2, 30, "ORDER BY sorts the whole solution set"),
        ("SELECT (COUNT(?x) AS ?n) WHERE { ?x :p ?y }", 2, 9, "aggregates (COUNT) need the whole"),
        ("SELECT * WHERE { ?x :p ?y FILTER EXISTS { ?y :p ?z } }", 2, 34, "EXISTS and NOT EXISTS"),
        ("SELECT * WHERE { ?x :p ?y FILTER NOT EXISTS { ?y :p ?z } }", 2, 34, "EXISTS and NOT EXISTS"),
        ("SELECT * WHERE { ?x :p ?y MINUS { ?x :q ?z } }", 2, 27, "MINUS is not part of EP-SPARQL"),
        ("SELECT * WHERE { VALUES ?y { :b } }", 2, 18, "VALUES adds no triple occurrence, and its group"),
        ("SELECT * WHERE { ?x :p ?y { BIND(1 AS ?o) } }", 2, 29, "BIND adds no triple occurrence"),
        ("SELECT * WHERE { { VALUES ?y { :b } } SEQ { ?y :q ?z } }", 2, 20, "VALUES adds no triple"),
        ("SELECT * WHERE { VALUES ?y { :b } OPTIONAL { ?y :q ?z } }", 2, 18, "VALUES adds no triple occ"),
        ("SELECT * WHERE { BIND(getDURATION() AS ?d) ?x :p ?y }", 2, 18, "getDURATION(), getSTARTTIME()"),
        ("SELECT * WHERE { ?x :p ?y\n  BIND(?y AS ?x) }", 3, 14, "BIND variable ?x is already in scope"),
        ("SELECT * WHERE { ?x :p ?y GRAPH <urn:kb> { ?y :k ?c } BIND(?c AS ?d) }", 2, 55, "this BIND reads"),
        ("SELECT ?x WHERE { SELECT ?x { ?x :p ?y } }\nVALUES ?x { :a }", 3, 1, "a trailing VALUES clause"),
        ("SELECT * WHERE { SERVICE <urn:s> { ?x :p ?y } }", 2, 18, "SERVICE is not supported"),
        ("ASK { ?x :p ?y }", 2, 1, "an EP-SPARQL query reports solutions as they are detected: ASK"),
        ("DESCRIBE ?x WHERE { ?x :p ?y }", 2, 1, "DESCRIBE is not supported"),
        ("CONSTRUCT { ?x :r ?y } WHERE { ?x :p ?y } LIMIT 3", 2, 43, "LIMIT and OFFSET do not apply"),
        ("SELECT * WHERE { ?x :p* ?y }", 2, 21, "the path modifier * (zero or more steps)"),
        ("SELECT * WHERE { ?x :p/:q+ ?y }", 2, 24, "the path modifier + (one or more steps)"),
        ("SELECT * WHERE { ?x (:p/:q)? ?y }", 2, 21, "the path modifier ? (zero or one step)"),
        ("SELECT ?x AS ?y WHERE { ?x :p ?z }", 2, 8, "?x AS ?y (the paper's draft syntax) could mean either"),
        ("SELECT * WHERE { ?x :p ?y SEQ { ?y :q ?z } }", 2, 27, "SEQ joins two group graph patterns"),
        ("SELECT (1 AS ?y) WHERE { ?x :p ?y }", 2, 14, "?y is already in scope in the WHERE clause"),
        ("SELECT (1 AS ?w) WHERE { ?x :p ?y BIND(2 AS ?w) }", 2, 14, "?w is already in scope in the WHERE"),
        ("SELECT (1 AS ?w) WHERE { ?x :p ?y VALUES ?w { 1 } }", 2, 14, "?w is already in scope in the WHERE"),
        ("SELECT (1 AS ?w) WHERE { ?x :p ?y } VALUES ?w { 1 }", 2, 14, "?w is already in scope in the WHERE"),
        (
            "SELECT (1 AS ?w) WHERE { ?x :p ?y } LIMIT 5 VALUES ?w { 1 }",
            2,
            14,
            "?w is already in scope in the trailing VALUES clause",
        ),
        (
            "SELECT * WHERE { ?x :p ?y } VALUES ?x { :a } VALUES ?y { :b }",
            2,
            46,
            "a query takes one trailing",
        ),
        (
            "SELECT * WHERE { ?x :p ?y } LIMIT 1 VALUES ?x { :a } VALUES ?y { :b }",
            2,
            54,
            "unexpected 'VALUES'",
        ),
    ],
)
def test_what_ep_sparql_refuses_is_reported_where_it_is_written(
    body: str, line: int, column: int, message: str
):
    """Plain SPARQL is EP-SPARQL, so its errors are EP-SPARQL's even when the dialect is
    detected (before, BIND or ASK got C-SPARQL's "reads at least one FROM STREAM")."""
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query(P + body, source="q.rq")
    assert str(caught.value).startswith(f"q.rq:{line}:{column}: {message}"), str(caught.value)


def test_a_refusal_through_the_cli_is_one_positioned_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    query = tmp_path / "q.rq"
    query.write_text(P + "SELECT * WHERE { ?x :p ?y } ORDER BY ?x\n", encoding="utf-8")
    events = tmp_path / "e.trig"
    events.write_text("", encoding="utf-8")
    code = main(["run", str(query), "--stream", f"{EX}s={events}", "--engine", "inprocess"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"{query}:2:29: ORDER BY sorts the whole solution set") and err.count("\n") == 1


UNKNOWN_FUNCTION = "unsupported extension function <urn:f>, in a FILTER or BIND the NFA evaluates"


@pytest.mark.parametrize(
    ("body", "line", "column"),
    [
        ("SELECT * WHERE { { ?x :p ?y } SEQ { ?x :q ?z\n  FILTER(<urn:f>(?y)) } }", 3, 10),
        ("SELECT * WHERE { ?x :p ?y\n  BIND(<urn:f>(?y) AS ?w) }", 3, 8),
    ],
)
def test_an_unknown_function_the_nfa_would_evaluate_is_refused_where_it_is_called(
    body: str, line: int, column: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """CLI: one line `FILE:line:col: message`; endpoint: 400 with the line and column."""
    query = tmp_path / "q.rq"
    query.write_text(P + body + "\n", encoding="utf-8")
    events = tmp_path / "e.trig"
    events.write_text("", encoding="utf-8")
    code = main(["run", str(query), "--stream", f"{EX}s={events}", "--engine", "inprocess"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"{query}:{line}:{column}: {UNKNOWN_FUNCTION}\n")
    app = create_app(
        {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True}
    )
    response = app.test_client().post(
        "/queries",
        data=P + body,
        content_type="application/sparql-query",
        headers={"Accept": "application/json"},
    )
    error = response.get_json()
    assert (response.status_code, error["line"], error["column"]) == (400, line, column)
    assert error["message"] == UNKNOWN_FUNCTION


def test_a_sub_select_without_where_is_told_to_write_it():
    text = P + "CONSTRUCT { ?x :r ?y } { SELECT ?x ?y { ?x :p ?y } SEQ { ?x :q ?z } }"
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query(text, source="q.rq")
    assert str(caught.value).startswith("q.rq:2:52: SEQ joins two group graph patterns")
    assert "write WHERE { P1 } SEQ { P2 }" in str(caught.value)


# --------------------------------------------------------------------------- solution modifiers

STREAM = [
    (1.0, [(a, q, n(1))]),
    (2.0, [(b, q, n(2)), (a, q, n(1))]),
    (3.0, [(c, q, n(3))]),
    (4.0, [(a, q, n(4))]),
]


@pytest.mark.parametrize(
    ("modifiers", "expected"),
    [
        ("LIMIT 1", [(1, a)]),
        ("LIMIT 2", [(1, a), (2, a)]),
        ("OFFSET 3", [(3, c), (4, a)]),
        ("LIMIT 2 OFFSET 1", [(2, a), (2, b)]),
        ("OFFSET 1 LIMIT 2", [(2, a), (2, b)]),
        ("LIMIT 0", []),
    ],
)
def test_limit_and_offset_take_answers_in_detection_order(modifiers: str, expected: list[tuple[int, str]]):
    """Answers are ordered by detection (end time; at one time, by rsep's detection order),
    and never retracted: LIMIT n reports the first n, OFFSET m skips the first m."""
    rows = run_rsep(P + f"SELECT ?x WHERE {{ ?x :q ?v }} {modifiers}", STREAM)
    assert [(row["end"], row["bindings"]["x"]) for row in rows] == expected  # type: ignore[index]


def test_distinct_comes_before_limit():
    rows = run_rsep(P + "SELECT DISTINCT ?x WHERE { ?x :q ?v } LIMIT 3", STREAM)
    assert [row["bindings"] for row in rows] == [{"x": a}, {"x": b}, {"x": c}]


def test_limit_on_a_sequence_counts_its_matches_not_its_events():
    events = [(1.0, [(a, p, b)]), (2.0, [(a, p, c)]), (3.0, [(a, q, d)]), (4.0, [(a, q, c)])]
    rows = run_rsep(P + "SELECT * WHERE { { ?x :p ?y } SEQ { ?x :q ?z } } LIMIT 3", events)
    assert [(row["start"], row["end"]) for row in rows] == [(1, 3), (2, 3), (1, 4)]


# --------------------------------------------------------------------------- property paths


def test_a_sequence_path_joins_occurrences_of_different_graphs_and_times():
    """Issue item 2's case: `a p b` and `b p c` in two graphs (here also at two times)."""
    events = [(1.0, [(a, p, b)]), (1.0, [(c, r, d)]), (2.0, [(b, p, c)])]
    rows = run_rsep(P + "SELECT * WHERE { ?x :p/:p ?z }", events)
    assert rows == [{"start": 1, "end": 2, "bindings": {"x": a, "z": c}}]


def test_inverse_and_alternative_paths():
    events = [(1.0, [(a, p, b)]), (2.0, [(c, q, b)]), (3.0, [(b, r, d)])]
    inverse = run_rsep(P + "SELECT * WHERE { ?x :p/^:q ?z }", events)
    assert [(row["start"], row["end"], row["bindings"]) for row in inverse] == [(1, 2, {"x": a, "z": c})]
    alternative = run_rsep(P + "SELECT * WHERE { ?x (:p/:r)|:q ?z }", events)
    assert sorted((row["start"], row["end"], row["bindings"]["z"]) for row in alternative) == [  # type: ignore[index]
        (1, 3, d),
        (2, 2, b),
    ]


def test_a_one_triple_path_stays_one_occurrence():
    events = [(1.0, [(a, p, b)]), (2.0, [(a, q, c)])]
    rows = run_rsep(P + "SELECT * WHERE { ?x :p|:q ?z }", events)
    assert [(row["start"], row["end"]) for row in rows] == [(1, 1), (2, 2)]


# --------------------------------------------------------------------------- large BGPs


def test_a_bgp_of_twelve_triple_patterns_runs_as_one_join():
    """A join is one part whatever its size: no detection order is enumerated (6 patterns
    used to be rejected with 4683 orders)."""
    chain = [(f"<{EX}n{i}>", p, f"<{EX}n{i + 1}>") for i in range(12)]
    events = [(float(i // 3), [triple]) for i, triple in enumerate(chain)]
    body = " ".join(f"?v{i} :p ?v{i + 1} ." for i in range(12))
    rows = run_rsep(P + f"SELECT ?v0 ?v12 WHERE {{ {body} }}", events)
    assert rows == [{"start": 0, "end": 3, "bindings": {"v0": f"<{EX}n0>", "v12": f"<{EX}n12>"}}]


# --------------------------------------------------------------------------- the paper's projection syntax


def test_the_draft_projection_syntax_means_the_sparql_11_one():
    """Queries (5) and (6) write `?count AS ?prevcount + 1` and `?sum / ?count AS ?average`."""
    where = "WHERE { ?x :p ?prevcount ; :q ?prevsum }"
    draft = P + "SELECT ?count AS ?prevcount + 1 ?prevsum / ?count AS ?average " + where
    sparql = P + "SELECT ((?prevcount + 1) AS ?count) ((?prevsum / ?count) AS ?average) " + where
    assert dump(parse_event_query(draft)) == dump(parse_event_query(sparql))
    events = [(1.0, [(a, p, n(3)), (a, q, n(10))])]
    assert run_rsep(draft, events)[0]["bindings"] == {
        "count": n(4),
        "average": '"2.5"^^<http://www.w3.org/2001/XMLSchema#decimal>',
    }
