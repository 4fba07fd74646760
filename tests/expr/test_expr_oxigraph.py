"""Differential test: the compiled evaluator against Oxigraph as the oracle.

Hypothesis draws random expression trees over variables bound to random
terms (numbers of every primitive type incl. NaN/INF, strings with and
without language tags, booleans, dates and times with and without timezone,
durations, IRIs, blank nodes, literals of unknown or ill-formed types,
unbound variables). Each tree is evaluated by `compile_expr` and by
pyoxigraph (`SELECT (expr AS ?r) WHERE { VALUES ... }`), and by
`compile_filter` and a `FILTER` query; the results must be the same term,
or both an error/unbound.

Constants are bound through VALUES too, so Oxigraph's query-time evaluator
(not its constant folder) is the oracle, while our side folds them.

Where Oxigraph departs from SPARQL 1.1 / XPath (or has finite limits), our
evaluator follows the specification; `_explain` recognises exactly those
cases by locating the innermost sub-expression on which the two disagree,
and the example is then accepted with a recorded reason (printed with -s).
See DEVIATIONS for the list. RSEP_EXPR_EXAMPLES raises the example count.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping
from decimal import Decimal
from functools import cache

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.sparql import (
    IRI,
    XSD,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BinaryOp,
    Expr,
    FunctionCall,
    In,
    Literal,
    UnaryOp,
    Var,
)
from rsep.plugin.algebra.terms import literal_nt
from rsep.plugin.expr import ExprError, compile_expr, compile_filter
from rsep.plugin.expr.decimals import EXACT
from rsep.plugin.expr.values import (
    DECIMAL,
    DOUBLE,
    DURATION_KINDS,
    FLOAT,
    INTEGER,
    NUMERIC_DATATYPES,
    OTHER,
    TEMPORAL_KINDS,
    format_decimal,
    format_double,
    format_float,
    parse_term,
    to_f32,
)

pyoxigraph = pytest.importorskip("pyoxigraph")

EXAMPLES = int(os.environ.get("RSEP_EXPR_EXAMPLES", "300"))
ERROR = "<error>"
XSD_FLOAT = XSD + "float"
BNODE_LABELS = ("b0", "b1", "b2")

DEVIATIONS = {
    "identical-order": "Oxigraph orders two identical terms as equal before looking at their types "
    "(<a> <= <a> is true, NaN >= NaN is true); SPARQL: a type error / false",
    "nan-order": "an order comparison with NaN is false (XPath op:numeric-less-than); Oxigraph errors",
    "temporal-plus": "Oxigraph only adds duration to date/time in that order, and its optimizer may swap "
    "the operands of + (the result then depends on variable names); XPath defines both orders",
    "decimal-division": "Oxigraph's fixed-point xsd:decimal division fails on some operands "
    "(0 / 0.5, 171 / 0.005847953216374269), which have a quotient",
    "boolean-order": "Oxigraph has no order on xsd:boolean; SPARQL §17.3 defines false < true",
    "oxigraph-limits": "Oxigraph's xsd:integer is 64-bit and its xsd:decimal has 18 fractional digits "
    "(|value| < 1.7e20): beyond, it errors; ours are exact",
    "ill-formed-ebv": "the EBV of an ill-formed numeric/boolean literal is false (§17.2.2); Oxigraph errors",
    "cast-whitespace": "XPath casts from xsd:string collapse whitespace first; Oxigraph does not",
    "double-to-string": "XPath casts a double/float outside [1e-6, 1e6) to string in scientific form (1.0E7)",
    "replace-empty-match": "fn:replace rejects a pattern that matches the empty string (FORX0003)",
    "regex-whitespace": "XPath's \\s is [ \\t\\n\\r]; Oxigraph (Rust regex) matches any Unicode white space",
    "replace-escapes": "fn:replace replacement strings use \\$ and \\\\ escapes (Oxigraph: Rust syntax)",
    "strdt-canonical": "STRDT keeps the given lexical form; Oxigraph canonicalises it",
    "duration-cast": "XPath casts between duration types drop the part the target cannot hold",
    "double-conversion": "Oxigraph converts double/float to integer/decimal through an inexact "
    "fixed-point multiplication (xsd:integer(2058054298259.0e0) = 2058054298258)",
}
OBSERVED: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if OBSERVED:
        print("\naccepted deviations from Oxigraph:")
        for reason, count in OBSERVED.most_common():
            print(f"  {count:5d}  {reason}: {DEVIATIONS[reason]}")


# --------------------------------------------------------------------------- the oracle

STORE = pyoxigraph.Store()
for _label in BNODE_LABELS:
    STORE.add(
        pyoxigraph.Quad(
            pyoxigraph.NamedNode(f"urn:bnode:{_label}"),
            pyoxigraph.NamedNode("urn:is"),
            pyoxigraph.BlankNode(_label),
        )
    )


def to_sparql(node: Expr) -> str:
    """SPARQL text of an expression (fully parenthesised)."""
    if isinstance(node, Var):
        return f"?{node.name}"
    if isinstance(node, IRI):
        return f"<{node.value}>"
    if isinstance(node, Literal):
        return literal_nt(node.lexical, node.datatype, node.language)
    if isinstance(node, BinaryOp):
        return f"({to_sparql(node.left)} {node.op} {to_sparql(node.right)})"
    if isinstance(node, UnaryOp):
        return f"({node.op}{to_sparql(node.operand)})"
    if isinstance(node, In):
        options = ", ".join(to_sparql(option) for option in node.options)
        return f"({to_sparql(node.expr)} {'NOT IN' if node.negated else 'IN'} ({options}))"
    if isinstance(node, FunctionCall):
        name = f"<{node.name.value}>" if isinstance(node.name, IRI) else node.name
        return f"{name}({', '.join(to_sparql(argument) for argument in node.args)})"
    raise TypeError(node)


def lift_constants(node: Expr, bindings: dict[str, str]) -> Expr:
    """Replace constant leaves by VALUES-bound variables ?k0, ?k1, ..."""
    if isinstance(node, (Literal, IRI)):
        name = f"k{len(bindings)}"
        bindings[name] = (
            literal_nt(node.lexical, node.datatype, node.language)
            if isinstance(node, Literal)
            else f"<{node.value}>"
        )
        return Var(name)
    if isinstance(node, BinaryOp):
        return BinaryOp(node.op, lift_constants(node.left, bindings), lift_constants(node.right, bindings))
    if isinstance(node, UnaryOp):
        return UnaryOp(node.op, lift_constants(node.operand, bindings))
    if isinstance(node, In):
        return In(
            lift_constants(node.expr, bindings),
            tuple(lift_constants(option, bindings) for option in node.options),
            node.negated,
        )
    if isinstance(node, FunctionCall):
        if node.name == "BOUND":
            return node
        return FunctionCall(node.name, tuple(lift_constants(argument, bindings) for argument in node.args))
    return node


def _where(expr: Expr, mapping: Mapping[str, str | None]) -> tuple[str, str]:
    constants: dict[str, str] = {}
    lifted = lift_constants(expr, constants)
    values = {name: term for name, term in mapping.items() if term is None or not term.startswith("_:")}
    values.update(constants)
    names = sorted(values)
    row = " ".join(values[name] or "UNDEF" for name in names)
    blanks = " ".join(
        f"<urn:bnode:{term[2:]}> <urn:is> ?{name} ."
        for name, term in sorted(mapping.items())
        if term is not None and term.startswith("_:")
    )
    variables = " ".join(f"?{name}" for name in names)
    return to_sparql(lifted), f"VALUES ({variables}) {{ ({row}) }} {blanks}"


def oracle_value(expr: Expr, mapping: Mapping[str, str | None]) -> str:
    text, where = _where(expr, mapping)
    rows = list(STORE.query(f"SELECT ({text} AS ?r) WHERE {{ {where} }}"))
    assert len(rows) == 1
    term = rows[0]["r"]
    return ERROR if term is None else str(term)


def oracle_filter(expr: Expr, mapping: Mapping[str, str | None]) -> bool:
    text, where = _where(expr, mapping)
    return len(list(STORE.query(f"SELECT * WHERE {{ {where} FILTER({text}) }}"))) == 1


def canonical(term: str) -> str:
    """How Oxigraph prints a term it was given."""
    if term == ERROR or term.startswith("_:"):
        return term
    rows = list(STORE.query(f"SELECT ?x WHERE {{ VALUES ?x {{ {term} }} }}"))
    return str(rows[0]["x"])


# --------------------------------------------------------------------------- our side


def bound(mapping: Mapping[str, str | None]) -> dict[str, str]:
    return {name: term for name, term in mapping.items() if term is not None}


def our_value(expr: Expr, mapping: Mapping[str, str | None]) -> str:
    try:
        return compile_expr(expr)(bound(mapping))
    except ExprError:
        return ERROR


# --------------------------------------------------------------------------- explaining differences


def _children(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, BinaryOp):
        return (node.left, node.right)
    if isinstance(node, UnaryOp):
        return (node.operand,)
    if isinstance(node, In):
        return (node.expr, *node.options)
    if isinstance(node, FunctionCall):
        return node.args
    return ()


def _is_out_of_oxigraph_range(term: str) -> bool:
    if term == ERROR:
        return False
    value = parse_term(term)
    if value.k == INTEGER:
        return not -(2**63) <= value.v < 2**63
    if value.k == DECIMAL:
        number: Decimal = value.v
        exponent = number.normalize(EXACT).as_tuple().exponent
        assert isinstance(exponent, int)
        return abs(number) >= Decimal(2**127) / Decimal(10**18) or -exponent > 18
    return False


def _kind(term: str) -> int | None:
    return None if term == ERROR else parse_term(term).k


def _classify(node: Expr, children: list[str], mine: str, theirs: str) -> str | None:
    """The reason for a disagreement local to `node` (its children agree), if known."""
    if _is_out_of_oxigraph_range(mine) and theirs == ERROR:
        return "oxigraph-limits"
    if isinstance(node, BinaryOp) and node.op in ("<", ">", "<=", ">="):
        if children[0] == children[1] and children[0] != ERROR:
            return "identical-order"
        if all(child != ERROR and parse_term(child).dt == XSD_BOOLEAN for child in children):
            return "boolean-order"
        if theirs == ERROR and any(
            child != ERROR and _kind(child) in (DOUBLE, FLOAT) and parse_term(child).v != parse_term(child).v
            for child in children
        ):
            return "nan-order"
    if isinstance(node, BinaryOp) and node.op == "+" and theirs == ERROR and ERROR not in children:
        kinds = {_kind(child) for child in children}
        if kinds & TEMPORAL_KINDS and kinds & DURATION_KINDS:
            return "temporal-plus"
    if isinstance(node, FunctionCall) and node.name == "SUBSTR" and theirs == ERROR and ERROR not in children:
        numbers = [parse_term(child).v for child in children[1:]]
        if not all(
            -(2**63) <= bound < 2**63 for bound in (numbers[0] - 1, numbers[0] - 1 + sum(numbers[1:]))
        ):
            return "oxigraph-limits"
    if isinstance(node, BinaryOp) and node.op == "/" and theirs == ERROR and _kind(mine) == DECIMAL:
        return "decimal-division"
    logical = (isinstance(node, BinaryOp) and node.op in ("&&", "||")) or (
        isinstance(node, UnaryOp) and node.op == "!"
    )
    if logical or (isinstance(node, FunctionCall) and node.name == "IF"):
        for child in children if logical else children[:1]:
            if child != ERROR and parse_term(child).k == OTHER:
                datatype = parse_term(child).dt
                if datatype in NUMERIC_DATATYPES or datatype == XSD_BOOLEAN:
                    return "ill-formed-ebv"
    if isinstance(node, FunctionCall) and isinstance(node.name, IRI):
        argument = children[0]
        if argument != ERROR and argument.startswith('"') and parse_term(argument).k == 5:
            text = parse_term(argument).v
            if text != text.strip(" \t\n\r"):
                return "cast-whitespace"
        if node.name.value == XSD_STRING and _kind(argument) in (DOUBLE, FLOAT):
            number = abs(parse_term(argument).v)
            if number == number and not 1e-6 <= number < 1e6 and number not in (0, float("inf")):
                return "double-to-string"
        if node.name.value in (XSD + "yearMonthDuration", XSD + "dayTimeDuration") and theirs == ERROR:
            return "duration-cast"
        if (
            node.name.value in (XSD_INTEGER, XSD_DECIMAL)
            and _kind(argument) in (DOUBLE, FLOAT)
            and ERROR not in (mine, theirs)
        ):
            ours_number = Decimal(parse_term(mine).v)
            their_number = Decimal(parse_term(theirs).v)
            if abs(ours_number - their_number) <= max(1, abs(ours_number) * Decimal("1e-15")):
                return "double-conversion"
    if isinstance(node, FunctionCall) and node.name in ("REGEX", "REPLACE") and ERROR not in children[:2]:
        text = str(parse_term(children[0]).v)
        if "\\s" in str(parse_term(children[1]).v) and any(
            char.isspace() and char not in " \t\n\r" for char in text
        ):
            return "regex-whitespace"
    if isinstance(node, FunctionCall) and node.name == "REPLACE":
        if mine == ERROR and theirs != ERROR:
            from rsep.plugin.expr import xpath_regex

            try:
                flags = parse_term(children[3]).v if len(children) > 3 else ""
                regex = xpath_regex.compile_regex(parse_term(children[1]).v, flags)
                if xpath_regex.matches_empty(regex):
                    return "replace-empty-match"
            except ExprError:
                pass
        if children[2] != ERROR and "\\" in str(parse_term(children[2]).v):
            return "replace-escapes"
    if (
        isinstance(node, FunctionCall)
        and node.name == "STRDT"
        and mine != ERROR
        and canonical(mine) == theirs
    ):
        return "strdt-canonical"
    return None


def _explain(node: Expr, mapping: Mapping[str, str | None]) -> tuple[bool, str]:
    """(explained, reason) for a node on which the two evaluators disagree."""
    mine = our_value(node, mapping)
    theirs = oracle_value(node, mapping)
    if mine == theirs:
        return True, ""
    children = _children(node)
    reasons = [_explain(child, mapping) for child in children]
    disagreeing = [reason for reason in reasons if reason[1]]
    if disagreeing:
        unexplained = [reason for reason in disagreeing if not reason[0]]
        return (False, unexplained[0][1]) if unexplained else disagreeing[0]
    reason = _classify(node, [our_value(child, mapping) for child in children], mine, theirs)
    if reason is None:
        return False, f"{to_sparql(node)}: ours {mine}, Oxigraph {theirs}"
    return True, reason


def explain(expr: Expr, mapping: Mapping[str, str | None]) -> tuple[bool, str]:
    """Explain a disagreement on `expr`, its constants bound to the same
    variables as in the failing query (Oxigraph's results can depend on
    variable names, see "temporal-plus")."""
    constants: dict[str, str] = {}
    lifted = lift_constants(expr, constants)
    return _explain(lifted, {**mapping, **constants})


def assert_agrees(expr: Expr, mapping: Mapping[str, str | None], mine: str, theirs: str) -> None:
    if mine == theirs:
        return
    explained, reason = explain(expr, mapping)
    if not reason:  # the disagreement vanished when re-evaluated node by node
        explained, reason = False, f"{to_sparql(expr)}: ours {mine}, Oxigraph {theirs}"
    assert explained, f"unexplained difference: {reason}"
    note(f"accepted: {reason}")
    OBSERVED[reason] += 1


# --------------------------------------------------------------------------- term strategies


def _typed(lexical: str, datatype: str) -> str:
    return literal_nt(lexical, datatype)


integers = st.one_of(
    st.integers(-20, 20), st.integers(-(10**6), 10**6), st.integers(-(2**63), 2**63 - 1)
).map(lambda n: _typed(str(n), XSD_INTEGER))
decimals = st.one_of(
    st.decimals(min_value=-(10**5), max_value=10**5, places=3, allow_nan=False),
    st.decimals(min_value=-(10**15), max_value=10**15, places=6, allow_nan=False),
).map(lambda d: _typed(format_decimal(d), XSD_DECIMAL))
doubles = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, -2.5, 1e-7, 1e7, 3.25, float("nan"), float("inf"), float("-inf")]),
    st.floats(-1e6, 1e6),
    st.floats(allow_nan=True, allow_infinity=True),
).map(lambda x: _typed(format_double(x), XSD_DOUBLE))
floats = st.floats(width=32, allow_nan=True, allow_infinity=True).map(
    lambda x: _typed(format_float(to_f32(x)), XSD_FLOAT)
)
numbers = st.one_of(integers, integers, decimals, doubles, floats)
booleans = st.sampled_from(["true", "false"]).map(lambda b: _typed(b, XSD_BOOLEAN))
TEXT = st.one_of(
    st.text(alphabet="aAbBc é1-. _\n$ß", max_size=6),
    st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r"), max_size=4),
)
LANGS = st.sampled_from(["en", "en-us", "fr", "de-ch"])
strings = st.one_of(
    TEXT.map(lambda s: literal_nt(s)),
    st.tuples(TEXT, LANGS).map(lambda pair: literal_nt(pair[0], language=pair[1])),
)


def _year(year: int) -> str:
    return f"{'-' if year < 0 else ''}{abs(year):04d}"


@st.composite
def date_times(draw: st.DrawFn) -> str:
    year = draw(st.one_of(st.integers(1995, 2030), st.integers(-3000, 12000)))
    month = draw(st.integers(1, 12))
    day = draw(st.integers(1, 28) | st.sampled_from([29, 30, 31]))
    day = min(
        day,
        29
        if month == 2 and year % 4 == 0 and (year % 100 or year % 400 == 0)
        else 28
        if month == 2
        else 30
        if month in (4, 6, 9, 11)
        else 31,
    )
    hour, minute, second = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    fraction = draw(st.sampled_from(["", "", ".5", ".25"]))
    tz = draw(st.sampled_from(["", "", "Z", "+01:00", "-05:30", "+14:00"]))
    kind = draw(st.sampled_from(["dateTime", "dateTime", "date", "time"]))
    if kind == "date":
        text = f"{_year(year)}-{month:02d}-{day:02d}{tz}"
    elif kind == "time":
        text = f"{hour:02d}:{minute:02d}:{second:02d}{fraction}{tz}"
    else:
        text = f"{_year(year)}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{tz}"
    return canonical_input(_typed(text, XSD + kind))


@st.composite
def durations(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["dayTimeDuration", "yearMonthDuration", "duration"]))
    sign = draw(st.sampled_from(["", "-"]))
    months = draw(st.integers(0, 30)) if kind != "dayTimeDuration" else 0
    seconds = draw(st.integers(0, 3 * 86400)) if kind != "yearMonthDuration" else 0
    fraction = draw(st.sampled_from(["", "", ".5"])) if kind != "yearMonthDuration" else ""
    if not months and not seconds and not fraction:
        text = "P0M" if kind == "yearMonthDuration" else "PT0S"
    else:
        text = f"{sign}P{months}M" if months else f"{sign}P"
        if seconds or fraction:
            text += f"T{seconds}{fraction}S"
    return canonical_input(_typed(text, XSD + kind))


def canonical_input(term: str) -> str:
    return canonical(term)


iris = st.sampled_from(["<http://example.org/a>", "<http://example.org/b>", "<urn:x>"])
bnodes = st.sampled_from([f"_:{label}" for label in BNODE_LABELS])
others = st.sampled_from(
    [
        '"abc"^^<http://example.org/dt>',
        '"1"^^<http://example.org/dt>',
        _typed("abc", XSD_INTEGER),
        _typed("maybe", XSD_BOOLEAN),
    ]
)
temporals = st.one_of(date_times(), durations())
any_term = st.one_of(numbers, strings, booleans, temporals, iris, bnodes, others)

CATEGORIES = {
    "n0": numbers,
    "n1": numbers,
    "n2": numbers,
    "s0": strings,
    "s1": strings,
    "t0": temporals,
    "t1": temporals,
    "b0": booleans,
    "x0": any_term,
}


@st.composite
def mappings(draw: st.DrawFn) -> dict[str, str | None]:
    mapping: dict[str, str | None] = {}
    for name, strategy in CATEGORIES.items():
        choice = draw(st.integers(0, 9))
        if choice == 0:
            mapping[name] = None
        elif choice == 1:
            mapping[name] = draw(any_term)
        else:
            mapping[name] = draw(strategy)
    return mapping


# --------------------------------------------------------------------------- expression strategies


def _const(term: str) -> Expr:
    if term.startswith("<"):
        return IRI(term[1:-1])
    value = parse_term(term)
    if value.lang is not None:
        return Literal(value.lex, value.dt, value.lang)
    return Literal(value.lex, value.dt)


def _var(names: str) -> st.SearchStrategy[Expr]:
    return st.sampled_from([Var(name) for name in names.split()])


def _call(name: str | IRI, *args: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.tuples(*args).map(lambda values: FunctionCall(name, tuple(values)))


def _binary(
    ops: list[str], left: st.SearchStrategy[Expr], right: st.SearchStrategy[Expr]
) -> st.SearchStrategy[Expr]:
    return st.tuples(st.sampled_from(ops), left, right).map(lambda t: BinaryOp(t[0], t[1], t[2]))


PATTERN_ATOMS = ["a", "b", "c", "B", ".", "[a-c]", "[^a]", "\\d", "\\s", "é", "(a|b)", "(c)"]


def _pattern(start: str, atoms: list[str], quantifiers: list[str], end: str) -> str:
    return (
        start + "".join(atom + quantifier for atom, quantifier in zip(atoms, quantifiers, strict=False)) + end
    )


patterns = st.builds(
    _pattern,
    st.sampled_from(["", "", "^"]),
    st.lists(st.sampled_from(PATTERN_ATOMS), min_size=1, max_size=3),
    st.lists(st.sampled_from(["", "", "", "*", "+", "?", "{1,2}"]), min_size=3, max_size=3),
    st.sampled_from(["", "", "$"]),
).map(lambda p: Literal(p))
regex_flags = st.sampled_from(["", "i", "s", "m", "x", "q", "im", "z"]).map(lambda f: Literal(f))
replacements = st.sampled_from(["X", "", "$1", "[$0]", "$1-", "-$2-", "\\$", "\\\\"]).map(
    lambda r: Literal(r)
)
language_ranges = st.sampled_from(["en", "*", "EN-US", "fr", "de"]).map(lambda r: Literal(r))
language_tags = st.sampled_from(["en", "fr-CA", "x-abc", "en us", ""]).map(lambda r: Literal(r))
datatypes = st.sampled_from(
    [XSD_INTEGER, XSD_DECIMAL, XSD_DOUBLE, XSD_STRING, XSD_BOOLEAN, XSD + "dateTime"]
).map(IRI)


@cache
def expressions(depth: int) -> dict[str, st.SearchStrategy[Expr]]:
    """Typed expression strategies of at most `depth` levels."""
    num_leaf = st.one_of(_var("n0 n1 n2 x0"), numbers.map(_const))
    str_leaf = st.one_of(_var("s0 s1 x0"), strings.map(_const))
    bool_leaf = st.one_of(_var("b0 x0"), booleans.map(_const))
    time_leaf = st.one_of(_var("t0 t1 x0"), temporals.map(_const))
    any_leaf = st.one_of(
        num_leaf,
        str_leaf,
        bool_leaf,
        time_leaf,
        any_term.filter(lambda t: not t.startswith("_:")).map(_const),
    )
    if depth == 0:
        return {"num": num_leaf, "str": str_leaf, "bool": bool_leaf, "time": time_leaf, "any": any_leaf}
    sub = expressions(depth - 1)
    num, text, cond, when, anything = sub["num"], sub["str"], sub["bool"], sub["time"], sub["any"]
    cast_names = [IRI(XSD_INTEGER), IRI(XSD_DECIMAL), IRI(XSD_DOUBLE), IRI(XSD_FLOAT)]
    num_node = st.one_of(
        _binary(["+", "-", "*", "/"], num, num),
        st.tuples(st.sampled_from(["-", "+"]), num).map(lambda t: UnaryOp(t[0], t[1])),
        st.sampled_from(["ABS", "ROUND", "CEIL", "FLOOR"]).flatmap(lambda name: _call(name, num)),
        _call("STRLEN", text),
        st.sampled_from(["YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS"]).flatmap(
            lambda name: _call(name, when)
        ),
        st.sampled_from(cast_names).flatmap(lambda name: _call(name, anything)),
        _call("IF", cond, num, num),
        _call("COALESCE", num, num),
    )
    str_node = st.one_of(
        _call("CONCAT", text, text),
        _call("CONCAT", text),
        _call("SUBSTR", text, num),
        _call("SUBSTR", text, num, num),
        st.sampled_from(
            ["UCASE", "LCASE", "ENCODE_FOR_URI", "MD5", "SHA1", "SHA256", "SHA384", "SHA512"]
        ).flatmap(lambda name: _call(name, text)),
        st.sampled_from(["STRBEFORE", "STRAFTER"]).flatmap(lambda name: _call(name, text, text)),
        st.sampled_from(["STR", "LANG"]).flatmap(lambda name: _call(name, anything)),
        _call("REPLACE", text, patterns, replacements),
        _call("REPLACE", text, patterns, replacements, regex_flags),
        _call(IRI(XSD_STRING), anything),
        _call("STRLANG", text, language_tags),
        _call("TZ", when),
        _call("IF", cond, text, text),
    )
    comparison_ops = ["=", "!=", "<", ">", "<=", ">="]
    bool_node = st.one_of(
        _binary(["&&", "||"], cond, cond),
        cond.map(lambda operand: UnaryOp("!", operand)),
        _binary(comparison_ops, num, num),
        _binary(comparison_ops, text, text),
        _binary(comparison_ops, when, when),
        _binary(comparison_ops, anything, anything),
        st.tuples(anything, st.lists(anything, min_size=1, max_size=3), st.booleans()).map(
            lambda t: In(t[0], tuple(t[1]), t[2])
        ),
        st.sampled_from(["ISIRI", "ISURI", "ISBLANK", "ISLITERAL", "ISNUMERIC"]).flatmap(
            lambda name: _call(name, anything)
        ),
        _call("SAMETERM", anything, anything),
        st.sampled_from(["STRSTARTS", "STRENDS", "CONTAINS"]).flatmap(lambda name: _call(name, text, text)),
        _call("REGEX", text, patterns),
        _call("REGEX", text, patterns, regex_flags),
        _call("LANGMATCHES", _call("LANG", anything), language_ranges),
        _call(IRI(XSD_BOOLEAN), anything),
        _var("n0 s0 t0 b0 x0").map(lambda v: FunctionCall("BOUND", (v,))),
    )
    time_node = st.one_of(
        _binary(["+", "-"], when, when),
        _call(IRI(XSD + "dateTime"), anything),
        _call(IRI(XSD + "date"), when),
        _call(IRI(XSD + "time"), when),
        _call(IRI(XSD + "dayTimeDuration"), when),
        _call(IRI(XSD + "yearMonthDuration"), when),
        _call("TIMEZONE", when),
    )
    any_node = st.one_of(
        _call("DATATYPE", anything),
        st.sampled_from(["IRI", "URI"]).flatmap(lambda name: _call(name, text)),
        _call("IRI", strings.map(lambda t: _const(literal_nt("http://example.org/" + parse_term(t).v)))),
        _call("STRDT", text, datatypes),
        _call("COALESCE", anything, anything),
    )
    return {
        "num": st.one_of(num_leaf, num_node),
        "str": st.one_of(str_leaf, str_node),
        "bool": st.one_of(bool_leaf, bool_node),
        "time": st.one_of(time_leaf, time_node),
        "any": st.one_of(any_leaf, num_node, str_node, bool_node, time_node, any_node),
    }


EXPRESSIONS = st.integers(1, 3).flatmap(lambda depth: expressions(depth)["any"])
CONDITIONS = st.integers(1, 3).flatmap(lambda depth: expressions(depth)["bool"])

SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@SETTINGS
@given(EXPRESSIONS, mappings())
def test_value_agrees_with_oxigraph(expr: Expr, mapping: dict[str, str | None]) -> None:
    note(to_sparql(expr))
    note(repr(mapping))
    assert_agrees(expr, mapping, our_value(expr, mapping), oracle_value(expr, mapping))


@SETTINGS
@given(CONDITIONS, mappings())
def test_filter_agrees_with_oxigraph(expr: Expr, mapping: dict[str, str | None]) -> None:
    note(to_sparql(expr))
    note(repr(mapping))
    mine = compile_filter(expr)(bound(mapping))
    theirs = oracle_filter(expr, mapping)
    if mine != theirs:
        # the EBV of the value decides the filter: explain the value difference
        explained, reason = explain(expr, mapping)
        if not reason:
            value = our_value(expr, mapping)
            if value != ERROR and parse_term(value).k == OTHER:
                explained, reason = True, "ill-formed-ebv"
        assert explained and reason, f"unexplained FILTER difference: {reason or to_sparql(expr)}"
        OBSERVED[reason] += 1
