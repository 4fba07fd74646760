"""BIND and VALUES in EP-SPARQL queries (docs/semantics.md, "SPARQL 1.1 in EP-SPARQL"): where
SPARQL 1.1 allows them in a group, over streams of several timestamps, under the policies, and
what the compiler makes of them. The conformance fixtures (tests/fixtures/epsparql/bind-*,
values-*) run through `rsep run`, a CONSTRUCT rule with a BIND among them."""

from __future__ import annotations

import pyoxigraph
import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.printer import dump
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.nfa.automaton import IntervalValues
from rsep.plugin.nfa.interval_checks import IntervalChecks
from tests.epsparql.harness import Event, run_rsep

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
P = f"PREFIX : <{EX}>\nPREFIX xsd: <{XSD}>\n"
a, b, c, d, e = (f"<{EX}{x}>" for x in "abcde")
p, q, r = (f"<{EX}{x}>" for x in "pqr")


def n(value: int | str, datatype: str = "integer") -> str:
    return f'"{value}"^^<{XSD}{datatype}>'


def rows(
    query: str, events: list[Event], policy: str | None = None, kb: str | None = None
) -> list[tuple[object, ...]]:
    """(start, end, bindings) of each solution rsep reports, in its order."""
    lines = run_rsep(P + query, events, policy=policy, kb=kb)
    return [(line["start"], line["end"], line["bindings"]) for line in lines]


# --------------------------------------------------------------------------- where a group allows them


def test_bind_in_an_optional_side_extends_the_optional_solution():
    """LeftJoin(P, Extend(Q)): the optional side's BIND binds only where the optional side
    matched (ending no later than the mandatory side, docs/semantics.md)."""
    events = [(1.0, [(a, q, n(3))]), (2.0, [(a, p, b)]), (3.0, [(c, p, d)])]
    query = "SELECT * WHERE { ?x :p ?y OPTIONAL { ?x :q ?z BIND(?z * 10 AS ?big) } }"
    assert rows(query, events) == [
        (1, 2, {"x": a, "y": b, "z": n(3), "big": n(30)}),
        (3, 3, {"x": c, "y": d}),
    ]


def test_bind_in_union_branches_says_which_branch_matched():
    events = [(1.0, [(a, p, b)]), (2.0, [(c, q, d)])]
    query = 'SELECT * WHERE { { ?x :p ?y BIND("p" AS ?via) } UNION { ?x :q ?y BIND("q" AS ?via) } }'
    assert rows(query, events) == [
        (1, 1, {"x": a, "y": b, "via": '"p"'}),
        (2, 2, {"x": c, "y": d, "via": '"q"'}),
    ]


def test_bind_in_a_nested_group_joins_the_enclosing_group_on_its_variable():
    """{ ?x :p ?y { ?y :q ?z BIND(?z AS ?w) } ?w :r ?v }: the nested group's ?w joins ?w :r ?v."""
    events = [(1.0, [(d, r, e)]), (2.0, [(a, p, b)]), (3.0, [(b, q, d)]), (4.0, [(b, q, c)])]
    query = "SELECT ?x ?w ?v WHERE { ?x :p ?y { ?y :q ?z BIND(?z AS ?w) } ?w :r ?v }"
    assert rows(query, events) == [(1, 3, {"x": a, "w": d, "v": e})]


def test_bind_in_the_optional_side_of_optionalseq():
    """SeqRightJoin: the earlier optional side with its BIND joins when it ends before the
    mandatory side starts; else the mandatory side stands alone, without ?level."""
    events = [(1.0, [(a, p, n(1))]), (2.0, [(a, q, b)]), (3.0, [(c, q, d)])]
    query = "SELECT * WHERE { { ?x :p ?v BIND(?v + 1 AS ?level) } OPTIONALSEQ { ?x :q ?y } }"
    assert rows(query, events) == [
        (1, 2, {"x": a, "v": n(1), "level": n(2), "y": b}),
        (3, 3, {"x": c, "y": d}),
    ]


def test_values_in_an_equals_operand_restricts_it():
    events = [(1.0, [(a, p, b), (a, q, c)]), (2.0, [(b, p, b), (b, q, c)]), (3.0, [(a, p, d)])]
    query = "SELECT * WHERE { { ?x :p ?y VALUES ?x { :a } } EQUALS { ?x :q ?z } }"
    assert rows(query, events) == [(1, 1, {"x": a, "y": b, "z": c})]


