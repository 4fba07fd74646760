"""Compile SPARQL expression trees into Python closures.

The NFA runtime evaluates stateful FILTERs for every (partial match, event)
pair, so the tree is walked once, at compile time, into nested closures: no
dispatch on node types at evaluation time, constant sub-expressions folded,
constant regular expressions compiled once, each distinct N-Triples term
parsed once (`values.parse_term` is memoised) and each pure sub-expression
of a single variable computed once per distinct term of that variable.

Boolean contexts (FILTER, `&&`, `||`, `!`, IF conditions) compile to
predicates returning Python bools, so a comparison inside a FILTER never
materialises an xsd:boolean term. Errors are ExprError exceptions; `&&` and
`||` implement the three-valued logic of SPARQL 1.1 §17.2.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
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
from rsep.plugin.expr import builtins, casts, operators, temporal
from rsep.plugin.expr.closures import (
    NO_SOLUTION,
    Compiled,
    Evaluator,
    Predicate,
    Solution,
    as_term,
    comparison,
    conjunction,
    constant,
    disjunction,
    fold,
    free_variables,
    membership,
    memoize_predicate,
    memoize_value,
    variable,
)
from rsep.plugin.expr.errors import ExprError, UnsupportedExpression
from rsep.plugin.expr.operators import ebv
from rsep.plugin.expr.values import (
    DATETIME,
    DOUBLE,
    XSD_DATETIME,
    XSD_DOUBLE,
    Value,
    bnode,
    iri,
    string,
    typed_literal,
)

_ARITHMETIC: Final[dict[str, Callable[[Value, Value], Value]]] = {
    "+": operators.add,
    "-": operators.subtract,
    "*": operators.multiply,
    "/": operators.divide_values,
}
_UNARY: Final[dict[str, Callable[[Value], Value]]] = {"-": operators.negate, "+": operators.unary_plus}
_BOOLEAN_OPERATORS: Final = frozenset({"||", "&&", "=", "!=", "<", ">", "<=", ">="})


def literal_value(node: Literal) -> Value:
    if node.language is not None:
        return string(node.lexical, node.language.lower())
    if node.datatype == XSD_STRING:
        return string(node.lexical)
    return typed_literal(node.lexical, node.datatype)


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


class _Compiler:
    """Walks one expression tree; `value` and `predicate` are its two modes."""

    def __init__(self) -> None:
        self.state = _CallState()
        self.stateful = False  # uses NOW() or BNODE(str): reset the state per call
        self.memoizing = False  # inside a memoised subtree: do not memoise again

    def _memo_variable(self, node: Expr) -> str | None:
        """The variable of a pure, non-trivial subtree that reads exactly one
        variable: its value is a function of that variable's term (the NFA
        presents the same event's bindings to many partial matches)."""
        if self.memoizing or isinstance(node, (Var, Literal, IRI)):
            return None
        variables = free_variables(node)
        if variables is None or len(variables) != 1:
            return None
        return next(iter(variables))

    # ----------------------------------------------------------------- value mode

    def value(self, node: Expr) -> Compiled:
        name = self._memo_variable(node)
        if name is None:
            return self._value(node)
        self.memoizing = True
        try:
            compiled = self._value(node)
        finally:
            self.memoizing = False
        return Compiled(memoize_value(compiled.evaluate, name))

    def _value(self, node: Expr) -> Compiled:
        if isinstance(node, Var):
            return Compiled(variable(node.name), variable=node.name)
        if isinstance(node, Literal):
            return constant(literal_value(node))
        if isinstance(node, IRI):
            return constant(iri(node.value))
        if isinstance(node, BinaryOp):
            if node.op in _BOOLEAN_OPERATORS:
                return self._boolean_term(node)
            operation = _ARITHMETIC.get(node.op)
            if operation is None:
                raise UnsupportedExpression(f"unknown operator {node.op!r}")
            return self._strict(operation, (node.left, node.right))
        if isinstance(node, UnaryOp):
            if node.op == "!":
                return self._boolean_term(node)
            unary = _UNARY.get(node.op)
            if unary is None:
                raise UnsupportedExpression(f"unknown unary operator {node.op!r}")
            return self._strict(unary, (node.operand,))
        if isinstance(node, In):
            return self._boolean_term(node)
        if isinstance(node, FunctionCall):
            return self._function(node)
        if isinstance(node, Exists):
            raise UnsupportedExpression("EXISTS / NOT EXISTS needs a dataset, not just a solution mapping")
        if isinstance(node, Aggregate):
            raise UnsupportedExpression(f"the aggregate {node.name} cannot be evaluated on a single mapping")
        raise UnsupportedExpression(f"not an expression: {node!r}")

    def _boolean_term(self, node: Expr) -> Compiled:
        """A boolean-valued operator in value position: its predicate, as a term."""
        predicate, is_constant, _ = self.predicate(node)
        return fold(as_term(predicate)) if is_constant else Compiled(as_term(predicate))

    def _strict(
        self, function: Callable[..., Value], arguments: tuple[Expr, ...], pure: bool = True
    ) -> Compiled:
        """A function of its arguments' values (errors propagate), folded when constant."""
        compiled = [self.value(argument) for argument in arguments]
        evaluators = [item.evaluate for item in compiled]
        evaluate: Evaluator
        if len(evaluators) == 1:
            (first,) = evaluators
            evaluate = lambda solution: function(first(solution))  # noqa: E731
        elif len(evaluators) == 2:
            first, second = evaluators
            left, right = compiled[0].constant, compiled[1].constant
            if right is not None:
                evaluate = lambda solution: function(first(solution), right)  # noqa: E731
            elif left is not None:
                evaluate = lambda solution: function(left, second(solution))  # noqa: E731
            else:
                evaluate = lambda solution: function(first(solution), second(solution))  # noqa: E731
        else:
            evaluate = lambda solution: function(*[item(solution) for item in evaluators])  # noqa: E731
        if pure and all(item.is_constant for item in compiled):
            return fold(evaluate)
        return Compiled(evaluate)

    # ----------------------------------------------------------------- functions

    def _function(self, node: FunctionCall) -> Compiled:
        if node.distinct:
            raise UnsupportedExpression(f"the aggregate {node.name} cannot be evaluated on a single mapping")
        if isinstance(node.name, IRI):
            cast = casts.CASTS.get(node.name.value)
            if cast is None:
                raise UnsupportedExpression(
                    f"unsupported extension function <{node.name.value}>", node.position
                )
            _arity(node, 1, 1)
            return self._strict(cast, node.args)
        name = node.name.upper()
        special = _SPECIAL_FORMS.get(name)
        if special is not None:
            return special(self, node)
        entry = builtins.BUILTINS.get(name)
        if entry is None:
            raise UnsupportedExpression(f"unsupported function {node.name}")
        minimum, maximum, function = entry
        _arity(node, minimum, maximum)
        return self._strict(function, node.args)

    def _if(self, node: FunctionCall) -> Compiled:
        """IF (§17.4.1.2): only the chosen branch is evaluated."""
        _arity(node, 3, 3)
        condition, _, flag = self.predicate(node.args[0])
        then = self.value(node.args[1])
        otherwise = self.value(node.args[2])
        if flag is not None:
            return then if flag else otherwise
        then_evaluate = then.evaluate
        otherwise_evaluate = otherwise.evaluate
        return Compiled(
            lambda solution: then_evaluate(solution) if condition(solution) else otherwise_evaluate(solution)
        )

    def _coalesce(self, node: FunctionCall) -> Compiled:
        """COALESCE (§17.4.1.4): the first argument that evaluates without error."""
        compiled = [self.value(argument) for argument in node.args]
        for index, item in enumerate(compiled):
            if item.constant is not None:
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
            return fold(coalesce)
        return Compiled(coalesce)

    def _regex(self, node: FunctionCall) -> Compiled:
        _arity(node, 2, 3)
        compiled = self._regex_predicate(node)
        if compiled is None:  # the pattern is only known at evaluation time
            return self._strict(builtins.fn_regex, node.args)
        predicate, is_constant = compiled
        return fold(as_term(predicate)) if is_constant else Compiled(as_term(predicate))

    def _regex_predicate(self, node: FunctionCall) -> tuple[Predicate, bool] | None:
        """REGEX with a constant pattern and flags, compiled once; None otherwise."""
        pattern = self.value(node.args[1])
        flags = self.value(node.args[2]) if len(node.args) > 2 else None
        if pattern.constant is None or (flags is not None and flags.constant is None):
            return None
        text = self.value(node.args[0])
        text_evaluate = text.evaluate
        string_arg = builtins.string_arg
        try:
            regex, _ = builtins.regex_value(pattern.constant, flags.constant if flags else None)
        except ExprError as error:
            message = str(error)

            def invalid(solution: Solution) -> bool:
                string_arg(text_evaluate(solution))
                raise ExprError(message)

            return invalid, text.is_constant
        search = regex.search
        return (lambda solution: search(string_arg(text_evaluate(solution))[0]) is not None), text.is_constant

    def _replace(self, node: FunctionCall) -> Compiled:
        _arity(node, 3, 4)
        pattern = self.value(node.args[1])
        flags = self.value(node.args[3]) if len(node.args) > 3 else None
        if pattern.constant is None or (flags is not None and flags.constant is None):
            return self._strict(builtins.fn_replace, node.args)
        try:
            regex, flag_text = builtins.regex_value(pattern.constant, flags.constant if flags else None)
        except ExprError as error:
            message = str(error)

            def invalid(subject: Value, replacement: Value) -> Value:
                raise ExprError(message)

            return self._strict(invalid, (node.args[0], node.args[2]))

        def replace(subject: Value, replacement: Value) -> Value:
            return builtins.replace_with(regex, flag_text, subject, replacement)

        return self._strict(replace, (node.args[0], node.args[2]))

    def _now(self, node: FunctionCall) -> Compiled:
        """NOW (§17.4.5.1): read once per evaluation, then the same value."""
        _arity(node, 0, 0)
        self.stateful = True
        state = self.state

        def now(solution: Solution) -> Value:
            value = state.now
            if value is None:
                seconds = Decimal(time.time_ns()).scaleb(-9)
                value = state.now = Value(DATETIME, temporal.Temporal(seconds, 0), XSD_DATETIME)
            return value

        return Compiled(now)

    def _rand(self, node: FunctionCall) -> Compiled:
        _arity(node, 0, 0)
        generate = random.random
        return Compiled(lambda solution: Value(DOUBLE, generate(), XSD_DOUBLE))

    def _uuid(self, node: FunctionCall) -> Compiled:
        _arity(node, 0, 0)
        return Compiled(lambda solution: iri(f"urn:uuid:{uuid.uuid4()}"))

    def _struuid(self, node: FunctionCall) -> Compiled:
        _arity(node, 0, 0)
        return Compiled(lambda solution: string(str(uuid.uuid4())))

    def _bnode(self, node: FunctionCall) -> Compiled:
        """BNODE() is a fresh blank node per call; BNODE(str) the same one for
        the same string within one evaluation (§17.4.2.9)."""
        _arity(node, 0, 1)
        if not node.args:
            return Compiled(lambda solution: bnode(uuid.uuid4().hex))
        self.stateful = True
        state = self.state

        def named(value: Value) -> Value:
            key = builtins.simple_arg(value)
            found = state.bnodes.get(key)
            if found is None:
                found = state.bnodes[key] = bnode(uuid.uuid4().hex)
            return found

        return self._strict(named, node.args, pure=False)

    # ----------------------------------------------------------------- boolean mode

    def predicate(self, node: Expr) -> tuple[Predicate, bool, bool | None]:
        """(predicate, is_constant, its value when constant and not an error)."""
        name = self._memo_variable(node)
        if name is not None:
            self.memoizing = True
            try:
                predicate, _ = self._predicate(node)
            finally:
                self.memoizing = False
            return memoize_predicate(predicate, name), False, None
        predicate, is_constant = self._predicate(node)
        if not is_constant:
            return predicate, False, None
        try:
            flag = predicate(NO_SOLUTION)
        except ExprError as error:
            message = str(error)

            def fail(solution: Solution) -> bool:
                raise ExprError(message)

            return fail, True, None
        return (lambda solution: flag), True, flag

    def _predicate(self, node: Expr) -> tuple[Predicate, bool]:
        if isinstance(node, BinaryOp) and node.op in _BOOLEAN_OPERATORS:
            if node.op in ("&&", "||"):
                return self._logical(node)
            left = self.value(node.left)
            right = self.value(node.right)
            return comparison(node.op, left, right), left.is_constant and right.is_constant
        if isinstance(node, UnaryOp) and node.op == "!":
            operand, is_constant, _ = self.predicate(node.operand)
            return (lambda solution: not operand(solution)), is_constant
        if isinstance(node, In):
            subject = self.value(node.expr)
            options = [self.value(option) for option in node.options]
            is_constant = subject.is_constant and all(option.is_constant for option in options)
            evaluators = [option.evaluate for option in options]
            return membership(subject.evaluate, evaluators, node.negated), is_constant
        if isinstance(node, FunctionCall) and isinstance(node.name, str):
            special = self._special_predicate(node, node.name.upper())
            if special is not None:
                return special
        compiled = self.value(node)
        evaluate = compiled.evaluate
        return (lambda solution: ebv(evaluate(solution))), compiled.is_constant

    def _logical(self, node: BinaryOp) -> tuple[Predicate, bool]:
        """`&&`/`||`, simplified when one side is a constant."""
        left, left_constant, left_flag = self.predicate(node.left)
        right, right_constant, right_flag = self.predicate(node.right)
        absorbing = node.op == "||"  # true absorbs ||, false absorbs &&
        if left_flag is absorbing or right_flag is absorbing:
            return (lambda solution: absorbing), True
        if left_flag is not None:  # the neutral constant
            return right, right_constant
        if right_flag is not None:
            return left, left_constant
        combined = disjunction(left, right) if absorbing else conjunction(left, right)
        return combined, left_constant and right_constant

    def _special_predicate(self, node: FunctionCall, name: str) -> tuple[Predicate, bool] | None:
        """BOUND, REGEX and IF have direct predicate forms."""
        if name == "BOUND":
            _arity(node, 1, 1)
            argument = node.args[0]
            if not isinstance(argument, Var):
                raise UnsupportedExpression("BOUND takes a variable")
            variable_name = argument.name
            return (lambda solution: solution.get(variable_name) is not None), False
        if name == "REGEX":
            _arity(node, 2, 3)
            return self._regex_predicate(node)
        if name == "IF":
            _arity(node, 3, 3)
            condition, _, flag = self.predicate(node.args[0])
            then, then_constant, _ = self.predicate(node.args[1])
            otherwise, otherwise_constant, _ = self.predicate(node.args[2])
            if flag is not None:
                return (then, then_constant) if flag else (otherwise, otherwise_constant)
            return (lambda solution: then(solution) if condition(solution) else otherwise(solution)), False
        return None


def _arity(node: FunctionCall, minimum: int, maximum: int) -> None:
    count = len(node.args)
    if not minimum <= count <= maximum:
        raise UnsupportedExpression(f"{node.name} takes {minimum}..{maximum} arguments, not {count}")


_SPECIAL_FORMS: Final[dict[str, Callable[[_Compiler, FunctionCall], Compiled]]] = {
    "BOUND": lambda compiler, node: compiler._boolean_term(node),
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
"""Built-ins that are not strict functions of their arguments' values."""


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
    return lambda solution: evaluate(solution).nt


def compile_filter(expr: Expr) -> Callable[[Solution], bool]:
    """Compile a FILTER condition: its effective boolean value, an error
    counting as false (§17.2). Raises UnsupportedExpression like compile_expr."""
    compiler = _Compiler()
    predicate, is_constant, flag = compiler.predicate(expr)
    if is_constant:
        result = bool(flag)
        return lambda solution: result
    if compiler.stateful:
        reset = compiler.state.reset

        def keep_stateful(solution: Solution) -> bool:
            reset()
            try:
                return predicate(solution)
            except ExprError:
                return False

        return keep_stateful

    def keep(solution: Solution) -> bool:
        try:
            return predicate(solution)
        except ExprError:
            return False

    return keep
