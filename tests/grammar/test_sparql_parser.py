"""The SPARQL 1.1 parser: exact trees for the constructs the transformer rewrites, static-rule and
syntax errors with their positions, deep nesting, and the dialect-extension pattern."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lark
import pytest

from rsep.grammar.limits import MAX_CHAIN, MAX_DEPTH
from rsep.grammar.parser import (
    SparqlSyntaxError,
    build_parser,
    get_parser,
    parse_query,
    parse_update,
    parse_with,
)
from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, resolve_iri
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
    Bind,
    BNode,
    ConstructQuery,
    DatasetClause,
    DescribeQuery,
    Exists,
    Expr,
    Filter,
    FunctionCall,
    GroupCondition,
    GroupPattern,
    In,
    InlineData,
    Literal,
    Node,
    OptionalPattern,
    OrderCondition,
    PathAlternative,
    PathInverse,
    PathMod,
    PathModifier,
    PathNegatedSet,
    PathSequence,
    Projection,
    Prologue,
    SelectQuery,
    SolutionModifiers,
    SubSelect,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
)

EX = "http://example.org/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
GRAMMAR = Path(__file__).resolve().parents[2] / "grammar" / "sparql11.lark"


def ex(local: str) -> IRI:
    return IRI(EX + local)


def lit(lexical: str, datatype: str = XSD_INTEGER) -> Literal:
    return Literal(lexical, datatype)


def select(text: str, **options: Any) -> SelectQuery:
    query = parse_query(text, **options)
    assert isinstance(query, SelectQuery)
    return query


def elements(body: str) -> tuple[Node, ...]:
    """The elements of `SELECT * { body }` with the prefix `:` bound to EX."""
    return select(f"PREFIX : <{EX}> SELECT * {{ {body} }}").where.elements


def triples(body: str) -> tuple[TriplePattern, ...]:
    (bgp,) = elements(body)
    assert isinstance(bgp, BGP)
    return bgp.triples


def expression(text: str) -> Expr:
    """The expression of `SELECT (text AS ?result) {}`."""
    query = parse_query(f"PREFIX : <{EX}> SELECT ({text} AS ?result) {{}}")
    assert isinstance(query, SelectQuery) and query.projection is not None
    expr = query.projection[0].expr
    assert expr is not None
    return expr


def syntax_error(text: str, *, update: bool = False) -> SparqlSyntaxError:
    with pytest.raises(SparqlSyntaxError) as caught:
        (parse_update if update else parse_query)(text)
    return caught.value


# --------------------------------------------------------------------------- terms and IRIs


def test_prefixed_names_and_relative_iris_resolve_against_the_prologue() -> None:
    query = select(r"BASE <http://example.org/base/> PREFIX ex: <ns#> SELECT * { <a> ex:p ex:o\.x, ex: }")
    assert query.prologue == Prologue("http://example.org/base/", (("ex", "http://example.org/base/ns#"),))
    assert query.where.elements == (
        BGP(
            (
                TriplePattern(IRI(EX + "base/a"), IRI(EX + "base/ns#p"), IRI(EX + "base/ns#o.x")),
                TriplePattern(IRI(EX + "base/a"), IRI(EX + "base/ns#p"), IRI(EX + "base/ns#")),
            )
        ),
    )


def test_base_iri_argument_resolves_relative_iris_without_base() -> None:
    assert triples_of(parse_query("SELECT * { <a> <#b> <../c> }", base_iri="http://x/y/z")) == (
        TriplePattern(IRI("http://x/y/a"), IRI("http://x/y/z#b"), IRI("http://x/c")),
    )


def triples_of(query: Any) -> tuple[TriplePattern, ...]:
    (bgp,) = query.where.elements
    return bgp.triples  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("reference", "resolved"),
    [
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("/g", "http://a/g"),
        ("//g", "http://g"),
        ("?y", "http://a/b/c/d;p?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("", "http://a/b/c/d;p?q"),
        ("..", "http://a/b/"),
        ("../../../g", "http://a/g"),
        ("g/../h", "http://a/b/c/h"),
        ("g:h", "g:h"),
    ],
)
def test_resolve_iri_follows_rfc_3986_examples(reference: str, resolved: str) -> None:
    assert resolve_iri("http://a/b/c/d;p?q", reference) == resolved


def test_resolve_iri_handles_schemes_urljoin_does_not_know() -> None:
    assert resolve_iri("base:", "#o") == "base:#o"
    assert resolve_iri("tag:example.org,2024:a/b", "c") == "tag:example.org,2024:a/c"


def test_undefined_prefix_is_reported_at_the_prefixed_name() -> None:
    error = syntax_error("SELECT * {\n  ?s ex:p ?o }")
    assert (error.line, error.column, error.message) == (2, 6, "undefined prefix 'ex:'")


def test_numeric_and_boolean_literals_get_xsd_datatypes() -> None:
    objects = [t.object for t in triples("?s :p 1, 1.5, 1e3, -2, +2.5, .5E-1, true, FALSE")]
    assert objects == [
        lit("1"),
        lit("1.5", XSD_DECIMAL),
        lit("1e3", XSD_DOUBLE),
        lit("-2"),
        lit("+2.5", XSD_DECIMAL),
        lit(".5E-1", XSD_DOUBLE),
        lit("true", XSD_BOOLEAN),
        lit("false", XSD_BOOLEAN),
    ]


def test_strings_decode_escapes_and_keep_tags_and_datatypes() -> None:
    text = r'''?s :p "a\tb\u0041\U0001F600\"\\u0041", 'it''s'@en-GB, """two
