"""VALUES data blocks and expression lists of plain values read as one token (sparql11.lark D11
and D12, rsep.grammar.data_blocks): the same algebra, the same static checks and the same error
positions as a block or a list read token by token."""

from __future__ import annotations

import functools
import re

import pytest
from lark import Lark

from rsep.grammar import SparqlSyntaxError, parse_event_query, parse_query
from rsep.grammar.limits import MAX_DEPTH, first_violation
from rsep.grammar.parser import SPARQL_GRAMMAR, build_parser, get_parser, parse_with
from rsep.grammar.sparql_transformer import SparqlTransformer


@functools.cache
def _token_by_token(alternative: str = "| data_block_token") -> Lark:
    """SPARQL 1.1's parser without D11 (or D12): every block (list) read as [62]-[65] ([72]) say."""
    parser = get_parser(SPARQL_GRAMMAR, "query_unit")
    text = parser.source_grammar.replace(alternative, "")
    assert text != parser.source_grammar
    return build_parser(text, "query_unit", name="sparql11.lark")


def _read(parser: Lark | str, text: str) -> str:
    try:
        transformer = functools.partial(SparqlTransformer, "http://b/")
        found = parse_with(parser, text, transformer, start="query_unit", source="q")
    except SparqlSyntaxError as error:
        return str(error)
    return repr(found)


def _whole_blocks(text: str, terminal: str = "DATA_BLOCK", after: str = r"VALUES\s*") -> list[str]:
    """The blocks the lexer reads as one DATA_BLOCK token (after each VALUES keyword)."""
    found = get_parser(SPARQL_GRAMMAR, "query_unit").get_terminal(terminal)
    block = re.compile(found.pattern.to_regexp())
    matches = (block.match(text, keyword.end()) for keyword in re.finditer(after, text, re.IGNORECASE))
    return [match.group() for match in matches if match is not None]


FAST = [
    'PREFIX ex: <http://e/>\nSELECT * { VALUES (?a ?b) { (<a> "x"@en) (1 -2.5e3) (UNDEF true)\n'
    " (ex:z \"1\"^^ex:t) (ex: +.5) (FALSE '''a\nb'''^^<t>) } }",
    'PREFIX ex: <http://e/>\nSELECT * { VALUES ?x { 1 2 ex:a\\.b "\\u0041" -0 +1E3 } }',
    "SELECT * { VALUES () { () ( ) } }",
    "SELECT * { VALUES ?a{1} }",
    "SELECT * { VALUES (?a?b){(1 2)} }",
    "SELECT * { VALUES (?a ?b) {\n (1 2)#c\n (1 2)} } VALUES ?z { <x> }",
    "PREFIX ex: <http://e/>\nSELECT * { VALUES ?x { ex:a\\)b ex:c } VALUES (?y) { (ex:d\\)) } }",
    'PREFIX ex: <http://e/>\nSELECT * { VALUES (?y) { ("x"^^ex:t\\)) } }',  # escapes in names
    "SELECT * { VALUES (?a) { (1) (nope:x) } }",  # undefined prefix
    'SELECT * { VALUES (?a) { (1)\n  ("\\uD800") } }',  # not a scalar value
    "SELECT * { VALUES (?a) { (1)\n  (1 2) } }",  # row length
    'SELECT * { VALUES (?a) { (1)\n  ("""x\ny"""^^nope:t) } }',  # datatype placed after a newline
    'SELECT * { VALUES (?a) { (1)\n  ("""x\ny"""@en-gb) } }',
]
SLOW = [
    'SELECT * { VALUES (?a ?b) {\n (1 2)\n ("a""b") } }',  # no space between values
    'SELECT * { VALUES (?a ?b) {\n (1 2)\n ("a" @en 2) } }',  # a space inside a literal
    "SELECT * { VALUES (?a ?b) {\n (1 2)\n (1. 2) } }",
    "SELECT * { VALUES ?a { truex } }",
    'SELECT * { VALUES ?a { """a""""} }',
    "SELECT ?x {}",
    "SELECT ?x { <a> <b> <c> }",
]


