"""A sub-SELECT as the whole WHERE of an EP-SPARQL query (rule (5)'s shape): every solution of
its pattern is projected, expressions computed, before the outer SELECT or CONSTRUCT sees it;
what needs all solutions at once (DISTINCT, aggregates, modifiers) is refused with a position."""

from __future__ import annotations

import pytest

from rsep.grammar import SparqlSyntaxError, parse_event_query
from tests.epsparql.harness import run_rsep

EX = "http://example.org/"
INT = "<http://www.w3.org/2001/XMLSchema#integer>"
EVENTS = [
    (1, [(f"<{EX}x>", f"<{EX}p>", f'"2"^^{INT}')]),
    (2, [(f"<{EX}x>", f"<{EX}q>", f'"5"^^{INT}')]),
    (3, [(f"<{EX}y>", f"<{EX}q>", f'"7"^^{INT}')]),  # no ?y :p before it
    (4, [(f"<{EX}x>", f"<{EX}q>", f'"9"^^{INT}')]),
]
INNER = f"""SELECT ((?a + ?b) AS ?total) ?x
  WHERE {{ {{ ?x <{EX}p> ?a }} SEQ {{ ?x <{EX}q> ?b }} }}"""


def test_the_outer_select_sees_only_what_the_sub_select_projects():
    rows = run_rsep(f"SELECT * WHERE {{ {INNER} }}", EVENTS)
    assert [(r["start"], r["end"], r["bindings"]) for r in rows] == [
        (1, 2, {"total": f'"7"^^{INT}', "x": f"<{EX}x>"}),
        (1, 4, {"total": f'"11"^^{INT}', "x": f"<{EX}x>"}),
    ]
    outer = run_rsep(f"SELECT ?total ?a WHERE {{ {INNER} }}", EVENTS)
    assert [r["bindings"] for r in outer] == [{"total": f'"7"^^{INT}'}, {"total": f'"11"^^{INT}'}]


def test_a_construct_template_reads_the_computed_variables():
    rule = f"CONSTRUCT {{ ?x <{EX}total> ?total }} WHERE {{ {INNER} }}"
    rows = run_rsep(rule, EVENTS)
    assert [r["triples"] for r in rows] == [
        [f'<{EX}x> <{EX}total> "7"^^{INT} .'],
        [f'<{EX}x> <{EX}total> "11"^^{INT} .'],
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"SELECT * WHERE {{ SELECT DISTINCT ?x WHERE {{ ?x <{EX}p> ?a }} }}", "DISTINCT"),
        (f"SELECT * WHERE {{ SELECT (COUNT(?x) AS ?n) WHERE {{ ?x <{EX}p> ?a }} }}", "aggregates"),
        (f"SELECT * WHERE {{ SELECT ?x WHERE {{ ?x <{EX}p> ?a }} LIMIT 1 }}", "LIMIT"),
        (
            f"SELECT * WHERE {{ {{ SELECT ?x WHERE {{ ?x <{EX}p> ?a }} }} SEQ {{ ?x <{EX}q> ?b }} }}",
            "a sub-SELECT may only be the whole WHERE",
        ),
    ],
)
def test_what_needs_all_solutions_is_refused_with_a_position(text, message):
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query(text, source="q.rq", dialect="ep-sparql")
    assert message in str(caught.value)
    assert str(caught.value).startswith("q.rq:1:")


def test_the_printer_shows_the_projection_between_pattern_and_form():
    from rsep.plugin.algebra.printer import dump

    text = dump(parse_event_query(f"SELECT * WHERE {{ {INNER} }}", dialect="ep-sparql"))
    assert "PROJECT ?total ?x" in text.splitlines()
