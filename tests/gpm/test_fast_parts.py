"""The fast path's parts: terms in stored form, events read into indexes, FILTERs that hand an
event to Oxigraph where the evaluator and Oxigraph may disagree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.sparql import (
    IRI,
    XSD,
    BinaryOp,
    Expr,
    FunctionCall,
    Literal,
    TriplePattern,
    UnaryOp,
    Var,
)
from rsep.plugin.expr import stored_nt
from rsep.plugin.expr.values import format_double
from rsep.plugin.store.exact_filters import ExactFilter
from rsep.plugin.store.fast_gpm import Bgp, event_index, shape_of, stored_term

INTEGER, DECIMAL, DOUBLE = XSD + "integer", XSD + "decimal", XSD + "double"
NUMBER_TYPES = [INTEGER, DECIMAL, DOUBLE, XSD + "float", XSD + "boolean", XSD + "int"]


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="0123456789.-+eE", min_size=1, max_size=24),
        st.integers().map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.floats(allow_nan=False, allow_infinity=False).map(format_double),  # positional, shortest
        st.floats(-1e6, 1e6).map(lambda x: format_double(round(x, 2))),
        st.decimals(allow_nan=False, allow_infinity=False).map(str),
        st.sampled_from(["true", "false", "1", "0", "NaN", "INF", "0.1", "62.54", "100000000000000000000"]),
    ),
    st.sampled_from(NUMBER_TYPES),
)
def test_stored_term_is_stored_nt(lexical: str, datatype: str) -> None:
    """The shortcuts for canonical numbers agree with `stored_nt` (property tested against a
    real Store in tests/expr/test_stored_nt.py)."""
    text = f'"{lexical}"^^<{datatype}>'
    assert stored_term(text) == stored_nt(text)


@pytest.mark.parametrize(
    "text",
    ["<urn:a>", "_:b0", '"a"', '"a"@EN', '"a"^^<http://www.w3.org/2001/XMLSchema#string>', '"é\\n"'],
)
def test_stored_term_of_other_terms(text: str) -> None:
    assert stored_term(text) == stored_nt(text)


@pytest.mark.parametrize(
    "text",
    [
        "<urn:s> <urn:p> <<( <urn:a> <urn:b> <urn:c> )>> .\n",  # a triple term
        "<urn:\\u0061> <urn:p> <urn:o> .\n",  # an escaped IRI
        "<urn:s>\t<urn:p> <urn:o> .\n",
        "<urn:s> <urn:p> <urn:o>.\n",
        "<urn:s> <urn:p> <urn:o> .\r\n",
        '"s" <urn:p> <urn:o> .\n',  # a literal subject
        "<urn:s> _:p <urn:o> .\n",
        '<urn:s> <urn:p> "unterminated .\n',
    ],
)
def test_events_not_read_here_go_to_oxigraph(text: str) -> None:
    assert event_index(text) is None


def test_an_event_is_a_set_of_stored_triples() -> None:
    text = (
        f'<urn:s> <urn:p> "01"^^<{INTEGER}> .\n'
        f'<urn:s> <urn:p> "1"^^<{INTEGER}> .\n'
        '<urn:s> <urn:q> "a"@EN .\n'
        '<urn:s> <urn:q> "a"@en .\n'
        "<urn:s> <urn:q> _:b .\n"
        "<urn:s> <urn:q> _:b .\n"
    )
    assert event_index(text) == {
        "<urn:p>": {("<urn:s>", f'"1"^^<{INTEGER}>'): None},
        "<urn:q>": {("<urn:s>", '"a"@en'): None, ("<urn:s>", "_:b"): None},
    }


def integer(n: str) -> Literal:
    return Literal(n, INTEGER)


def call(name: str | IRI, *args: Expr) -> FunctionCall:
    return FunctionCall(name, args)


NAN = f'"NaN"^^<{DOUBLE}>'
ONE = f'"1"^^<{INTEGER}>'
TRUE = f'"true"^^<{XSD}boolean>'
BIG = f'"99999999999999999999"^^<{INTEGER}>'

UNDECIDED = [
    (BinaryOp("<", Var("x"), integer("1")), {"x": NAN}),  # nan-order
    (UnaryOp("!", BinaryOp(">=", Var("x"), Var("x"))), {"x": NAN}),
    (BinaryOp("<", Var("x"), Var("y")), {"x": TRUE, "y": TRUE}),  # boolean-order
    (BinaryOp("<=", Var("x"), Var("x")), {"x": "<urn:a>"}),  # identical-order
    (BinaryOp(">", Var("x"), integer("1")), {"x": BIG}),  # beyond 64 bits, as stored
    (BinaryOp(">", BinaryOp("*", Var("x"), Var("x")), integer("1")), {"x": f'"9999999999"^^<{INTEGER}>'}),
    (BinaryOp("=", BinaryOp("/", Var("x"), integer("3")), integer("1")), {"x": ONE}),  # decimal division
    (
        BinaryOp("=", BinaryOp("+", Var("x"), Var("y")), Var("x")),
        {"x": f'"2020-01-01"^^<{XSD}date>', "y": f'"P1D"^^<{XSD}dayTimeDuration>'},
    ),  # temporal-plus
    (UnaryOp("!", Var("x")), {"x": f'"abc"^^<{INTEGER}>'}),  # ill-formed-ebv
    (BinaryOp("=", call(IRI(INTEGER), Var("x")), integer("1")), {"x": '" 1"'}),  # cast-whitespace
    (BinaryOp("=", call(IRI(INTEGER), Var("x")), integer("1")), {"x": f'"1.5"^^<{DOUBLE}>'}),
    (BinaryOp("=", call(IRI(XSD + "string"), Var("x")), Literal("x")), {"x": f'"10000000"^^<{DOUBLE}>'}),
    (
        BinaryOp("=", call("SUBSTR", Var("x"), Literal("9223372036854775806", INTEGER)), Literal("")),
        {"x": '"a"'},
    ),
    (call("REGEX", Var("x"), Literal("a\\s")), {"x": '"a\u00a0"'}),  # regex-whitespace
    (call("REGEX", Var("x"), Literal("a.b")), {"x": '"a\\rb"'}),
    (call("REGEX", Var("x"), Literal("k"), Literal("i")), {"x": '"\u212a"'}),
]

DECIDED = [
    (BinaryOp("<", Var("x"), integer("2")), {"x": ONE}, True),
    (BinaryOp("<=", Var("x"), Var("x")), {"x": ONE}, True),
    (UnaryOp("!", BinaryOp("<", Var("x"), Var("y"))), {"x": '"a"', "y": ONE}, False),  # an error in both
    (BinaryOp("=", BinaryOp("/", Var("x"), Literal("2", DOUBLE)), Literal("0.5", DOUBLE)), {"x": ONE}, True),
    (call("REGEX", Var("x"), Literal("a.b")), {"x": '"a\\nb"'}, False),
    (call("REGEX", Var("x"), Literal("^A"), Literal("i")), {"x": '"abc"'}, True),
]


@pytest.mark.parametrize(("expr", "solution"), UNDECIDED)
def test_filters_that_oxigraph_may_answer_otherwise_are_left_to_it(
    expr: Expr, solution: dict[str, str]
) -> None:
    assert ExactFilter(expr)(solution) is None


@pytest.mark.parametrize(("expr", "solution", "verdict"), DECIDED)
def test_other_filters_are_decided(expr: Expr, solution: dict[str, str], verdict: bool) -> None:
    assert ExactFilter(expr)(solution) is verdict


IP, IO = "<urn:p>", "<urn:o>"


@pytest.mark.parametrize(
    ("triples", "expected"),
    [
        ([("x", "x", "y")], [(IP, IO), (IP, IP)]),  # the predicate is read first
        ([("x", "p", "x")], [(IP,)]),
        ([("x", "q", "y"), ("x", "p", "y")], []),
        (
            [("x", "p", "y"), ("y", "p", "z")],
            [(IP, IO, IP), (IP, IP, IO), (IP, IP, IP), (IO, IP, IO), (IO, IP, IP)],
        ),
    ],
)
def test_patterns_with_repeated_variables(
    triples: list[tuple[str, str, str]], expected: list[tuple[str, ...]]
) -> None:
    index = event_index("<urn:p> <urn:p> <urn:o> .\n<urn:p> <urn:p> <urn:p> .\n<urn:o> <urn:p> <urn:p> .\n")
    assert index is not None

    def term(name: str) -> Var | IRI:
        return IRI(f"urn:{name}") if name in ("p", "q") else Var(name)

    patterns = [TriplePattern(term(s), term(p), term(o)) for s, p, o in triples]
    shape, slots = shape_of(patterns)
    names = [slot.name for slot in slots if isinstance(slot, Var)]
    order = sorted(range(len(names)), key=lambda i: names[i])
    found = [tuple(solution[i] for i in order) for solution in Bgp(shape).solutions(index)]
    assert sorted(found) == sorted(expected)