@pytest.mark.parametrize("text", FAST + SLOW)
def test_a_block_reads_as_it_does_token_by_token(text: str) -> None:
    assert _read(SPARQL_GRAMMAR, text) == _read(_token_by_token(), text)


@pytest.mark.parametrize("text", FAST)
def test_blocks_of_plain_values_are_one_token(text: str) -> None:
    assert _whole_blocks(text)


@pytest.mark.parametrize("text", SLOW)
def test_blocks_written_otherwise_are_read_token_by_token(text: str) -> None:
    assert not _whole_blocks(text)


def _rows(bad: str, at: int = 5000, count: int = 6000) -> str:
    """A query whose VALUES block has `count` rows, row `at` (1-based, on line `at + 2`) holding `bad`."""
    rows = [f'(ex:item{i} "label {i}"@en)' if i != at else f"(ex:item{i} {bad})" for i in range(1, count + 1)]
    return "PREFIX ex: <http://e/>\nSELECT * WHERE { VALUES (?s ?label) {\n" + "\n".join(rows) + "\n} }"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("nope:x", "undefined prefix 'nope:'"),
        ('"x"^^nope:t', "undefined prefix 'nope:'"),
        ('"\\uDFFF"', "\\uDFFF is not a Unicode scalar value"),
        ("<a\\u0000x>", None),  # parses, relative IRIs are resolved in plain SPARQL
    ],
)
def test_a_value_refused_in_row_5000_is_placed_where_it_stands(bad: str, message: str | None) -> None:
    text = _rows(bad)
    assert len(_whole_blocks(text)) == 1
    column = len("(ex:item5000 ") + 1 + (bad.index("^^") + 2 if "^^" in bad else 0)
    if message is None:
        parse_query(text, base_iri="http://b/")
        return
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_query(text, source="query")
    assert str(caught.value) == f"query:5002:{column}: {message}"


def test_a_row_of_the_wrong_length_is_placed_at_its_bracket() -> None:
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_query(_rows('"a" "b"'), source="query")
    assert str(caught.value) == "query:5002:1: VALUES row has 3 value(s) for 2 variable(s)"


def test_a_syntax_error_in_row_5000_is_placed_where_it_stands() -> None:
    with pytest.raises(SparqlSyntaxError) as caught:  # one ')' too many: read token by token
        parse_query(_rows('"a" ex:b)'), source="query")
    assert str(caught.value).startswith("query:5002:23: unexpected ')'")


def test_a_relative_iri_in_a_continuous_query_block_is_refused_where_it_stands() -> None:
    rows = "\n".join(f"(<http://e/{i}>)" if i != 5000 else "(<relative>)" for i in range(1, 6001))
    text = (
        "SELECT ?h WITHIN 30 MINUTES FROM STREAM S1 <http://e/s>\n"
        f"WHERE {{ SEQ (A) DEFINE GPM A ON S1 {{ VALUES (?h) {{\n{rows}\n}} ?h <http://e/p> ?p }} }}"
    )
    assert len(_whole_blocks(text)) == 1
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query(text, source="query", dialect="spaseq")
    assert str(caught.value).startswith("query:5002:2: <relative> is a relative IRI")


def test_a_block_counts_flat_for_the_bounds() -> None:
    """The values of a block, typed literals and signed numbers included, make no chain."""
    typed = " ".join(f'"{i}"^^<http://www.w3.org/2001/XMLSchema#int>' for i in range(1200))
    signed = " ".join(f"(-{i} +{i})" for i in range(1200))
    for text in (f"SELECT * {{ VALUES ?x {{ {typed} }} }}", f"SELECT * {{ VALUES (?x ?y) {{ {signed} }} }}"):
        assert first_violation(text) is None
        parse_query(text)