lines""", "5"^^<http://www.w3.org/2001/XMLSchema#int>, "x"^^:dt'''
    assert [t.object for t in triples(text.replace("'it''s'", '"it\'s"'))] == [
        Literal('a\tbA\U0001f600"\\u0041'),
        Literal("it's", RDF_LANGSTRING, "en-GB"),
        Literal("two\nlines"),
        Literal("5", "http://www.w3.org/2001/XMLSchema#int"),
        Literal("x", EX + "dt"),
    ]


def test_escaped_surrogate_is_rejected_at_the_string() -> None:
    error = syntax_error('SELECT * { ?s ?p "\\uD800" }')
    assert (error.line, error.column) == (1, 18)


def test_keywords_are_case_insensitive_but_a_is_not() -> None:
    query = parse_query(f"prefix : <{EX}> select distinct * where {{ ?s a :C }} order by ?s")
    assert isinstance(query, SelectQuery) and query.distinct
    assert triples_of(query) == (TriplePattern(Var("s"), IRI(RDF_TYPE), ex("C")),)
    assert syntax_error("SELECT * { ?s A ?o }").message.startswith("unexpected character 'A'")


def test_dollar_variables_are_the_same_variables() -> None:
    assert triples("$s ?p $o") == (TriplePattern(Var("s"), Var("p"), Var("o")),)


# --------------------------------------------------------------------------- triples


def test_collection_expands_to_an_rdf_list_of_fresh_blank_nodes() -> None:
    first, rest, nil = IRI(RDF + "first"), IRI(RDF + "rest"), IRI(RDF + "nil")
    (c0, c1) = (BNode("b0"), BNode("b1"))
    assert triples("( 1 ?x ) :p ()") == (
        TriplePattern(c0, first, lit("1")),
        TriplePattern(c0, rest, c1),
        TriplePattern(c1, first, Var("x")),
        TriplePattern(c1, rest, nil),
        TriplePattern(c0, ex("p"), nil),
    )


def test_blank_node_property_lists_expand_after_the_triple_that_uses_them() -> None:
    assert triples("?s :p [ :q 1 ; :r [] ], [ a :C ]") == (
        TriplePattern(Var("s"), ex("p"), BNode("b1")),
        TriplePattern(BNode("b1"), ex("q"), lit("1")),
        TriplePattern(BNode("b1"), ex("r"), BNode("b0")),
        TriplePattern(Var("s"), ex("p"), BNode("b2")),
        TriplePattern(BNode("b2"), IRI(RDF_TYPE), ex("C")),
    )


def test_generated_labels_do_not_clash_with_labels_in_the_text() -> None:
    subject, _, anonymous = triples("_:b0 :p []")[0].subject, None, triples("_:b0 :p []")[0].object
    assert subject == BNode("b0")
    assert isinstance(anonymous, BNode) and not anonymous.label.startswith("b0") and anonymous != subject


def test_property_paths_build_path_nodes() -> None:
    (triple,) = triples("?s :a/^:b|(:c+)*/!(:d|^a)|:e? ?o")
    assert triple.predicate == PathAlternative(
        (
            PathSequence((ex("a"), PathInverse(ex("b")))),
            PathSequence(
                (
                    PathMod(PathMod(ex("c"), PathModifier.ONE_OR_MORE), PathModifier.ZERO_OR_MORE),
                    PathNegatedSet((ex("d"),), (IRI(RDF_TYPE),)),
                )
            ),
            PathMod(ex("e"), PathModifier.ZERO_OR_ONE),
        )
    )


def test_objects_after_semicolon_may_use_paths_inside_brackets() -> None:
    (_, _, nested) = triples("?s :p 1 ; :q [ :r* 2 ]")
    assert nested.predicate == PathMod(ex("r"), PathModifier.ZERO_OR_MORE)


# --------------------------------------------------------------------------- expressions


def test_builtin_names_are_upper_case_with_uri_aliases_unified() -> None:
    calls = expression('CONCAT(isURI(?x), uri("y"), sameTerm(?a, ?b), langMatches(?l, "*"), BNODE(), NOW())')
    assert calls == FunctionCall(
        "CONCAT",
        (
            FunctionCall("ISIRI", (Var("x"),)),
            FunctionCall("IRI", (Literal("y"),)),
            FunctionCall("SAMETERM", (Var("a"), Var("b"))),
            FunctionCall("LANGMATCHES", (Var("l"), Literal("*"))),
            FunctionCall("BNODE", ()),
            FunctionCall("NOW", ()),
        ),
    )


def test_regex_substr_replace_and_if_keep_their_arguments() -> None:
    assert expression('IF(REGEX(?s, "^a", "i"), SUBSTR(?s, 2), REPLACE(?s, "a", "b"))') == FunctionCall(
        "IF",
        (
            FunctionCall("REGEX", (Var("s"), Literal("^a"), Literal("i"))),
            FunctionCall("SUBSTR", (Var("s"), lit("2"))),
            FunctionCall("REPLACE", (Var("s"), Literal("a"), Literal("b"))),
        ),
    )


def test_extension_functions_are_calls_with_an_iri_name() -> None:
    assert expression(":f(?x, 1)") == FunctionCall(ex("f"), (Var("x"), lit("1")))
    assert expression(":agg(DISTINCT ?x)") == FunctionCall(ex("agg"), (Var("x"),), distinct=True)
    assert expression(":f()") == FunctionCall(ex("f"), ())


def test_operators_follow_sparql_precedence_and_associativity() -> None:
    a, b, c = Var("a"), Var("b"), Var("c")
    assert expression("?a || ?b && !?c") == BinaryOp("||", a, BinaryOp("&&", b, UnaryOp("!", c)))
    assert expression("?a - ?b - ?c") == BinaryOp("-", BinaryOp("-", a, b), c)
    assert expression("?a + ?b * ?c < -?c") == BinaryOp(
        "<", BinaryOp("+", a, BinaryOp("*", b, c)), UnaryOp("-", c)
    )


def test_signed_literal_after_an_operand_is_an_additive_operator() -> None:
    a, b = Var("a"), Var("b")
    assert expression("?a -2 * ?b") == BinaryOp("-", a, BinaryOp("*", lit("2"), b))
    assert expression("?a +2") == BinaryOp("+", a, lit("2"))
    assert expression("?a - -2") == BinaryOp("-", a, lit("-2"))


def test_in_not_in_and_exists() -> None:
    assert expression("?x NOT IN (1, ?y)") == In(Var("x"), (lit("1"), Var("y")), negated=True)
    assert expression("?x in ()") == In(Var("x"), ())
    assert expression("NOT EXISTS { ?x :p ?y }") == Exists(
        GroupPattern((BGP((TriplePattern(Var("x"), ex("p"), Var("y")),)),)), negated=True
    )


def test_aggregates_group_by_having_order_limit_offset() -> None:
    query = parse_query(
        f"""PREFIX : <{EX}>
        SELECT ?s (COUNT(DISTINCT ?o) AS ?n) (GROUP_CONCAT(?o; SEPARATOR="|") AS ?all) (COUNT(*) AS ?rows)
        WHERE {{ ?s :p ?o }}
        GROUP BY ?s (STR(?o) AS ?so) HAVING (SUM(?o) > 1) ORDER BY DESC(?n) ?s LIMIT 5 OFFSET 1"""
    )
    assert isinstance(query, SelectQuery)
    assert query.projection == (
        Projection(Var("s")),
        Projection(Var("n"), Aggregate("COUNT", Var("o"), distinct=True)),
        Projection(Var("all"), Aggregate("GROUP_CONCAT", Var("o"), separator="|")),
        Projection(Var("rows"), Aggregate("COUNT", None)),
    )
    assert query.modifiers == SolutionModifiers(
        group_by=(GroupCondition(Var("s")), GroupCondition(FunctionCall("STR", (Var("o"),)), Var("so"))),
        having=(BinaryOp(">", Aggregate("SUM", Var("o")), lit("1")),),
        order_by=(OrderCondition(Var("n"), descending=True), OrderCondition(Var("s"))),
        limit=5,
        offset=1,
    )


# --------------------------------------------------------------------------- patterns and query forms


def test_bind_values_filter_and_optional_in_source_order() -> None:
    body = "?s :p ?o BIND(?o + 1 AS ?n) VALUES (?x ?y) { (1 UNDEF) (:a 'b') }"
    body += " OPTIONAL { ?s :q ?z } FILTER(?n > 1)"
    assert elements(body) == (
        BGP((TriplePattern(Var("s"), ex("p"), Var("o")),)),
        Bind(BinaryOp("+", Var("o"), lit("1")), Var("n")),
        InlineData((Var("x"), Var("y")), ((lit("1"), None), (ex("a"), Literal("b")))),
        OptionalPattern(GroupPattern((BGP((TriplePattern(Var("s"), ex("q"), Var("z")),)),))),
        Filter(BinaryOp(">", Var("n"), lit("1"))),
    )


def test_values_with_one_variable_and_trailing_values_clause() -> None:
    query = select("SELECT * { VALUES ?x { 1 2 } } VALUES ?y { UNDEF }")
    assert query.where.elements == (InlineData((Var("x"),), ((lit("1"),), (lit("2"),))),)
    assert query.values == InlineData((Var("y"),), ((None,),))


def test_union_of_groups_and_nested_groups() -> None:
    group = GroupPattern((BGP((TriplePattern(Var("s"), Var("p"), Var("o")),)),))
    assert elements("{ ?s ?p ?o } UNION { ?s ?p ?o } { ?s ?p ?o }") == (UnionPattern((group, group)), group)


def test_subqueries_are_sub_select_elements() -> None:
    inner = SelectQuery(
        projection=(Projection(Var("s")),),
        where=GroupPattern((BGP((TriplePattern(Var("s"), Var("p"), Var("o")),)),)),
        modifiers=SolutionModifiers(limit=1),
    )
    assert elements("{ SELECT ?s WHERE { ?s ?p ?o } LIMIT 1 }") == (GroupPattern((SubSelect(inner),)),)
    assert select("SELECT * { SELECT ?s { ?s ?p ?o } LIMIT 1 }").where == GroupPattern((SubSelect(inner),))


def test_construct_where_short_form_uses_the_template_as_pattern() -> None:
    query = parse_query(f"PREFIX : <{EX}> CONSTRUCT FROM <{EX}g> WHERE {{ ?s :p ?o }}")
    template = (TriplePattern(Var("s"), ex("p"), Var("o")),)
    assert query == ConstructQuery(
        template,
        GroupPattern((BGP(template),)),
        dataset=(DatasetClause(ex("g")),),
        prologue=Prologue(None, (("", EX),)),
    )


def test_describe_star_and_targets() -> None:
    assert parse_query("DESCRIBE *") == DescribeQuery(None)
    query = parse_query(f"DESCRIBE ?x <{EX}a> FROM NAMED <{EX}g> WHERE {{ ?x ?p ?o }}")
    assert isinstance(query, DescribeQuery)
    assert query.targets == (Var("x"), ex("a")) and query.dataset == (DatasetClause(ex("g"), named=True),)


# --------------------------------------------------------------------------- static rules


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("SELECT * {\n  ?s ?p ?o .\n  BIND (1 AS ?o)\n}", 3, 14, "BIND variable ?o is already in scope"),
        ("SELECT (1 AS ?o) { ?s ?p ?o }", 1, 14, "?o is already in scope in the WHERE clause"),
        ("SELECT ?s ?o { ?s ?p ?o } GROUP BY ?s", 1, 11, "?o is neither a GROUP BY key nor aggregated"),
        (
            "SELECT (?o + 1 AS ?x) { ?s ?p ?o } GROUP BY ?s",
            1,
            9,
            "?o is neither a GROUP BY key nor aggregated",
        ),
        ("SELECT ?s { ?s ?p ?o } HAVING (COUNT(*) > 1)", 1, 8, "?s is neither a GROUP BY key nor aggregated"),
        ("SELECT * { ?s ?p ?o } GROUP BY ?s", 1, 8, "SELECT * is not allowed with GROUP BY or aggregates"),
        ("SELECT * { ?s ?p ?o FILTER(COUNT(?o) > 1) }", 1, 28, "aggregate COUNT is not allowed in FILTER"),
        ("SELECT * { VALUES (?a ?b) { (1 2) (3) } }", 1, 35, "VALUES row has 1 value(s) for 2 variable(s)"),
        (
            "SELECT * { _:a ?p ?o OPTIONAL { _:a ?q ?r } }",
            1,
            33,
            "blank node _:a is used in more than one basic graph pattern",
        ),
    ],
)
def test_static_rule_violations_report_the_offending_construct(
    text: str, line: int, column: int, message: str
) -> None:
    error = syntax_error(text)
    assert (error.line, error.column, error.message) == (line, column, message)
    assert error.expected == []


def test_grouped_queries_may_project_keys_aggregates_and_earlier_aliases() -> None:
    parse_query("SELECT ?k (SUM(?o) AS ?t) (?t * 2 AS ?d) { ?s ?p ?o } GROUP BY (?s AS ?k)")


def test_blank_node_label_may_repeat_within_one_bgp_across_filters() -> None:
    parse_query("SELECT * { _:a ?p ?o FILTER(?o) _:a ?q ?r BIND(1 AS ?x) _:a ?r ?s }")


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("INSERT DATA { <s> <p> ?o }", 1, 23, "INSERT DATA cannot contain variables"),
        ("DELETE DATA { _:a <p> <o> }", 1, 15, "DELETE DATA cannot contain blank nodes"),
        ("DELETE { ?s <p> [] } WHERE { ?s ?p ?o }", 1, 17, "a DELETE template cannot contain blank nodes"),
        (
            "INSERT DATA { _:b <p> 1 } ;\nINSERT DATA { _:b <p> 2 }",
            2,
            15,
            "blank node _:b is used in more than one update operation",
        ),
    ],
)
def test_update_static_rules(text: str, line: int, column: int, message: str) -> None:
    error = syntax_error(text, update=True)
    assert (error.line, error.column, error.message) == (line, column, message)


def test_update_request_with_prologues_between_operations() -> None:
    parse_update(
        "PREFIX : <http://a/> INSERT DATA { :s :p 1 } ; PREFIX b: <http://b/> DELETE WHERE { ?s b:p ?o } ;"
    )


# --------------------------------------------------------------------------- syntax errors


def test_unclosed_group_reports_position_at_end_of_input() -> None:
    error = syntax_error("SELECT * WHERE {\n  ?s ?p ?o .\n")
    assert (error.line, error.column) == (3, 1)
    assert error.message.startswith("unexpected end of input; expected ")
    assert "'}'" in error.expected and "OPTIONAL" in error.expected


def test_missing_object_reports_what_could_stand_there() -> None:
    error = syntax_error("SELECT * { ?s ?p }")
    assert (error.line, error.column) == (1, 18)
    assert (
        error.message
        == "unexpected '}'; expected a variable, an IRI, a literal, a blank node, '()', '(' or '['"
    )
    assert str(error) == "<query>:1:18: " + error.message


def test_error_string_names_the_source() -> None:
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_query("ASK {\n  FILTER(?x = )\n}", source="q.rq")
    assert str(caught.value).startswith("q.rq:2:15: unexpected ')'; expected a variable, an IRI, a literal")
    assert caught.value.source == "q.rq"


def test_misspelt_keyword_reports_the_character_and_alternatives() -> None:
    error = syntax_error("CREATE DEAFULT", update=True)
    assert (error.line, error.column, error.expected) == (1, 8, ["GRAPH", "SILENT"])


def test_limit_expects_an_integer() -> None:
    assert syntax_error("SELECT * {} LIMIT x").expected == ["an integer"]


# --------------------------------------------------------------------------- size and speed


def test_nested_groups_up_to_the_bound_parse() -> None:
    """As deep as rsep.grammar.limits lets through (deeper is tests/grammar/test_limits.py)."""
    depth = MAX_DEPTH - 1
    pattern: Node = select("SELECT * WHERE " + "{ " * depth + "?s ?p ?o " + "} " * depth).where
    for _ in range(depth - 1):
        assert isinstance(pattern, GroupPattern)
        (pattern,) = pattern.elements
    assert pattern == GroupPattern((BGP((TriplePattern(Var("s"), Var("p"), Var("o")),)),))


def test_long_or_chain_and_deep_parentheses_up_to_the_bound_parse() -> None:
    chain = " || ".join(f"?o = {i}" for i in range(MAX_CHAIN // 3))
    (_, condition) = elements(f"?s ?p ?o FILTER({chain})")
    assert isinstance(condition, Filter) and isinstance(condition.expr, BinaryOp)
    depth = MAX_DEPTH - 10
    assert expression("(" * depth + "?o" + ")" * depth) == Var("o")


TYPICAL_QUERY = """PREFIX : <http://example.org/>
PREFIX foaf: <http://xmlns.com/foaf/0.1/>
SELECT ?name (COUNT(?friend) AS ?friends) (SAMPLE(?mbox) AS ?anyMbox)
WHERE {
  ?person a foaf:Person ;
          foaf:name ?name ;
          foaf:knows ?friend .
  OPTIONAL { ?person foaf:mbox ?mbox }
  OPTIONAL { ?person foaf:homepage ?page . FILTER(STRSTARTS(STR(?page), "https")) }
  ?friend foaf:age ?age .
  FILTER(?age >= 18 && ?age < 65 || LANG(?name) = "en")
  MINUS { ?person :blocked true }
  BIND(CONCAT(UCASE(?name), " ", STR(?age)) AS ?label)
  {
    ?person :livesIn ?city
  } UNION {
    ?person :worksIn ?city
  }
  ?city :population ?pop .
  FILTER(?pop > 10000)
  VALUES ?city { :Paris :Berlin :Rome }
}
GROUP BY ?name
HAVING (COUNT(?friend) > 2)
ORDER BY DESC(?friends) ?name
LIMIT 20
"""


def test_typical_query_parses_in_milliseconds() -> None:
    parse_query(TYPICAL_QUERY)  # builds the parser
    runs = 50
    started = time.perf_counter()
    for _ in range(runs):
        parse_query(TYPICAL_QUERY)
    assert (time.perf_counter() - started) / runs < 0.025  # ~5 ms on a laptop; generous for CI


# --------------------------------------------------------------------------- the grammar file


def test_every_w3c_production_is_numbered_in_the_grammar() -> None:
    numbers = {int(n) for n in re.findall(r"^// \[(\d+)\] ", GRAMMAR.read_text(encoding="utf-8"), re.M)}
    assert numbers == set(range(1, 174))


def test_grammar_has_no_shift_reduce_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    """What lark's strict mode would check for the parser (it also needs `interegular`)."""
    lark.logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            lark.Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", start=["query_unit", "update_unit"])
    finally:
        lark.logger.setLevel(logging.WARNING)
    assert not [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()]


