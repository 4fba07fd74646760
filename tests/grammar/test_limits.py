"""The bounds check before any parser (rsep.grammar.limits): what it counts, what it skips, and
where it says a text went past a bound."""

from __future__ import annotations

import pytest

from rsep.grammar import SparqlSyntaxError, parse_event_query, parse_query, parse_update
from rsep.grammar.limits import MAX_CHAIN, MAX_DEPTH, first_violation
from rsep.grammar.parser import QueryTooComplex


def _nested(depth: int) -> str:
    return "SELECT * WHERE { FILTER(" + "(" * depth + "1" + ")" * depth + ") }"


def test_depth_at_the_limit_parses_and_past_it_is_refused_at_the_bracket() -> None:
    parse_query(_nested(MAX_DEPTH - 2))  # the group and FILTER's parenthesis are two levels
    with pytest.raises(QueryTooComplex) as caught:
        parse_query(_nested(MAX_DEPTH - 1), source="query")
    assert str(caught.value) == f"query:1:{24 + MAX_DEPTH - 1}: nested more than {MAX_DEPTH} levels deep"
    assert caught.value.static


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE { FILTER(" + "+".join(["1"] * (MAX_CHAIN + 2)) + ") }",
        "SELECT * WHERE { FILTER(" + "-".join(["1"] * (MAX_CHAIN + 2)) + ") }",
        "SELECT * WHERE { " + " UNION ".join(["{?s ?p ?o}"] * (MAX_CHAIN + 2)) + " }",
        "SELECT * WHERE { ?s ?p ?o " + "OPTIONAL { ?s ?p ?o } " * (MAX_CHAIN + 2) + "}",
        "SELECT * WHERE { ?s " + "/".join(["<p:a>"] * (MAX_CHAIN + 2)) + " ?o }",
        "SELECT * WHERE { ?s ?p (" + " 1" * (MAX_CHAIN + 2) + ") }",
        "SELECT * WHERE { " + " . ".join(["?s ?p ?o"] * (MAX_CHAIN + 2)) + " }",
        "SELECT * WHERE { FILTER(" + "!" * MAX_DEPTH + "true) }",
        "SELECT * WHERE { ?s ?p " + "[ ?p " * MAX_DEPTH + "1" + "]" * MAX_DEPTH + " }",
        # a chain under the limit in every bracket, nested: the weight bound
        "SELECT * WHERE { FILTER(" + ("(1" + "+1" * 30 + "+") * 100 + "1" + ")" * 100 + ") }",
    ],
)
def test_chains_and_their_nesting_are_bounded(text: str) -> None:
    assert first_violation(text) is not None
    with pytest.raises(QueryTooComplex):
        parse_query(text)


@pytest.mark.parametrize(
    "text",
    [
        'SELECT * WHERE { ?s ?p "' + "{" * 1000 + '" }',
        "SELECT * WHERE { ?s ?p '''" + "(" * 1000 + "''' }",
        "SELECT * WHERE { ?s ?p ?o } # " + "{" * 1000,
        "SELECT * WHERE { ?s <http://a/" + "(" * 1000 + "> ?o }",
        "PREFIX ex: <http://ex/> SELECT * WHERE { ?s ex:a-" + "-b" * 2000 + " ?o }",
        "SELECT * WHERE { VALUES ?x { " + " ".join(f"<x:{i}>" for i in range(5000)) + " } }",
        "SELECT * WHERE { VALUES (?x ?y) { " + " ".join(f"(<x:{i}> 'a-b')" for i in range(5000)) + " } }",
        "SELECT * WHERE { ?s ?p ?o FILTER(?o IN (" + ",".join(str(i) for i in range(5000)) + ")) }",
    ],
)
def test_strings_iris_comments_names_and_value_lists_do_not_count(text: str) -> None:
    assert first_violation(text) is None


def test_updates_and_event_queries_are_bounded() -> None:
    with pytest.raises(QueryTooComplex):
        parse_update("INSERT { ?s ?p ?o } WHERE " + "{" * 500 + "?s ?p ?o" + "}" * 500, source="update")
    deep = "SELECT ?s FROM STREAM <http://e/s> [RANGE 1s STEP 1s] WHERE " + "{" * 500 + "?s ?p ?o" + "}" * 500
    with pytest.raises(SparqlSyntaxError, match="nested more than"):
        parse_event_query(deep, source="query")
