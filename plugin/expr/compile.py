"""Compile SPARQL expression trees into Python closures.

The NFA runtime evaluates stateful FILTERs for every (partial match, event)
pair, so the tree is walked once, at compile time, into nested closures:
no dispatch on node types at evaluation time, constant sub-expressions
folded, constant regular expressions compiled once, and each distinct
N-Triples term parsed once (`values.parse_term` is memoised).

Boolean contexts (FILTER, `&&`, `||`, `!`, IF conditions) are compiled to
closures returning Python bools directly, so a comparison inside a FILTER
never materialises an xsd:boolean term. Errors are ExprError exceptions;
`&&`/`||` implement the three-valued logic of SPARQL 1.1 §17.2.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Final

from rsep.plugin.algebra.sparql import (
    IRI,
    XSD_STRING,
    Aggregate,
    BinaryOp,
    Exists,
    Expr,
    FunctionCall,
    In,
    Literal,
    UnaryOp,
    Var,
)

from . import functions, operators, temporal
from .errors import ExprError, UnsupportedExpression
from .operators import EQUAL, GREATER, LESS, compare, ebv, equals
from .values import (
    DATETIME,
    DOUBLE,
    FALSE,
    TRUE,
    XSD_DATETIME,
    XSD_DOUBLE,
    Value,
    bnode,
    iri,
    parse_term,
    string,
    typed_literal,
)

Solution = Mapping[str, str]
Evaluator = Callable[[Solution], Value]
Predicate = Callable[[Solution], bool]

_NO_SOLUTION: Final[dict[str, str]] = {}

MEMO_SIZE: Final = 4096
"""Distinct terms remembered per memoised single-variable sub-expression."""

_IMPURE: Final = frozenset({"RAND", "NOW", "UUID", "STRUUID", "BNODE"})


def _free_variables(node: Expr) -> frozenset[str] | None:
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
        if isinstance(node.name, str) and node.name.upper() in _IMPURE:
            return None
        children = node.args
    else:
        return None
    result: frozenset[str] = frozenset()
    for child in children:
        variables = _free_variables(child)
        if variables is None:
            return None
        result |= variables
    return result


@dataclass(slots=True)
class _Compiled:
    """An evaluator; `constant` is its value when it does not depend on the
    solution (None if it does, or if it is a constant error)."""

    evaluate: Evaluator
    is_constant: bool = False
    constant: Value | None = None
    variable: str | None = None  # set when the expression is just this variable


class _CallState:
    """What must stay the same within one evaluation: NOW() and BNODE(str)."""

    __slots__ = ("bnodes", "now")

    def __init__(self) -> None:
        self.now: Value | None = None
        self.bnodes: dict[str, Value] = {}

    def reset(self) -> None:
        self.now = None
        if self.bnodes:
            self.bnodes = {}


def _unbound(solution: Solution, *names: str) -> ExprError:
    missing = [f"?{name}" for name in names if solution.get(name) is None]
    return ExprError(f"unbound variable {', '.join(missing)}")


def _raiser(message: str) -> Evaluator:
    def fail(solution: Solution) -> Value:
        raise ExprError(message)

    return fail


def _constant(value: Value) -> _Compiled:
    return _Compiled(lambda solution: value, True, value)


def _fold(evaluate: Evaluator) -> _Compiled:
    """Evaluate a solution-independent evaluator once, at compile time."""
    try:
        value = evaluate(_NO_SOLUTION)
    except ExprError as error:
        return _Compiled(_raiser(str(error)), True, None)
    return _constant(value)


def literal_value(node: Literal) -> Value:
    if node.language is not None:
        return string(node.lexical, node.language.lower())
    if node.datatype == XSD_STRING:
        return string(node.lexical)
    return typed_literal(node.lexical, node.datatype)


_ORDER_TESTS: Final[dict[str, frozenset[int]]] = {
    "<": frozenset({LESS}),
    ">": frozenset({GREATER}),
    "<=": frozenset({LESS, EQUAL}),
    ">=": frozenset({GREATER, EQUAL}),
}
"""The outcomes of `compare` for which each order operator holds (UNORDERED: none)."""
_ARITHMETIC: Final[dict[str, Callable[[Value, Value], Value]]] = {
    "+": operators.add,
    "-": operators.subtract,
    "*": operators.multiply,
    "/": operators.divide_values,
}
_BOOLEAN_OPERATORS: Final = frozenset({"||", "&&", "=", "!=", "<", ">", "<=", ">="})


class _Compiler:
    def __init__(self) -> None:
        self.state = _CallState()
        self.stateful = False
        self.memoizing = False  # inside a memoised subtree: do not memoise again

    # ----------------------------------------------------------------- memoisation

    def _memo_variable(self, node: Expr) -> str | None:
        """The variable of a pure, non-trivial subtree that depends on exactly one
        variable: its value is a function of that variable's term, so it is
        computed once per distinct term (the NFA re-presents the same event
        bindings to many partial matches)."""
        if self.memoizing or isinstance(node, (Var, Literal, IRI)):
            return None
        variables = _free_variables(node)
        if variables is None or len(variables) != 1:
            return None
        return next(iter(variables))

    def value(self, node: Expr) -> _Compiled:
        name = self._memo_variable(node)
        if name is None:
            return self._value(node)
        self.memoizing = True
        try:
            compiled = self._value(node)
        finally:
            self.memoizing = False
        evaluate = compiled.evaluate

        @lru_cache(maxsize=MEMO_SIZE)
        def on_term(term: str) -> Value:
            return evaluate({name: term})

        def memoized(solution: Solution) -> Value:
            term = solution.get(name)
            return evaluate(solution) if term is None else on_term(term)

        return _Compiled(memoized)

    # ----------------------------------------------------------------- value mode

    def _value(self, node: Expr) -> _Compiled:
        if isinstance(node, Var):
            return _Compiled(self._variable(node.name), variable=node.name)
        if isinstance(node, Literal):
            return _constant(literal_value(node))
        if isinstance(node, IRI):
            return _constant(iri(node.value))
        if isinstance(node, BinaryOp):
            if node.op in _BOOLEAN_OPERATORS:
                return self._from_predicate(node)
            operation = _ARITHMETIC.get(node.op)
            if operation is None:
                raise UnsupportedExpression(f"unknown operator {node.op!r}")
            return self._strict(operation, (node.left, node.right))
        if isinstance(node, UnaryOp):
            if node.op == "!":
                return self._from_predicate(node)
            if node.op == "-":
                return self._strict(operators.negate, (node.operand,))
            if node.op == "+":
                return self._strict(operators.unary_plus, (node.operand,))
            raise UnsupportedExpression(f"unknown unary operator {node.op!r}")
        if isinstance(node, In):
            return self._from_predicate(node)
        if isinstance(node, FunctionCall):
            return self._function(node)
        if isinstance(node, Exists):
            raise UnsupportedExpression("EXISTS / NOT EXISTS needs a dataset, not just a solution mapping")
        if isinstance(node, Aggregate):
            raise UnsupportedExpression(f"the aggregate {node.name} cannot be evaluated on a single mapping")
        raise UnsupportedExpression(f"not an expression: {node!r}")

    def _variable(self, name: str) -> Evaluator:
        parse = parse_term
        message = f"unbound variable ?{name}"

        def variable(solution: Solution) -> Value:
            try:
                term = solution[name]
            except KeyError:
                raise ExprError(message) from None
            if term is None:
                raise ExprError(message)
            return parse(term)

        return variable

    def _from_predicate(self, node: Expr) -> _Compiled:
        """A boolean-valued operator in value position: its predicate, as a term."""
        predicate, is_constant, constant = self._predicate(node)
        if is_constant:
            if constant is None:
                return _fold(lambda solution: TRUE if predicate(solution) else FALSE)
            return _constant(TRUE if constant else FALSE)
        return _Compiled(lambda solution: TRUE if predicate(solution) else FALSE)

    def _strict(
        self, function: Callable[..., Value], arguments: tuple[Expr, ...], pure: bool = True
    ) -> _Compiled:
        """A function of the arguments' values (errors propagate), folded when constant."""
        compiled = [self.value(argument) for argument in arguments]
        evaluators = [item.evaluate for item in compiled]
        evaluate: Evaluator
        if not evaluators:
            evaluate = lambda solution: function()  # noqa: E731
        elif len(evaluators) == 1:
            (first,) = evaluators
            evaluate = lambda solution: function(first(solution))  # noqa: E731
        elif len(evaluators) == 2:
            first, second = evaluators
            if compiled[1].constant is not None:
                right = compiled[1].constant
                evaluate = lambda solution: function(first(solution), right)  # noqa: E731
            elif compiled[0].constant is not None:
                left = compiled[0].constant
                evaluate = lambda solution: function(left, second(solution))  # noqa: E731
            else:
                evaluate = lambda solution: function(first(solution), second(solution))  # noqa: E731
        elif len(evaluators) == 3:
            first, second, third = evaluators
            evaluate = lambda solution: function(first(solution), second(solution), third(solution))  # noqa: E731
        else:
            evaluate = lambda solution: function(*[item(solution) for item in evaluators])  # noqa: E731
        if pure and all(item.is_constant for item in compiled):
            return _fold(evaluate)
        return _Compiled(evaluate)

    # ----------------------------------------------------------------- functions

    def _function(self, node: FunctionCall) -> _Compiled:
        if node.distinct:
            raise UnsupportedExpression(f"the aggregate {node.name} cannot be evaluated on a single mapping")
        if isinstance(node.name, IRI):
            cast = functions.CASTS.get(node.name.value)
            if cast is None:
                raise UnsupportedExpression(f"unsupported extension function <{node.name.value}>")
            self._arity(node, 1, 1)
            return self._strict(cast, node.args)
        name = node.name.upper()
        special = _SPECIAL_FORMS.get(name)
        if special is not None:
            return special(self, node)
        entry = functions.BUILTINS.get(name)
        if entry is None:
            raise UnsupportedExpression(f"unsupported function {node.name}")
        minimum, maximum, function = entry
        self._arity(node, minimum, maximum)
        return self._strict(function, node.args)

    @staticmethod
    def _arity(node: FunctionCall, minimum: int, maximum: int) -> None:
        if not minimum <= len(node.args) <= maximum:
            count = len(node.args)
            raise UnsupportedExpression(f"{node.name} takes {minimum}..{maximum} arguments, not {count}")

    def _bound(self, node: FunctionCall) -> _Compiled:
        return self._from_predicate(node)

    def _if(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 3, 3)
        condition, _, constant = self._predicate(node.args[0])
        then = self.value(node.args[1])
        otherwise = self.value(node.args[2])
        if constant is not None:
            return then if constant else otherwise
        then_evaluate = then.evaluate
        otherwise_evaluate = otherwise.evaluate
        return _Compiled(
            lambda solution: then_evaluate(solution) if condition(solution) else otherwise_evaluate(solution)
        )

    def _coalesce(self, node: FunctionCall) -> _Compiled:
        compiled = [self.value(argument) for argument in node.args]
        for index, item in enumerate(compiled):
            if item.is_constant and item.constant is not None:
                compiled = compiled[: index + 1]  # later arguments are never reached
                break
        evaluators = [item.evaluate for item in compiled]

        def coalesce(solution: Solution) -> Value:
            for evaluate in evaluators:
                try:
                    return evaluate(solution)
                except ExprError:
                    pass
            raise ExprError("COALESCE: no argument has a value")

        if all(item.is_constant for item in compiled):
            return _fold(coalesce)
        return _Compiled(coalesce)

    def _regex(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 2, 3)
        compiled = self._regex_predicate(node)
        if compiled is None:  # the pattern is only known at evaluation time
            return self._strict(functions.fn_regex, node.args)
        predicate, is_constant = compiled
        if is_constant:
            return _fold(lambda solution: TRUE if predicate(solution) else FALSE)
        return _Compiled(lambda solution: TRUE if predicate(solution) else FALSE)

    def _replace(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 3, 4)
        pattern = self.value(node.args[1])
        flags = self.value(node.args[3]) if len(node.args) > 3 else None
        if pattern.constant is None or (flags is not None and flags.constant is None):
            return self._strict(functions.fn_replace, node.args)
        try:
            regex, flag_text = functions.regex_value(pattern.constant, flags.constant if flags else None)
        except ExprError as error:
            message = str(error)
            subject = self.value(node.args[0])
            replacement = self.value(node.args[2])
            # arguments are still evaluated first: their errors come first
            subject_evaluate = subject.evaluate
            replacement_evaluate = replacement.evaluate

            def failing(solution: Solution) -> Value:
                subject_evaluate(solution)
                replacement_evaluate(solution)
                raise ExprError(message)

            return _Compiled(failing)

        def replace(subject: Value, replacement: Value) -> Value:
            return functions.replace_with(regex, flag_text, subject, replacement)

        return self._strict(replace, (node.args[0], node.args[2]))

    def _now(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 0, 0)
        self.stateful = True
        state = self.state

        def now(solution: Solution) -> Value:
            value = state.now
            if value is None:
                seconds = Decimal(time.time_ns()).scaleb(-9)
                unix_epoch = temporal.Temporal(seconds, 0)
                value = state.now = Value(DATETIME, unix_epoch, XSD_DATETIME)
            return value

        return _Compiled(now)

    def _rand(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 0, 0)
        generate = random.random
        return _Compiled(lambda solution: Value(DOUBLE, generate(), XSD_DOUBLE))

    def _uuid(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 0, 0)
        return _Compiled(lambda solution: iri(f"urn:uuid:{uuid.uuid4()}"))

    def _struuid(self, node: FunctionCall) -> _Compiled:
        self._arity(node, 0, 0)
        return _Compiled(lambda solution: string(str(uuid.uuid4())))

    def _bnode(self, node: FunctionCall) -> _Compiled:
        """BNODE(): a fresh blank node per call; BNODE(str): the same blank node
        for the same string within one evaluation, a fresh one otherwise (§17.4.2.9)."""
        self._arity(node, 0, 1)
        if not node.args:
            return _Compiled(lambda solution: bnode(uuid.uuid4().hex))
        self.stateful = True
        state = self.state

        def named(value: Value) -> Value:
            key = functions.simple_arg(value)
            found = state.bnodes.get(key)
            if found is None:
                found = state.bnodes[key] = bnode(uuid.uuid4().hex)
            return found

        return self._strict(named, node.args, pure=False)

    # ----------------------------------------------------------------- boolean mode

    def _predicate(self, node: Expr) -> tuple[Predicate, bool, bool | None]:
        """(predicate, is_constant, constant value or None if unknown/error)."""
        name = self._memo_variable(node)
        if name is not None:
            self.memoizing = True
            try:
                predicate, is_constant = self._predicate_raw(node)
            finally:
                self.memoizing = False
            return self._memoized_predicate(predicate, name), False, None
        predicate, is_constant = self._predicate_raw(node)
        if not is_constant:
            return predicate, False, None
        try:
            flag = predicate(_NO_SOLUTION)
        except ExprError as error:
            message = str(error)

            def fail(solution: Solution) -> bool:
                raise ExprError(message)

            return fail, True, None
        return (lambda solution: flag), True, flag

    @staticmethod
    def _memoized_predicate(predicate: Predicate, name: str) -> Predicate:
        @lru_cache(maxsize=MEMO_SIZE)
        def on_term(term: str) -> bool:
            return predicate({name: term})

        def memoized(solution: Solution) -> bool:
            term = solution.get(name)
            return predicate(solution) if term is None else on_term(term)

        return memoized

    def _predicate_raw(self, node: Expr) -> tuple[Predicate, bool]:
        if isinstance(node, BinaryOp) and node.op in _BOOLEAN_OPERATORS:
            if node.op == "&&":
                return self._and(node.left, node.right)
            if node.op == "||":
                return self._or(node.left, node.right)
            left = self.value(node.left)
            right = self.value(node.right)
            is_constant = left.is_constant and right.is_constant
            return self._comparison(node.op, left, right), is_constant
        if isinstance(node, UnaryOp) and node.op == "!":
            operand, is_constant, _ = self._predicate(node.operand)
            return (lambda solution: not operand(solution)), is_constant
        if isinstance(node, In):
            return self._in(node)
        if isinstance(node, FunctionCall) and isinstance(node.name, str):
            name = node.name.upper()
            if name == "BOUND":
                self._arity(node, 1, 1)
                variable = node.args[0]
                if not isinstance(variable, Var):
                    raise UnsupportedExpression("BOUND takes a variable")
                variable_name = variable.name
                return (lambda solution: solution.get(variable_name) is not None), False
            if name == "REGEX":
                self._arity(node, 2, 3)
                predicate = self._regex_predicate(node)
                if predicate is not None:
                    return predicate
            if name == "IF":
                self._arity(node, 3, 3)
                condition, _, constant = self._predicate(node.args[0])
                then, then_constant, _ = self._predicate(node.args[1])
                otherwise, otherwise_constant, _ = self._predicate(node.args[2])
                if constant is not None:
                    return (then, then_constant) if constant else (otherwise, otherwise_constant)
                return (
                    lambda solution: then(solution) if condition(solution) else otherwise(solution)
                ), False
        compiled = self.value(node)
        evaluate = compiled.evaluate
        return (lambda solution: ebv(evaluate(solution))), compiled.is_constant

    def _regex_predicate(self, node: FunctionCall) -> tuple[Predicate, bool] | None:
        pattern = self.value(node.args[1])
        flags = self.value(node.args[2]) if len(node.args) > 2 else None
        if pattern.constant is None or (flags is not None and flags.constant is None):
            return None
        text = self.value(node.args[0])
        text_evaluate = text.evaluate
        try:
            regex, _ = functions.regex_value(pattern.constant, flags.constant if flags else None)
        except ExprError as error:
            message = str(error)

            def failing(solution: Solution) -> bool:
                functions.string_arg(text_evaluate(solution))
                raise ExprError(message)

            return failing, text.is_constant
        search = regex.search
        string_arg = functions.string_arg

        def matches(solution: Solution) -> bool:
            return search(string_arg(text_evaluate(solution))[0]) is not None

        return matches, text.is_constant

    @staticmethod
    def _comparison(operator: str, left: _Compiled, right: _Compiled) -> Predicate:
        """`=`, `!=` (§17.4.1.7) and the order comparisons. The shapes stateful
        filters are made of (variable against variable, variable against
        constant) get closures that read and parse the terms themselves."""
        test = _ORDER_TESTS.get(operator)
        negated = operator == "!="
        parse = parse_term
        if left.variable is not None and right.variable is not None:
            first_name = left.variable
            second_name = right.variable
            if test is None:

                def equal_variables(solution: Solution) -> bool:
                    try:
                        first = solution[first_name]
                        second = solution[second_name]
                    except KeyError:
                        raise _unbound(solution, first_name, second_name) from None
                    if first is None or second is None:
                        raise _unbound(solution, first_name, second_name)
                    return equals(parse(first), parse(second)) != negated

                return equal_variables

            def order_variables(solution: Solution) -> bool:
                try:
                    first = solution[first_name]
                    second = solution[second_name]
                except KeyError:
                    raise _unbound(solution, first_name, second_name) from None
                if first is None or second is None:
                    raise _unbound(solution, first_name, second_name)
                return compare(parse(first), parse(second)) in test

            return order_variables
        first_evaluate = left.evaluate
        second_evaluate = right.evaluate
        if right.constant is not None:
            constant = right.constant
            if test is None:
                return lambda solution: equals(first_evaluate(solution), constant) != negated
            return lambda solution: compare(first_evaluate(solution), constant) in test
        if left.constant is not None:
            constant = left.constant
            if test is None:
                return lambda solution: equals(constant, second_evaluate(solution)) != negated
            return lambda solution: compare(constant, second_evaluate(solution)) in test
        if test is None:
            return lambda solution: equals(first_evaluate(solution), second_evaluate(solution)) != negated
        return lambda solution: compare(first_evaluate(solution), second_evaluate(solution)) in test

    def _and(self, left_node: Expr, right_node: Expr) -> tuple[Predicate, bool]:
        """`&&` (§17.2, logical-and): false wins over an error, an error over true."""
        left, left_constant, left_value = self._predicate(left_node)
        right, right_constant, right_value = self._predicate(right_node)
        if left_value is False or right_value is False:
            return (lambda solution: False), True
        if left_value is True:
            return right, right_constant
        if right_value is True:
            return left, left_constant

        def conjunction(solution: Solution) -> bool:
            try:
                if not left(solution):
                    return False
            except ExprError:
                if not right(solution):
                    return False
                raise
            return right(solution)

        return conjunction, left_constant and right_constant

    def _or(self, left_node: Expr, right_node: Expr) -> tuple[Predicate, bool]:
        """`||` (§17.2, logical-or): true wins over an error, an error over false."""
        left, left_constant, left_value = self._predicate(left_node)
        right, right_constant, right_value = self._predicate(right_node)
        if left_value is True or right_value is True:
            return (lambda solution: True), True
        if left_value is False:
            return right, right_constant
        if right_value is False:
            return left, left_constant

        def disjunction(solution: Solution) -> bool:
            try:
                if left(solution):
                    return True
            except ExprError:
                if right(solution):
                    return True
                raise
            return right(solution)

        return disjunction, left_constant and right_constant

    def _in(self, node: In) -> tuple[Predicate, bool]:
        """IN / NOT IN (§17.4.1.9-10): a chain of `=` joined by `||` (by `&&` of `!=`)."""
        subject = self.value(node.expr)
        options = [self.value(option) for option in node.options]
        subject_evaluate = subject.evaluate
        option_evaluators = [option.evaluate for option in options]
        negated = node.negated

        def member(solution: Solution) -> bool:
            value = subject_evaluate(solution)
            failure: ExprError | None = None
            for evaluate in option_evaluators:
                try:
                    if equals(value, evaluate(solution)):
                        return not negated
                except ExprError as error:
                    failure = error
            if failure is not None:
                raise failure
            return negated

        return member, subject.is_constant and all(option.is_constant for option in options)