def test_parsers_are_built_once() -> None:
    assert get_parser("sparql11", "query_unit") is get_parser("sparql11", "query_unit")


# --------------------------------------------------------------------------- dialects

# The pattern a dialect grammar (grammar/<dialect>.lark) follows, see the header of sparql11.lark.
WINDOW_DIALECT = r"""
%import .sparql11 (query_unit, select_query, select_clause, dataset_clause, where_clause, solution_modifier)
%import .sparql11 (group_or_union_graph_pattern, group_graph_pattern, iri, INTEGER, WHITESPACE, COMMENT)
%override select_query: select_clause dataset_clause* within_clause? where_clause solution_modifier
within_clause: "WITHIN"i INTEGER "SECONDS"i
%extend dataset_clause: "FROM"i "STREAM"i iri
%override group_or_union_graph_pattern: group_graph_pattern (("UNION"i | SEQ) group_graph_pattern)*
SEQ: "SEQ"i
%ignore WHITESPACE
%ignore COMMENT
"""


@dataclass(frozen=True)
class Stream(Node):
    iri: IRI


@dataclass(frozen=True)
class Windowed(Node):
    query: SelectQuery
    seconds: int | None
    streams: tuple[Stream, ...] = ()


@dataclass(frozen=True)
class SeqPattern(Node):
    steps: tuple[GroupPattern, ...]