def test_a_values_literal_joins_the_stream_term_oxigraph_stores():
    """`1.50` in VALUES is the decimal 1.5, which the stream's `1.50` is stored as."""
    events = [(1.0, [(a, p, n("1.50", "decimal"))]), (2.0, [(b, p, n("01"))])]
    query = "SELECT ?x WHERE { ?x :p ?v VALUES ?v { 1.50 01 } }"
    assert rows(query, events) == [(1, 1, {"x": a}), (2, 2, {"x": b})]


def test_a_trailing_values_clause_after_limit():
    events = [(1.0, [(a, p, b)]), (2.0, [(c, p, d)]), (3.0, [(a, p, e)])]
    query = "SELECT ?x ?y WHERE { ?x :p ?y } LIMIT 5 VALUES ?x { :a }"
    assert rows(query, events) == [(1, 1, {"x": a, "y": b}), (3, 3, {"x": a, "y": e})]


def test_bind_and_values_written_before_any_triple_pattern():
    """`{ VALUES ?k { 1 2 } BIND(?k * 10 AS ?j) ?x :p ?k }`: Extend over the table, joined with
    the triple pattern (the group's interval is the triple's)."""
    events = [(1.0, [(a, p, n(2))]), (2.0, [(b, p, n(3))])]
    query = "SELECT * WHERE { VALUES ?k { 1 2 } BIND(?k * 10 AS ?j) ?x :p ?k }"
    assert rows(query, events) == [(1, 1, {"k": n(2), "j": n(20), "x": a})]


def test_a_bind_before_any_pattern_does_not_see_what_the_patterns_after_it_bind():
    """The UNDEF row leaves ?k unbound for the BIND, so COALESCE takes :d, although ?x :p ?k
    binds ?k in every solution of the group."""
    events = [(1.0, [(a, p, n(2))])]
    query = "SELECT * WHERE { VALUES ?k { UNDEF } BIND(COALESCE(?k, :d) AS ?j) ?x :p ?k }"
    assert rows(query, events) == [(1, 1, {"k": n(2), "j": d, "x": a})]


# --------------------------------------------------------------------------- policies


def test_a_bind_between_seq_operands_keeps_the_policies_choices():
    """?k copies ?y: the chronological (recent) policy pairs each :q with the earliest
    (latest) waiting :p, as it does without the BIND, and consumes both."""
    events = [(1.0, [(a, p, b)]), (2.0, [(c, p, b)]), (3.0, [(b, q, d)]), (4.0, [(b, q, e)])]
    query = "SELECT ?x ?z WHERE { { ?x :p ?y BIND(?y AS ?k) } SEQ { ?k :q ?z } }"
    assert len(rows(query, events)) == 4
    assert rows(query, events, policy="chronological") == [(1, 3, {"x": a, "z": d}), (2, 4, {"x": c, "z": e})]
    assert rows(query, events, policy="recent") == [(2, 3, {"x": c, "z": d}), (1, 4, {"x": a, "z": e})]


def test_values_rows_of_one_partial_match_are_all_reported_under_the_policies():
    """The solutions that differ only in a VALUES row are built from the same inputs, so
    they are one match (docs/semantics.md, "Selection and consumption policies"): each
    policy reports both rows together, then consumes the inputs once."""
    events = [(1.0, [(a, p, b)]), (2.0, [(b, q, c)]), (3.0, [(c, p, b)]), (4.0, [(b, q, d)])]
    query = 'SELECT * WHERE { { ?x :p ?y VALUES ?lvl { UNDEF "hi" } } SEQ { ?y :q ?z } }'
    hi = '"hi"'
    expected = [
        (1, 2, {"lvl": hi, "x": a, "y": b, "z": c}),
        (1, 2, {"x": a, "y": b, "z": c}),
        (3, 4, {"lvl": hi, "x": c, "y": b, "z": d}),
        (3, 4, {"x": c, "y": b, "z": d}),
    ]
    assert rows(query, events, policy="chronological") == expected
    assert rows(query, events, policy="recent") == expected
    assert len(rows(query, events)) == 6  # unrestricted also pairs a p b with b q d


