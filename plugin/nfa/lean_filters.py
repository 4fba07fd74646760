"""Residual filters compiled for the lean runtime (`plugin/nfa/lean_plan.py` plans where their
operands are read from).

A pending filter reads the candidate's bindings (`Reads.cand`: one values tuple per candidate)
and the run's (`Reads.run`: a slot). Comparisons of a variable with a variable or a constant
(`<`, `>`, `<=`, `>=`, `=`, `!=`, the parts of a top-level `&&`) read parsed values: when both
are numbers of one kind, Python compares the values the evaluator would (`operators.compare`
does exactly that for one kind); any other pair goes to the evaluator's own `compare`/`equals`
(`holds`), so type errors, mixed numeric types, NaN, strings and dates keep SPARQL's
semantics. Other filters run the compiled evaluator (`compile_filter`) on a mapping of just the
variables they read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from rsep.plugin.algebra.sparql import IRI, BinaryOp, Expr, Literal, Var
from rsep.plugin.expr import ExprError, compile_filter, compile_value
from rsep.plugin.expr.closures import ORDER_TESTS
from rsep.plugin.expr.operators import compare, equals
from rsep.plugin.expr.values import DOUBLE, Value, parse_term
from rsep.plugin.nfa.candidates import pure

TERM: Final = 0
VALUE: Final = 1
Slot = tuple[str, int]
"""(variable, TERM or VALUE)."""
Slots = tuple[Any, ...]
Test = Callable[[Slots, tuple[Any, ...]], bool]
"""(run's slots, candidate's values) -> does the run take the candidate."""
EMPTY: Final[Slots] = ()


class Reads:
    """What a take reads of a candidate (`cand`, collected into one values tuple per candidate)
    and of the run (`run`: a slot index, or None when the run cannot have the variable)."""

    def __init__(
        self, keys: frozenset[str], rebind: frozenset[str], maybe: frozenset[str], where: dict[Slot, int]
    ) -> None:
        self.keys, self.rebind, self.maybe, self.where = keys, rebind, maybe, where
        self._cand: dict[Slot, int] = {}

    def bound_by_cand(self, name: str) -> bool:
        return name in self.keys

    def cand(self, name: str, kind: int) -> int:
        return self._cand.setdefault((name, kind), len(self._cand))

    def run(self, name: str, kind: int) -> int | None:
        """The run's slot of `name` as the joined mapping sees it: None when the state rebinds it
        or no run here binds it (it is unbound)."""
        if name in self.rebind or name not in self.maybe:
            return None
        slot = self.where.get((name, kind))
        if slot is None:  # _Planner puts every variable read here into the layout
            raise AssertionError(f"no slot for ?{name}")
        return slot

    def values_of(self) -> Callable[[Mapping[str, str]], tuple[Any, ...]]:
        wanted = tuple(self._cand)
        if not wanted:
            return lambda mapping: EMPTY
        if len(wanted) == 1:
            ((name, kind),) = wanted
            if kind == TERM:
                return lambda mapping: (mapping[name],)
            return lambda mapping: (parse_term(mapping[name]),)
        if all(kind == TERM for _, kind in wanted):
            names = tuple(name for name, _ in wanted)
            return lambda mapping: tuple([mapping[n] for n in names])
        return lambda mapping: tuple([mapping[n] if k == TERM else parse_term(mapping[n]) for n, k in wanted])


_FLIP: Final = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}


def compile_residual(expr: Expr, reads: Reads) -> list[tuple[Test, tuple[str, int, int] | None]] | None:
    """The tests of one pending filter: its comparisons compiled to value reads where it is a
    `&&` of them, else the evaluator on the variables it reads; each with its threshold form
    (`Take.threshold`) if it has one. None: it can never hold (a comparison reads a variable
    no run here binds)."""
    parts = conjuncts(expr)
    compiled = [comparison(part) for part in parts]
    if not pure(expr) or any(c is None for c in compiled):
        return [(_general(expr, reads), None)]
    tests: list[tuple[Test, tuple[str, int, int] | None]] = []
    for item in compiled:
        assert item is not None
        op, left, right = item
        test = _fast(op, left, right, reads)
        if isinstance(test, bool):
            return None
        tests.append(test)
    return tests


def conjuncts(expr: Expr) -> list[Expr]:
    """A filter holds iff every operand of its top-level `&&` holds (an error is false either
    way, SPARQL §17.2): so they are checked one by one."""
    if isinstance(expr, BinaryOp) and expr.op == "&&":
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


Operand = tuple[str, Any]
"""("var", name) or ("const", Value)."""


def comparison(expr: Expr) -> tuple[str, Operand, Operand] | None:
    if not isinstance(expr, BinaryOp) or expr.op not in _FLIP:
        return None
    left, right = _operand(expr.left), _operand(expr.right)
    if left is None or right is None:
        return None
    return expr.op, left, right


def _operand(expr: Expr) -> Operand | None:
    if isinstance(expr, Var):
        return ("var", expr.name)
    if isinstance(expr, (Literal, IRI)):
        try:
            return ("const", compile_value(expr)({}))
        except ExprError:
            return None
    return None


def _fast(
    op: str, left: Operand, right: Operand, reads: Reads
) -> tuple[Test, tuple[str, int, int] | None] | bool:
    """One comparison, with its threshold form (`Take.threshold`) if it has one. Operands the
    candidate or a constant gives are read from the candidate's values, the run's from its
    VALUE slots; with the run's operand on the right (a < b is b > a: `compare` is
    antisymmetric and `equals` symmetric). False: it never holds (an unbound variable is an
    error, so false)."""
    sides = [_side(left, reads), _side(right, reads)]
    if any(side is None for side in sides):
        return False
    (lk, li), (rk, ri) = sides  # type: ignore[misc]
    if lk == "run" and rk != "run":
        op, (lk, li), (rk, ri) = _FLIP[op], (rk, ri), (lk, li)
    if lk == "run":
        return _run_run(op, li, ri), None
    if rk == "run":
        return _cand_run(op, lk, li, ri), ((op, li, ri) if lk == "cand" else None)
    return _cand_cand(op, (lk, li), (rk, ri)), None


def _side(operand: Operand, reads: Reads) -> tuple[str, Any] | None:
    kind, payload = operand
    if kind == "const":
        return ("const", payload)
    if reads.bound_by_cand(payload):
        return ("cand", reads.cand(payload, VALUE))
    slot = reads.run(payload, VALUE)
    return None if slot is None else ("run", slot)


def holds(op: str, a: Value, b: Value) -> bool:
    """`a op b` as a FILTER sees it (an error is false): SPARQL's `compare`/`equals`."""
    try:
        if op == "=":
            return equals(a, b)
        if op == "!=":
            return not equals(a, b)
        return compare(a, b) in ORDER_TESTS[op]
    except ExprError:
        return False