def test_a_block_too_deep_is_still_refused_at_its_bracket() -> None:
    depth = MAX_DEPTH - 1
    text = "SELECT * WHERE " + "{ " * depth + "VALUES (?x) { (1) }" + " }" * depth
    found = first_violation(text)
    assert found is not None
    assert text[found[0]] == "(" and found[1] == f"nested more than {MAX_DEPTH} levels deep"


# ----------------------------------------------------------------------------- D12: VALUE_LIST

LISTS_FAST = [
    'PREFIX ex: <http://e/>\nSELECT * { ?x ex:p ?y FILTER(?y IN (ex:a, ex:b\\,c, "x,y"@en, <u#v>,\n'
    " -1.5e3 , \"1\"^^ex:int, true, 2, .5, '''a\nb''', ex:)) }",
    "PREFIX ex: <http://e/>\nSELECT * { ?x ex:p ?y FILTER(?y NOT IN (ex:a,ex:b#c\n)) }",
    'SELECT (CONCAT("a", "b") AS ?c) (COALESCE(1, 2) AS ?d) {}',
    "SELECT * { FILTER(?y IN (1,\n  nope:x)) }",  # undefined prefix
    'SELECT * { FILTER(?y IN (1,\n  "\\uD800")) }',  # not a scalar value
    "SELECT * { FILTER(?y IN (<a>)) }",
]
LISTS_SLOW = [
    "SELECT * { FILTER(?y IN (1, ?x)) }",
    "SELECT * { FILTER(?y IN (1 + 2, 3)) }",
    "SELECT * { FILTER(?y IN ()) }",
    'SELECT * { FILTER(?y IN (1 ,\n "a""b")) }',
    "SELECT * { FILTER(?y IN (1, UNDEF)) }",
    "SELECT * { FILTER(?y IN (1,, 2)) }",
    'SELECT * { FILTER(?y IN ("a" @en)) }',
]
IN = r"\bIN\s*|CONCAT|COALESCE"


@pytest.mark.parametrize("text", LISTS_FAST + LISTS_SLOW)
def test_a_list_reads_as_it_does_token_by_token(text: str) -> None:
    assert _read(SPARQL_GRAMMAR, text) == _read(_token_by_token("| value_list_token"), text)


@pytest.mark.parametrize("text", LISTS_FAST)
def test_lists_of_plain_values_are_one_token(text: str) -> None:
    assert _whole_blocks(text, "VALUE_LIST", IN)


@pytest.mark.parametrize("text", LISTS_SLOW)
def test_lists_written_otherwise_are_read_token_by_token(text: str) -> None:
    assert not _whole_blocks(text, "VALUE_LIST", IN)


def _items(bad: str, at: int = 5000, count: int = 6000) -> str:
    """An IN list of `count` values, value `at` (1-based, on line `at + 1`) `bad`."""
    items = ",\n".join(f"ex:item{i}" if i != at else bad for i in range(1, count + 1))
    return f"PREFIX ex: <http://e/>\nSELECT * WHERE {{ ?s ?p ?o FILTER (?o IN ({items})) }}"


@pytest.mark.parametrize(
    ("bad", "column", "message"),
    [("nope:x", 1, "undefined prefix 'nope:'"), ('"x"^^nope:t', 6, "undefined prefix 'nope:'")],
)
def test_a_value_refused_in_item_5000_is_placed_where_it_stands(bad: str, column: int, message: str) -> None:
    text = _items(bad)
    assert len(_whole_blocks(text, "VALUE_LIST", IN)) == 1
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_query(text, source="query")
    assert str(caught.value) == f"query:5001:{column}: {message}"


def test_a_list_counts_flat_for_the_bounds() -> None:
    typed = ", ".join(f'"{i}"^^<http://www.w3.org/2001/XMLSchema#int>' for i in range(1200))
    signed = ", ".join(f"-{i}, +{i}" for i in range(1200))
    for items in (typed, signed):
        text = f"SELECT * {{ FILTER (?x IN ({items})) }}"
        assert first_violation(text) is None
        parse_query(text)