class WindowTransformer(SparqlTransformer):
    """One method per rule the dialect adds or overrides; everything else is inherited."""

    def within_clause(self, children: list[Any]) -> int:
        return int(children[0])

    def dataset_clause(self, children: list[Any]) -> Any:
        return Stream(children[0]) if isinstance(children[0], IRI) else super().dataset_clause(children)

    def select_query(self, children: list[Any]) -> Node:
        parts = QueryParts.collect(children)  # what it does not know lands in parts.extras
        seconds = next((extra for extra in parts.extras if isinstance(extra, int)), None)
        streams = tuple(extra for extra in parts.extras if isinstance(extra, Stream))
        return Windowed(self.build_select(parts), seconds, streams)

    def group_or_union_graph_pattern(self, children: list[Any]) -> Any:
        groups = tuple(c for c in children if isinstance(c, GroupPattern))
        if any(isinstance(c, lark.Token) for c in children):
            return SeqPattern(groups)
        return super().group_or_union_graph_pattern(list(groups))

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        return replace(form, query=replace(form.query, prologue=prologue, values=values))


@pytest.fixture(scope="module")
def window_parser() -> lark.Lark:
    return build_parser(WINDOW_DIALECT, "query_unit", name="window.lark")


def test_dialect_overrides_select_query_and_reuses_keywords(window_parser: lark.Lark) -> None:
    text = f"PREFIX : <{EX}> SELECT ?s FROM STREAM :s1 WITHIN 10 SECONDS {{ ?s :p ?o FILTER(SECONDS(?o)>1) }}"
    result = parse_with(window_parser, text, WindowTransformer, start="query_unit", source="w.rq")
    assert isinstance(result, Windowed) and result.seconds == 10 and result.streams == (Stream(ex("s1")),)
    assert result.query.prologue == Prologue(None, (("", EX),))
    assert result.query.where.elements[1] == Filter(
        BinaryOp(">", FunctionCall("SECONDS", (Var("o"),)), lit("1"))
    )


def test_dialect_adds_a_binary_pattern_operator(window_parser: lark.Lark) -> None:
    text = "SELECT * { { ?a ?b ?c } SEQ { ?d ?e ?f } }"
    result = parse_with(window_parser, text, WindowTransformer, start="query_unit", source="w.rq")
    (sequence,) = result.query.where.elements
    assert isinstance(sequence, SeqPattern) and len(sequence.steps) == 2


def test_dialect_errors_use_the_shared_error_type(window_parser: lark.Lark) -> None:
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_with(
            window_parser, "SELECT * WITHIN ten SECONDS {}", WindowTransformer, start="query_unit", source="w"
        )
    assert str(caught.value) == "w:1:17: unexpected character 't'; expected an integer"