def test_a_values_row_that_does_not_fit_moves_on_with_its_partial_match():
    """The row ?z = :c cannot take b q d, the row ?z = :d can: the partial match (a p b) moves
    on with it and is consumed, so the later b q c finds no partial match left."""
    events = [(1.0, [(a, p, b)]), (2.0, [(b, q, d)]), (3.0, [(b, q, c)])]
    query = "SELECT * WHERE { { ?x :p ?y VALUES ?z { :c :d } } SEQ { ?y :q ?z } }"
    assert rows(query, events) == [(1, 2, {"x": a, "y": b, "z": d}), (1, 3, {"x": a, "y": b, "z": c})]
    for policy in ("chronological", "recent"):
        assert rows(query, events, policy=policy) == [(1, 2, {"x": a, "y": b, "z": d})]


def test_union_branches_over_the_same_input_are_one_match_under_the_policies():
    events = [(1.0, [(a, p, b)])]
    query = "SELECT * WHERE { { ?x :p ?y BIND(1 AS ?u) } UNION { ?x :p ?y BIND(2 AS ?w) } }"
    expected = [(1, 1, {"u": n(1), "x": a, "y": b}), (1, 1, {"w": n(2), "x": a, "y": b})]
    for policy in (None, "chronological", "recent"):
        assert rows(query, events, policy=policy) == expected


# --------------------------------------------------------------------------- the compiled query


def test_a_duration_bound_under_a_bind_still_bounds_memory():
    """BIND and VALUES keep the interval, so a getDURATION() bound beneath them is pushed as the
    window as it is without them (EP-SPARQL §5)."""
    text = (
        P + "SELECT * WHERE { { ?x :p ?y } SEQ { ?x :q ?z } "
        'FILTER(getDURATION() < "PT2S"^^xsd:dayTimeDuration) BIND(getDURATION() AS ?d) }'
    )
    assert compile_query(parse_event_query(text)).automaton.within == 2.0


def test_select_star_projects_bind_and_values_variables():
    text = P + "SELECT * WHERE { ?x :p ?y BIND(1 AS ?one) } VALUES ?tag { :t }"
    assert compile_query(parse_event_query(text)).output_vars == ("one", "tag", "x", "y")


def test_a_values_step_joins_the_compatible_rows_in_row_order_whatever_the_run_binds():
    """The table is hashed on the variables a run binds, the rows with UNDEF there are checked
    one by one: a run gets its compatible rows in the table's order, UNDEF ones among them."""
    text = P + "SELECT * WHERE { ?x :p ?y VALUES (?x ?k) { (:a 1) (UNDEF 2) (:c 3) (:a 4) (UNDEF UNDEF) } }"
    spec = compile_query(parse_event_query(text)).automaton.states[0].interval
    assert spec is not None and isinstance(spec.filters[0], IntervalValues)
    undef_x, undef_k = spec.filters[0].markers
    checks = IntervalChecks(spec)
    spans = ((1.0, 1.0),)

    def joined(mapping: dict[str, str]) -> list[dict[str, str]]:
        return checks.extended(spans, mapping)

    assert joined({"x": a, "y": b}) == [
        {"x": a, "y": b, "k": n(1)},
        {"x": a, "y": b, undef_x: "", "k": n(2)},
        {"x": a, "y": b, "k": n(4)},
        {"x": a, "y": b, undef_x: "", undef_k: ""},
    ]
    assert joined({"x": e, "y": b}) == [
        {"x": e, "y": b, undef_x: "", "k": n(2)},
        {"x": e, "y": b, undef_x: "", undef_k: ""},
    ]
    assert joined({"x": c, "k": n(3)}) == [{"x": c, "k": n(3)}, {"x": c, "k": n(3), undef_x: "", undef_k: ""}]
    assert [row.get("x") for row in joined({"y": b})] == [a, None, c, a, None]


def test_a_values_row_naming_a_variable_twice_binds_it_only_where_its_columns_agree():
    """VALUES (?x ?x): a row whose two columns differ joins nothing; UNDEF in one takes the other."""
    text = P + "SELECT * WHERE { ?x :p ?y VALUES (?x ?x) { (:a :a) (:a :b) (UNDEF :b) (UNDEF UNDEF) } }"
    spec = compile_query(parse_event_query(text)).automaton.states[0].interval
    assert spec is not None
    checks = IntervalChecks(spec)
    spans = ((1.0, 1.0),)
    assert [row["x"] for row in checks.extended(spans, {"x": a, "y": c})] == [a, a]
    assert [row.get("x") for row in checks.extended(spans, {"y": c})] == [a, b, None]