_SPECIAL_FORMS: Final[dict[str, Callable[[_Compiler, FunctionCall], _Compiled]]] = {
    "BOUND": _Compiler._bound,
    "IF": _Compiler._if,
    "COALESCE": _Compiler._coalesce,
    "REGEX": _Compiler._regex,
    "REPLACE": _Compiler._replace,
    "NOW": _Compiler._now,
    "RAND": _Compiler._rand,
    "UUID": _Compiler._uuid,
    "STRUUID": _Compiler._struuid,
    "BNODE": _Compiler._bnode,
}


def compile_value(expr: Expr) -> Evaluator:
    """Compile to a function returning the result as a `Value` (ExprError on error)."""
    compiler = _Compiler()
    evaluate = compiler.value(expr).evaluate
    if not compiler.stateful:
        return evaluate
    reset = compiler.state.reset

    def stateful(solution: Solution) -> Value:
        reset()
        return evaluate(solution)

    return stateful


def compile_expr(expr: Expr) -> Callable[[Solution], str]:
    """Compile an expression to a function of a solution mapping (variable
    name -> N-Triples term) returning the result term as N-Triples text.

    Raises UnsupportedExpression now for EXISTS, aggregates and unknown
    functions; the returned function raises ExprError for evaluation errors.
    NOW() is read once per call of the returned function (and BNODE(str) is
    stable within one call), so all its occurrences in one evaluation agree.
    """
    evaluate = compile_value(expr)

    def run(solution: Solution) -> str:
        return evaluate(solution).nt

    return run


def compile_filter(expr: Expr) -> Callable[[Solution], bool]:
    """Compile a FILTER condition: its effective boolean value, an error
    counting as false (§17.2). Raises UnsupportedExpression like compile_expr."""
    compiler = _Compiler()
    predicate, is_constant, constant = compiler._predicate(expr)
    if is_constant:
        result = bool(constant)
        return lambda solution: result
    reset = compiler.state.reset if compiler.stateful else None

    def keep(solution: Solution) -> bool:
        if reset is not None:
            reset()
        try:
            return predicate(solution)
        except ExprError:
            return False

    return keep
