"""Which GPMs the GPM stage may match in Python, without loading the events into Oxigraph.

A GPM's event part (`rsep.plugin.compile.gpm_plan`: what runs as `GRAPH ?e { P }` over a batch
store) is *simple* when P is a basic graph pattern, possibly split in nested groups, with FILTERs
over its own variables that the expression evaluator (`rsep.plugin.expr`) evaluates the way
Oxigraph does. The GPM stage then matches the triple patterns against each event's triples itself
(`rsep.plugin.store.fast_gpm`); every other GPM, and the background part of any GPM, keeps going
to Oxigraph.

What is refused, and why (`refusal` says which rule a GPM broke):

- OPTIONAL, UNION, MINUS, BIND, VALUES, sub-selects, GRAPH and SERVICE blocks: their semantics are
  not re-implemented here;
- property paths other than a single IRI (`<p>/<q>`, `<p>*`, `^<p>`, ...);
- a FILTER inside a nested group (its scope is that group, not the BGP), an empty pattern (Oxigraph
  matches it in every non-empty event graph), a blank-node label used in two BGPs;
- a pattern an entailment regime rewrote (its hidden variables make the event query DISTINCT;
  `gpm_plan` does not ask: the rewrites use UNION and VALUES anyway);
- FILTER expressions with EXISTS, aggregates, RAND/NOW/UUID/STRUUID/BNODE (not functions of the
  solution), IRI/URI (their base), STRDT and REPLACE (where the evaluator follows XPath and
  Oxigraph does not), extension functions other than the XSD casts the differential test of the
  evaluator covers, and REGEX unless its pattern and flags are constants in the subset of XPath
  regular expressions that Oxigraph's Rust engine reads alike (`_regex_refusal`).

The remaining data-dependent differences between the evaluator and Oxigraph (NaN and booleans in
order comparisons, integers beyond 64 bits, decimal division, ...) are caught per solution at run
time (`rsep.plugin.store.exact_filters`): the event then goes to Oxigraph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    XSD,
    XSD_STRING,
    BinaryOp,
    BNode,
    Expr,
    Filter,
    FunctionCall,
    GroupPattern,
    In,
    Literal,
    Node,
    TriplePattern,
    UnaryOp,
    Var,
)
from rsep.plugin.errors import InternalError
from rsep.plugin.expr import UnsupportedExpression, compile_filter

FUNCTIONS: Final = frozenset(
    {
        "STR", "LANG", "DATATYPE", "BOUND", "ISIRI", "ISURI", "ISBLANK", "ISLITERAL", "ISNUMERIC",
        "SAMETERM", "LANGMATCHES", "STRLEN", "UCASE", "LCASE", "STRSTARTS", "STRENDS", "CONTAINS",
        "STRBEFORE", "STRAFTER", "CONCAT", "SUBSTR", "ENCODE_FOR_URI", "STRLANG", "ABS", "ROUND",
        "CEIL", "FLOOR", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS", "TIMEZONE", "TZ",
        "MD5", "SHA1", "SHA256", "SHA384", "SHA512", "IF", "COALESCE", "REGEX",
    }
)  # fmt: skip
"""Built-ins evaluated in Python: those the evaluator's differential test against Oxigraph
(tests/expr/test_expr_oxigraph.py) draws, whose known differences `exact_filters` detects."""
CASTS: Final = frozenset(
    XSD + name
    for name in (
        "integer", "decimal", "double", "float", "boolean", "dateTime", "date", "time",
        "dayTimeDuration", "yearMonthDuration",
    )
) | {XSD_STRING}  # fmt: skip
"""The XSD casts that test draws."""
REGEX_FLAGS: Final = frozenset("ism")
"""`x` is left out (Rust reads `#` as a comment in that mode, and XPath keeps the white space of
classes), `q` too (untested)."""


@dataclass(frozen=True, slots=True)
class SimpleGpm:
    """A GPM's event part matched in Python: `triples` (IRI predicates or variables; blank nodes
    are variables that are not projected), then `filters` (conjuncts), the rows projected on
    `projection` (the event query's variables, in its order)."""

    triples: tuple[TriplePattern, ...]
    filters: tuple[Expr, ...]
    projection: tuple[str, ...]


class NotSimple(InternalError):
    """Why a GPM's event part is not simple (caught here: `simple_gpm`, `refusal`)."""


def simple_gpm(
    parts: tuple[Node, ...], filters: tuple[Expr, ...], projection: tuple[str, ...]
) -> SimpleGpm | None:
    """The event part `parts` + `filters` as a `SimpleGpm`, or None when it is not simple."""
    try:
        triples = _triples(parts)
        _check_filters(filters, triples)
    except NotSimple:
        return None
    return SimpleGpm(triples, filters, projection)


def refusal(parts: tuple[Node, ...], filters: tuple[Expr, ...]) -> str | None:
    """Why `simple_gpm` refuses this event part (None: it does not)."""
    try:
        _check_filters(filters, _triples(parts))
    except NotSimple as refused:
        return str(refused)
    return None


def _triples(parts: tuple[Node, ...]) -> tuple[TriplePattern, ...]:
    found: list[TriplePattern] = []
    labels: dict[str, int] = {}
    for number, bgp in enumerate(_bgps(parts, nested=False)):
        for triple in bgp.triples:
            _check_triple(triple)
            for term in (triple.subject, triple.object):
                if isinstance(term, BNode) and labels.setdefault(term.label, number) != number:
                    raise NotSimple(f"the blank node _:{term.label} is used in two basic graph patterns")
            found.append(triple)
    if not found:
        raise NotSimple("an empty pattern matches every event graph that has a triple")
    return tuple(found)


def _bgps(parts: tuple[Node, ...], nested: bool) -> list[BGP]:
    out: list[BGP] = []
    for part in parts:
        if isinstance(part, BGP):
            out.append(part)
        elif type(part) is GroupPattern:
            out.extend(_bgps(part.elements, nested=True))
        elif nested and isinstance(part, Filter):
            raise NotSimple("a FILTER in a nested group applies to that group only")
        else:
            raise NotSimple(f"{type(part).__name__} is matched by Oxigraph")
    return out


def _check_triple(triple: TriplePattern) -> None:
    if not isinstance(triple.predicate, (IRI, Var)):
        raise NotSimple("a property path other than one IRI is matched by Oxigraph")
    for term in (triple.subject, triple.object):
        if not isinstance(term, (Var, IRI, Literal, BNode)):
            raise NotSimple(f"{type(term).__name__} in a triple pattern is matched by Oxigraph")


def _check_filters(filters: tuple[Expr, ...], triples: tuple[TriplePattern, ...]) -> None:
    bound = {
        term.name
        for triple in triples
        for term in (triple.subject, triple.predicate, triple.object)
        if isinstance(term, Var)
    }
    for expr in filters:
        _check_expr(expr, bound)
        try:
            compile_filter(expr)
        except UnsupportedExpression as error:
            raise NotSimple(str(error)) from None


def _check_expr(expr: Expr, bound: set[str]) -> None:
    if isinstance(expr, Var):
        if expr.name not in bound:
            raise NotSimple(f"?{expr.name} is not bound by the pattern")
        return
    if isinstance(expr, (IRI, Literal)):
        return
    if isinstance(expr, BinaryOp):
        _check_expr(expr.left, bound)
        _check_expr(expr.right, bound)
        return
    if isinstance(expr, UnaryOp):
        _check_expr(expr.operand, bound)
        return
    if isinstance(expr, In):
        for item in (expr.expr, *expr.options):
            _check_expr(item, bound)
        return
    if not isinstance(expr, FunctionCall):
        raise NotSimple(f"{type(expr).__name__} in a FILTER is evaluated by Oxigraph")
    if expr.distinct or not _known_function(expr.name):
        raise NotSimple(f"the function {_function_name(expr.name)} is evaluated by Oxigraph")
    if expr.name == "REGEX":
        reason = _regex_refusal(expr.args)
        if reason is not None:
            raise NotSimple(reason)
    for argument in expr.args:
        _check_expr(argument, bound)


def _known_function(name: str | IRI) -> bool:
    return name.value in CASTS if isinstance(name, IRI) else name.upper() in FUNCTIONS


def _function_name(name: str | IRI) -> str:
    return f"<{name.value}>" if isinstance(name, IRI) else name


# --------------------------------------------------------------------------- regular expressions

_META: Final = frozenset(".\\?*+{}()|[]^$")
_ESCAPES: Final = frozenset("nrt\\|.-^?*+{}()[]$ds")
"""XPath's single-character escapes (F&O 3.1 §5.6.1), and `\\d`, `\\s`: the same in Rust's regex
crate (`\\s` differs on non-ASCII white space: checked per solution)."""
_CLASS_LITERAL: Final = re.compile(r"[A-Za-z0-9 _,:;@/!%=<>'\"]")
"""What a character class may hold as a literal here: Rust reads `[`, `&&`, `--` and `~~` inside
classes as nested classes and set operations, XPath reads `-[` as subtraction."""
_REPEAT: Final = re.compile(r"\{([0-9]{1,3})(,([0-9]{1,3})?)?\}")


def _regex_refusal(args: tuple[Expr, ...]) -> str | None:
    """None if REGEX(text, pattern[, flags]) has a constant pattern and constant flags that
    XPath (the evaluator) and Rust's regex crate (Oxigraph) read alike."""
    if len(args) not in (2, 3):
        return "REGEX takes 2 or 3 arguments"
    pattern, *flags = args[1:]
    if not _simple_string(pattern) or (flags and not _simple_string(flags[0])):
        return "REGEX with a pattern or flags that are not constant strings is evaluated by Oxigraph"
    if flags and not set(_lexical(flags[0])) <= REGEX_FLAGS:
        return f"REGEX flags other than {''.join(sorted(REGEX_FLAGS))} are evaluated by Oxigraph"
    text = _lexical(pattern)
    if flags and "i" in _lexical(flags[0]) and not text.isascii():
        return "case-insensitive REGEX with a non-ASCII pattern is evaluated by Oxigraph"
    try:
        _scan_regex(text)
    except NotSimple as refused:
        return f"REGEX pattern {text!r}: {refused}"
    return None


def _simple_string(expr: Expr) -> bool:
    return isinstance(expr, Literal) and expr.datatype == XSD_STRING


def _lexical(expr: Expr) -> str:
    assert isinstance(expr, Literal)
    return expr.lexical


def _scan_regex(pattern: str) -> None:
    """Accepts literal characters, `.`, escapes from `_ESCAPES`, classes of `_CLASS_LITERAL`
    characters and alphanumeric ranges, groups without `(?`, `|`, anchors and quantifiers
    (counted ones up to 999, after something to repeat)."""
    index, depth, repeatable = 0, 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            _escape(pattern, index)
            index, repeatable = index + 2, True
        elif char == "[":
            index, repeatable = _class_end(pattern, index), True
        elif char == "(":
            if pattern.startswith("(?", index):
                raise NotSimple("(? groups are not XPath")
            index, depth, repeatable = index + 1, depth + 1, False
        elif char == ")":
            if depth == 0:
                raise NotSimple("unbalanced )")
            index, depth, repeatable = index + 1, depth - 1, True
        elif char in "*+?{":
            index = _quantifier_end(pattern, index, repeatable)
            repeatable = False
        elif char in "|^$":
            index, repeatable = index + 1, False
        elif char in "]}#" or (char.isspace() and char != " ") or not char.isprintable():
            raise NotSimple(f"{char!r} is read differently")
        else:
            index, repeatable = index + 1, True
    if depth:
        raise NotSimple("unbalanced (")


def _escape(pattern: str, index: int) -> None:
    if index + 1 >= len(pattern) or pattern[index + 1] not in _ESCAPES:
        raise NotSimple(f"the escape {pattern[index : index + 2]!r} is read differently or untested")


def _class_end(pattern: str, index: int) -> int:
    """The index after the class starting at `index`."""
    index += 1
    if pattern.startswith("^", index):
        index += 1
    first = True
    while index < len(pattern) and (pattern[index] != "]" or first):
        if pattern[index] == "\\":
            _escape(pattern, index)
            index += 2
        elif _CLASS_LITERAL.fullmatch(pattern[index]):
            if pattern.startswith("-", index + 1) and index + 2 < len(pattern) and pattern[index + 2] != "]":
                low, high = pattern[index], pattern[index + 2]
                if not (
                    low.isalnum() and high.isalnum() and low.isascii() and high.isascii() and low <= high
                ):
                    raise NotSimple(f"the range {low}-{high} is not an ASCII alphanumeric range")
                index += 3
            else:
                index += 1
        else:
            raise NotSimple(f"{pattern[index]!r} in a character class is read differently or untested")
        first = False
    if index >= len(pattern) or first:
        raise NotSimple("an unterminated or empty character class")
    return index + 1


def _quantifier_end(pattern: str, index: int, repeatable: bool) -> int:
    if not repeatable:
        raise NotSimple(f"{pattern[index]!r} has nothing to repeat")
    if pattern[index] == "{":
        match = _REPEAT.match(pattern, index)
        if match is None:
            raise NotSimple("a { that is not a counted repetition")
        low, high = match.group(1), match.group(3)
        if high is not None and int(high) < int(low):
            raise NotSimple("a repetition {n,m} with m < n")
        index = match.end()
    else:
        index += 1
    return index + 1 if pattern.startswith("?", index) else index