def test_the_dump_shows_where_bind_and_values_apply():
    text = P + "SELECT * WHERE { VALUES ?k { 1 } BIND(?k AS ?j) ?x :p ?y BIND(?y AS ?w) ?w :q ?z }"
    assert dump(parse_event_query(text)).splitlines()[2:] == [
        "MATCH",
        "  JOIN",
        "    BIND(?y AS ?w)",
        "      BIND(?k AS ?j) (reading the 1 below)",
        "        VALUES (?k) { (1) }",
        f"          EVENT t1 ON every stream {{ ?x {p} ?y . }}",
        f"    EVENT t2 ON every stream {{ ?w {q} ?z . }}",
    ]


# --------------------------------------------------------------------------- the knowledge base

KB = f"<{EX}kb> {{ {a} {r} 10 . {b} {r} 20 . }}\n"
NESTED_BIND = "{ ?x :p ?y BIND(COALESCE(?v, 0) AS ?w) }"


def oxigraph_rows(query: str, events: list[Event], kb: str) -> set[frozenset[tuple[str, str]]]:
    """Oxigraph's solutions with the events in the default graph and `kb` loaded as it is."""
    store = pyoxigraph.Store()
    store.load(kb, format=pyoxigraph.RdfFormat.TRIG)
    for _, triples in events:
        store.load(
            "\n".join(f"{s} {pr} {o} ." for s, pr, o in triples), format=pyoxigraph.RdfFormat.N_TRIPLES
        )
    solutions = store.query(query)
    assert isinstance(solutions, pyoxigraph.QuerySolutions)
    names = [v.value for v in solutions.variables]
    return {frozenset((n, str(row[n])) for n in names if row[n] is not None) for row in solutions}


@pytest.mark.parametrize(
    "where",
    [
        f"GRAPH :kb {{ ?x :r ?v }} {NESTED_BIND}",
        f"GRAPH :kb {{ ?x :r ?v }} {NESTED_BIND} {{ ?x :q ?z }}",
        f"GRAPH :kb {{ ?x :r ?v }} {{ ?x :q ?z }} {NESTED_BIND}",
        f"{NESTED_BIND} {{ ?x :q ?z }} GRAPH :kb {{ ?x :r ?v }}",
        "GRAPH :kb { ?x :r ?v } { ?x :p ?y FILTER(!BOUND(?v)) } { ?x :q ?z }",
        "GRAPH :kb { ?x :r ?v } { ?x :q ?z } { ?x :p ?y FILTER(!BOUND(?v)) }",
        "GRAPH :kb { ?x :r ?v } ?x :p ?y FILTER(BOUND(?v))",
    ],
)
def test_a_nested_group_does_not_see_the_knowledge_base_whatever_the_operand_order(where: str):
    """SPARQL §18.2.2: a group's BIND and FILTER read its own group's solution; the knowledge base
    rsep joins into the first leaf is joined with the nested group, not inside it (COALESCE takes
    0, !BOUND holds); a top-level FILTER sees it. One timestamp, so Oxigraph's answers are rsep's."""
    events = [(1.0, [(a, p, c), (b, p, c), (a, q, d), (b, q, d)])]
    query = P + f"SELECT * WHERE {{ {where} }}"
    lines = run_rsep(query, events, kb=KB)
    found = {frozenset(dict(line["bindings"]).items()) for line in lines}  # type: ignore[call-overload]
    assert found == oxigraph_rows(query, events, KB)
    assert len(found) == 2


def test_a_bind_in_a_seq_operand_does_not_see_the_knowledge_base_in_either_order():
    """Before, the BIND saw ?v when its operand was the first (the knowledge base's leaf)."""
    events = [(1.0, [(a, p, c)]), (2.0, [(a, q, d)]), (3.0, [(a, p, e)])]
    first = f"SELECT ?w WHERE {{ GRAPH :kb {{ ?x :r ?v }} {NESTED_BIND} SEQ {{ ?x :q ?z }} }}"
    second = f"SELECT ?w WHERE {{ GRAPH :kb {{ ?x :r ?v }} {{ ?x :q ?z }} SEQ {NESTED_BIND} }}"
    assert rows(first, events, kb=KB) == [(1, 2, {"w": n(0)})]
    assert rows(second, events, kb=KB) == [(2, 3, {"w": n(0)})]
