"""The closures compiled expressions are made of.

An evaluator maps a solution (variable name -> N-Triples term) to a Value, a
predicate to a bool; both raise ExprError for a SPARQL error. The builders
here are the hot path: they read and parse terms themselves where a filter
compares variables, keep constants bound in the closure, and memoise what
depends on a single variable's term.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from rsep.plugin.algebra.sparql import IRI, BinaryOp, Expr, FunctionCall, In, Literal, UnaryOp, Var
from rsep.plugin.expr.errors import ExprError
from rsep.plugin.expr.operators import EQUAL, GREATER, LESS, compare, equals
from rsep.plugin.expr.values import FALSE, TRUE, Value, parse_term

Solution = Mapping[str, str]
Evaluator = Callable[[Solution], Value]
Predicate = Callable[[Solution], bool]

NO_SOLUTION: Final[dict[str, str]] = {}

MEMO_SIZE: Final = 4096
"""Distinct terms remembered per memoised single-variable sub-expression."""

IMPURE: Final = frozenset({"RAND", "NOW", "UUID", "STRUUID", "BNODE"})
"""Built-ins whose value is not a function of their arguments."""

ORDER_TESTS: Final[dict[str, frozenset[int]]] = {
    "<": frozenset({LESS}),
    ">": frozenset({GREATER}),
    "<=": frozenset({LESS, EQUAL}),
    ">=": frozenset({GREATER, EQUAL}),
}
"""The outcomes of `compare` for which each order operator holds (UNORDERED: none)."""


@dataclass(slots=True)
class Compiled:
    """An evaluator and what is known about it at compile time."""

    evaluate: Evaluator
    is_constant: bool = False  # does not depend on the solution (it may be a constant error)
    constant: Value | None = None  # its value when constant and not an error
    variable: str | None = None  # set when the expression is just this variable


def constant(value: Value) -> Compiled:
    return Compiled(lambda solution: value, True, value)


def raiser(message: str) -> Evaluator:
    def fail(solution: Solution) -> Value:
        raise ExprError(message)

    return fail


def fold(evaluate: Evaluator) -> Compiled:
    """Evaluate a solution-independent evaluator once, at compile time."""
    try:
        value = evaluate(NO_SOLUTION)
    except ExprError as error:
        return Compiled(raiser(str(error)), True, None)
    return constant(value)


def as_term(predicate: Predicate) -> Evaluator:
    """A predicate in value position: its result as an xsd:boolean term."""
    return lambda solution: TRUE if predicate(solution) else FALSE


def unbound(solution: Solution, *names: str) -> ExprError:
    missing = [f"?{name}" for name in names if solution.get(name) is None]
    return ExprError(f"unbound variable {', '.join(missing)}")


def variable(name: str) -> Evaluator:
    """The parsed term bound to `name`; an unbound variable is an error (§17.2)."""
    parse = parse_term
    message = f"unbound variable ?{name}"

    def read(solution: Solution) -> Value:
        try:
            term = solution[name]
        except KeyError:
            raise ExprError(message) from None
        if term is None:
            raise ExprError(message)
        return parse(term)

    return read


# --------------------------------------------------------------------------- memoisation


def free_variables(node: Expr) -> frozenset[str] | None:
    """The variables an expression reads, or None if it is not a pure function
    of them (RAND, NOW, UUID, STRUUID, BNODE, EXISTS, aggregates)."""
    if isinstance(node, Var):
        return frozenset((node.name,))
    if isinstance(node, (Literal, IRI)):
        return frozenset()
    if isinstance(node, BinaryOp):
        children: tuple[Expr, ...] = (node.left, node.right)
    elif isinstance(node, UnaryOp):
        children = (node.operand,)
    elif isinstance(node, In):
        children = (node.expr, *node.options)
    elif isinstance(node, FunctionCall):
        if isinstance(node.name, str) and node.name.upper() in IMPURE:
            return None
        children = node.args
    else:
        return None
    result: frozenset[str] = frozenset()
    for child in children:
        variables = free_variables(child)
        if variables is None:
            return None
        result |= variables
    return result


def memoize_value(evaluate: Evaluator, name: str) -> Evaluator:
    """`evaluate` depends on `name` only: compute it once per distinct term.
    Errors are not remembered; an unbound variable bypasses the memo."""

    @lru_cache(maxsize=MEMO_SIZE)
    def on_term(term: str) -> Value:
        return evaluate({name: term})

    def memoized(solution: Solution) -> Value:
        term = solution.get(name)
        return evaluate(solution) if term is None else on_term(term)

    return memoized


def memoize_predicate(predicate: Predicate, name: str) -> Predicate:
    """The predicate version of `memoize_value`."""

    @lru_cache(maxsize=MEMO_SIZE)
    def on_term(term: str) -> bool:
        return predicate({name: term})

    def memoized(solution: Solution) -> bool:
        term = solution.get(name)
        return predicate(solution) if term is None else on_term(term)

    return memoized


# --------------------------------------------------------------------------- comparisons


def comparison(operator: str, left: Compiled, right: Compiled) -> Predicate:
    """`=`, `!=` (§17.4.1.7) and the order comparisons. The shapes stateful
    filters are made of (variable against variable, against a constant) get
    closures that read and parse the terms themselves."""
    test = ORDER_TESTS.get(operator)
    negated = operator == "!="
    if left.variable is not None and right.variable is not None:
        return _compare_variables(left.variable, right.variable, test, negated)
    first = left.evaluate
    second = right.evaluate
    if right.constant is not None:
        fixed = right.constant
        if test is None:
            return lambda solution: equals(first(solution), fixed) != negated
        return lambda solution: compare(first(solution), fixed) in test
    if left.constant is not None:
        fixed = left.constant
        if test is None:
            return lambda solution: equals(fixed, second(solution)) != negated
        return lambda solution: compare(fixed, second(solution)) in test
    if test is None:
        return lambda solution: equals(first(solution), second(solution)) != negated
    return lambda solution: compare(first(solution), second(solution)) in test


def _compare_variables(
    first_name: str, second_name: str, test: frozenset[int] | None, negated: bool
) -> Predicate:
    parse = parse_term
    if test is None:

        def equal_variables(solution: Solution) -> bool:
            try:
                first = solution[first_name]
                second = solution[second_name]
            except KeyError:
                raise unbound(solution, first_name, second_name) from None
            if first is None or second is None:
                raise unbound(solution, first_name, second_name)
            return equals(parse(first), parse(second)) != negated

        return equal_variables

    def order_variables(solution: Solution) -> bool:
        try:
            first = solution[first_name]
            second = solution[second_name]
        except KeyError:
            raise unbound(solution, first_name, second_name) from None
        if first is None or second is None:
            raise unbound(solution, first_name, second_name)
        return compare(parse(first), parse(second)) in test

    return order_variables


# --------------------------------------------------------------------------- logic


def conjunction(left: Predicate, right: Predicate) -> Predicate:
    """`&&` (§17.2, logical-and): false wins over an error, an error over true."""

    def both(solution: Solution) -> bool:
        try:
            if not left(solution):
                return False
        except ExprError:
            if not right(solution):
                return False
            raise
        return right(solution)

    return both


def disjunction(left: Predicate, right: Predicate) -> Predicate:
    """`||` (§17.2, logical-or): true wins over an error, an error over false."""

    def either(solution: Solution) -> bool:
        try:
            if left(solution):
                return True
        except ExprError:
            if right(solution):
                return True
            raise
        return right(solution)

    return either


def membership(subject: Evaluator, options: list[Evaluator], negated: bool) -> Predicate:
    """IN / NOT IN (§17.4.1.9-10): `=` against each option joined by `||`
    (NOT IN: `!=` joined by `&&`); an error counts only if no option matches."""

    def member(solution: Solution) -> bool:
        value = subject(solution)
        failure: ExprError | None = None
        for option in options:
            try:
                if equals(value, option(solution)):
                    return not negated
            except ExprError as error:
                failure = error
        if failure is not None:
            raise failure
        return negated

    return member
