"""to_sparql: the text of terms, paths, expressions and patterns, the parentheses precedence needs,
the trees SPARQL 1.1 cannot express, and a property test that printed expressions parse back to
the same tree."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyoxigraph
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.grammar.parser import parse_query
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    RDF_LANGSTRING,
    RDF_TYPE,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    Aggregate,
    BinaryOp,
    BNode,
    ConstructQuery,
    DatasetClause,
    Expr,
    Filter,
    FunctionCall,
    GroupPattern,
    In,
    InlineData,
    Literal,
    Node,
    OptionalPattern,
    PathAlternative,
    PathInverse,
    PathMod,
    PathModifier,
    PathNegatedSet,
    PathNested,
    PathSequence,
    Projection,
    Prologue,
    SelectQuery,
    SubSelect,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
)

EX = "http://example.org/"
a, b, c = Var("a"), Var("b"), Var("c")
p, q = IRI(EX + "p"), IRI(EX + "q")


def reparse_expression(expr: Expr) -> Expr:
    query = parse_query(f"SELECT ({to_sparql(expr)} AS ?result) {{}}")
    assert isinstance(query, SelectQuery) and query.projection is not None
    result = query.projection[0].expr
    assert result is not None
    return result


def reparse_path(path: Node) -> Node:
    query = parse_query(f"SELECT * {{ ?s {to_sparql(path)} ?o }}")
    assert isinstance(query, SelectQuery)
    (bgp,) = query.where.elements
    assert isinstance(bgp, BGP)
    return bgp.triples[0].predicate


# --------------------------------------------------------------------------- terms


@pytest.mark.parametrize(
    ("term", "text"),
    [
        (IRI("http://x/a b"), r"<http://x/a\u0020b>"),
        (Literal('say "hi"\n'), r'"say \"hi\"\n"'),
        (Literal("chat", RDF_LANGSTRING, "fr-BE"), '"chat"@fr-BE'),
        (Literal("12", XSD_INTEGER), "12"),
        (Literal("-1.50", XSD_DECIMAL), "-1.50"),
        (Literal("1e-3", XSD_DOUBLE), "1e-3"),
        (Literal("0x1", XSD_INTEGER), '"0x1"^^<http://www.w3.org/2001/XMLSchema#integer>'),
        (Literal("true", XSD_BOOLEAN), "true"),
        (Literal("1", XSD_BOOLEAN), '"1"^^<http://www.w3.org/2001/XMLSchema#boolean>'),
        (BNode("x1"), "_:x1"),
        (Var("name"), "?name"),
    ],
)
def test_terms(term: Node, text: str) -> None:
    assert to_sparql(term) == text


# --------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (BinaryOp("-", a, BinaryOp("-", b, c)), "?a - (?b - ?c)"),
        (BinaryOp("-", BinaryOp("-", a, b), c), "?a - ?b - ?c"),
        (BinaryOp("*", BinaryOp("+", a, b), c), "(?a + ?b) * ?c"),
        (BinaryOp("&&", BinaryOp("||", a, b), c), "(?a || ?b) && ?c"),
        (BinaryOp("=", BinaryOp("=", a, b), c), "(?a = ?b) = ?c"),
        (In(BinaryOp("<", a, b), (c,), negated=True), "(?a < ?b) NOT IN (?c)"),
        (UnaryOp("!", BinaryOp("&&", a, b)), "!(?a && ?b)"),
        (UnaryOp("-", UnaryOp("-", a)), "-(-?a)"),
        (UnaryOp("-", Literal("2", XSD_INTEGER)), "- 2"),
        (BinaryOp("+", a, Literal("-2", XSD_INTEGER)), "?a + -2"),
        (FunctionCall("REGEX", (a, Literal("^x"), Literal("i"))), 'REGEX(?a, "^x", "i")'),
        (FunctionCall(IRI(EX + "f"), (a,), distinct=True), "<http://example.org/f>(DISTINCT ?a)"),
        (Aggregate("COUNT", None, distinct=True), "COUNT(DISTINCT *)"),
        (Aggregate("GROUP_CONCAT", a, separator='"'), r'GROUP_CONCAT(?a; SEPARATOR="\"")'),
    ],
)
def test_expressions_get_the_parentheses_precedence_needs(expr: Expr, text: str) -> None:
    assert to_sparql(expr) == text


def test_printed_expressions_with_every_operator_reparse() -> None:
    expr = BinaryOp("||", UnaryOp("!", In(a, (Literal("1", XSD_INTEGER), p))), BinaryOp(">=", a, b))
    assert reparse_expression(expr) == expr


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (FunctionCall("STR", (a, b)), "STR takes 1..1 arguments"),
        (FunctionCall("NOPE", ()), "unknown built-in"),
        (FunctionCall("BOUND", (Literal("x"),)), "BOUND takes a variable"),
        (Aggregate("SUM", None), "SUM needs an argument"),
        (BinaryOp("%", a, b), "unknown binary operator"),
    ],
)
def test_expressions_without_sparql_syntax_are_rejected(expr: Expr, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_sparql(expr)


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (
            PathSequence((p, PathAlternative((p, q)))),
            "<http://example.org/p> / (<http://example.org/p> | <http://example.org/q>)",
        ),
        (
            PathMod(PathSequence((p, q)), PathModifier.ONE_OR_MORE),
            "(<http://example.org/p> / <http://example.org/q>)+",
        ),
        (
            PathMod(PathMod(p, PathModifier.ZERO_OR_ONE), PathModifier.ZERO_OR_MORE),
            "(<http://example.org/p>?)*",
        ),
        (PathInverse(PathInverse(p)), "^(^<http://example.org/p>)"),
        (PathInverse(PathMod(IRI(RDF_TYPE), PathModifier.ZERO_OR_MORE)), "^a*"),
        (PathNegatedSet((p,), (IRI(RDF_TYPE),)), "!(<http://example.org/p> | ^a)"),
        (PathNegatedSet((), (p,)), "!^<http://example.org/p>"),
    ],
)
def test_paths_print_and_reparse(path: Node, text: str) -> None:
    assert to_sparql(path) == text
    assert reparse_path(path) == path


def test_path_nested_and_empty_negated_sets_have_no_syntax() -> None:
    with pytest.raises(ValueError, match="PathNested"):
        to_sparql(TriplePattern(a, PathNested(p, q), b))
    with pytest.raises(ValueError, match="empty negated property set"):
        to_sparql(PathNegatedSet((), ()))


# --------------------------------------------------------------------------- patterns and queries


def test_group_elements_print_as_readable_blocks() -> None:
    group = GroupPattern(
        (
            BGP((TriplePattern(a, p, b), TriplePattern(a, p, c), TriplePattern(a, IRI(RDF_TYPE), q))),
            OptionalPattern(GroupPattern((Filter(BinaryOp("<", b, c)),))),
            UnionPattern((GroupPattern(), GroupPattern((InlineData((a,), ((None,), (p,))),)))),
        )
    )
    assert to_sparql(group) == (
        "{\n"
        "  ?a <http://example.org/p> ?b, ?c ;\n"
        "    a <http://example.org/q> .\n"
        "  OPTIONAL {\n"
        "    FILTER (?b < ?c)\n"
        "  }\n"
        "  { } UNION {\n"
        "    VALUES (?a) { (UNDEF) (<http://example.org/p>) }\n"
        "  }\n"
        "}"
    )


def test_programmatic_select_with_sub_select_is_accepted_by_oxigraph() -> None:
    inner = SelectQuery((Projection(a),), GroupPattern((BGP((TriplePattern(a, p, b),)),)))
    query = SelectQuery(
        (Projection(a), Projection(Var("n"), BinaryOp("+", b, Literal("1", XSD_INTEGER)))),
        GroupPattern((SubSelect(inner), BGP((TriplePattern(a, q, b),)))),
    )
    text = to_sparql(query)
    pyoxigraph.Store().query(text)
    reparsed = parse_query(text)
    assert isinstance(reparsed, SelectQuery) and reparsed.where.elements[0] == GroupPattern(
        (SubSelect(inner),)
    )


def test_extension_nodes_are_rejected() -> None:
    class MatchElement(Node):
        __slots__ = ()

    with pytest.raises(ValueError, match=r"MatchElement has no SPARQL 1\.1 syntax"):
        to_sparql(GroupPattern((MatchElement(),)))


def test_deeply_nested_groups_and_long_chains_print() -> None:
    group = GroupPattern()
    for _ in range(3000):
        group = GroupPattern((group,))
    assert to_sparql(group).count("{") == 3001
    chain: Expr = a
    for _ in range(3000):
        chain = BinaryOp("||", chain, b)
    assert to_sparql(chain).count("||") == 3000


# --------------------------------------------------------------------------- print, parse, same tree

NAMES = st.sampled_from(["a", "b", "c", "long_name", "x1"])
LEAVES = st.one_of(
    NAMES.map(Var),
    st.integers(-(10**6), 10**6).map(lambda n: Literal(str(n), XSD_INTEGER)),
    st.integers(0, 99).map(lambda n: Literal(f"+{n}", XSD_INTEGER)),
    st.tuples(st.integers(-99, 99), st.integers(0, 99)).map(
        lambda t: Literal(f"{t[0]}.{t[1]:02d}", XSD_DECIMAL)
    ),
    st.text(max_size=8).map(Literal),
    st.sampled_from([Literal("true", XSD_BOOLEAN), Literal("false", XSD_BOOLEAN), p, q]),
)
BINARY_OPS = st.sampled_from(["||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/"])


def _calls(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda x: FunctionCall("STRLEN", (x,)), children),
        st.lists(children, max_size=3).map(lambda xs: FunctionCall("CONCAT", tuple(xs))),
        st.builds(lambda x, y, z: FunctionCall("IF", (x, y, z)), children, children, children),
        st.builds(lambda x: FunctionCall(IRI(EX + "f"), (x,)), children),
    )


def _compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(BinaryOp, BINARY_OPS, children, children),
        st.builds(UnaryOp, st.sampled_from(["!", "+", "-"]), children),
        st.builds(In, children, st.lists(children, max_size=3).map(tuple), st.booleans()),
        _calls(children),
    )


EXPRESSIONS = st.recursive(LEAVES, _compound, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(EXPRESSIONS)
def test_printed_expressions_parse_back_to_the_same_tree(expr: Expr) -> None:
    assert reparse_expression(expr) == expr


def test_names_that_are_not_sparql_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="not a SPARQL variable name"):
        to_sparql(Var("two words"))
    with pytest.raises(ValueError, match="not a SPARQL blank-node label"):
        to_sparql(BNode("a."))


def test_sub_select_prints_without_prologue_and_rejects_from() -> None:
    inner = SelectQuery(None, GroupPattern(), prologue=Prologue(None, (("ex", EX),)))
    assert "PREFIX" not in to_sparql(SubSelect(inner))
    with pytest.raises(ValueError, match="sub-select cannot have FROM"):
        to_sparql(SubSelect(replace(inner, dataset=(DatasetClause(p),))))


def test_construct_template_rejects_paths() -> None:
    template = (TriplePattern(a, PathMod(p, PathModifier.ONE_OR_MORE), b),)
    with pytest.raises(ValueError, match="template cannot hold property paths"):
        to_sparql(ConstructQuery(template, GroupPattern()))