def _cand_run(op: str, kind: str, index: Any, slot: int) -> Test:
    """`x op r`, x the candidate's value (or a constant), r the run's: one kind of number is
    compared by Python, as `compare` does; anything else by `holds`."""
    if kind == "const":
        constant: Value = index
        compared = _PY[op]

        def against_constant(slots: Slots, values: tuple[Any, ...]) -> bool:
            b = slots[slot]
            if b is None:
                return False
            if b.k == constant.k and b.k <= DOUBLE:
                return compared(constant.v, b.v)
            return holds(op, constant, b)

        return against_constant
    position: int = index
    if op == "<":

        def less(slots: Slots, values: tuple[Any, ...]) -> bool:
            b = slots[slot]
            if b is None:
                return False
            a = values[position]
            if a.k == b.k and a.k <= DOUBLE:
                return bool(a.v < b.v)
            return holds("<", a, b)

        return less
    if op == ">":

        def greater(slots: Slots, values: tuple[Any, ...]) -> bool:
            b = slots[slot]
            if b is None:
                return False
            a = values[position]
            if a.k == b.k and a.k <= DOUBLE:
                return bool(a.v > b.v)
            return holds(">", a, b)

        return greater
    compared = _PY[op]

    def other(slots: Slots, values: tuple[Any, ...]) -> bool:
        b = slots[slot]
        if b is None:
            return False
        a = values[position]
        if a.k == b.k and a.k <= DOUBLE:
            return compared(a.v, b.v)
        return holds(op, a, b)

    return other


def _run_run(op: str, left: int, right: int) -> Test:
    compared = _PY[op]

    def test(slots: Slots, values: tuple[Any, ...]) -> bool:
        a, b = slots[left], slots[right]
        if a is None or b is None:
            return False
        if a.k == b.k and a.k <= DOUBLE:
            return compared(a.v, b.v)
        return holds(op, a, b)

    return test


def _cand_cand(op: str, left: tuple[str, Any], right: tuple[str, Any]) -> Test:
    """Both operands from the candidate (or constants): the same for every run; tested per run
    all the same (rare: such a filter reads a variable the GPM may leave unbound)."""

    def value(side: tuple[str, Any], values: tuple[Any, ...]) -> Value:
        return side[1] if side[0] == "const" else values[side[1]]  # type: ignore[no-any-return]

    compared = _PY[op]

    def test(slots: Slots, values: tuple[Any, ...]) -> bool:
        a, b = value(left, values), value(right, values)
        if a.k == b.k and a.k <= DOUBLE:
            return compared(a.v, b.v)
        return holds(op, a, b)

    return test


_PY: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "<": lambda x, y: bool(x < y),
    ">": lambda x, y: bool(x > y),
    "<=": lambda x, y: bool(x <= y),
    ">=": lambda x, y: bool(x >= y),
    "=": lambda x, y: bool(x == y),
    "!=": lambda x, y: bool(x != y),
}
"""Python's comparison of two numbers of one kind: what `compare`/`equals` compute for them
(NaN: every order comparison false, `!=` true)."""


def _general(expr: Expr, reads: Reads) -> Test:
    """A filter the evaluator runs, on a mapping of the variables it reads."""
    predicate = compile_filter(expr)
    sources: list[tuple[str, bool, int]] = []
    for name in sorted(variables_of(expr)):
        if reads.bound_by_cand(name):
            sources.append((name, True, reads.cand(name, TERM)))
        else:
            slot = reads.run(name, TERM)
            if slot is not None:
                sources.append((name, False, slot))
    picks = tuple(sources)

    def test(slots: Slots, values: tuple[Any, ...]) -> bool:
        solution = {}
        for name, from_cand, index in picks:
            term = values[index] if from_cand else slots[index]
            if term is not None:
                solution[name] = term
        return predicate(solution)

    return test


def variables_of(expr: object) -> frozenset[str]:
    """Every variable an expression mentions (a superset of what it reads)."""
    if isinstance(expr, Var):
        return frozenset((expr.name,))
    if isinstance(expr, (tuple, list)):
        return frozenset().union(*map(variables_of, expr))
    slots = getattr(type(expr), "__dataclass_fields__", None)
    if slots is None:
        return frozenset()
    return frozenset().union(*(variables_of(getattr(expr, name)) for name in slots))
