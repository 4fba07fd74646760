"""Walks over algebra nodes that the static checks and rule methods share: an expression's nodes
without recursion, its aggregates, GROUP BY's keys, a triple pattern's variables."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from rsep.plugin.algebra.sparql import (
    Aggregate,
    BinaryOp,
    FunctionCall,
    GroupCondition,
    In,
    Node,
    TriplePattern,
    UnaryOp,
    Var,
)


def _expression_children(expr: Node) -> Sequence[Node]:
    if isinstance(expr, BinaryOp):
        return (expr.left, expr.right)
    if isinstance(expr, UnaryOp):
        return (expr.operand,)
    if isinstance(expr, In):
        return (expr.expr, *expr.options)
    if isinstance(expr, FunctionCall):
        return expr.args
    if isinstance(expr, Aggregate):
        return () if expr.expr is None else (expr.expr,)
    return ()


def iter_expression(expr: Node, *, into_aggregates: bool = True) -> Iterator[Node]:
    """The nodes of an expression, without recursion (a `||` chain can be thousands deep); the
    patterns of EXISTS are not entered, they are checked where they were built."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if into_aggregates or not isinstance(node, Aggregate):
            stack.extend(reversed(_expression_children(node)))


def first_aggregate(expr: Node) -> Aggregate | None:
    return next((node for node in iter_expression(expr) if isinstance(node, Aggregate)), None)


def has_aggregate(exprs: Iterable[Node]) -> bool:
    return any(first_aggregate(expr) is not None for expr in exprs)


def group_keys(conditions: Iterable[GroupCondition]) -> set[str]:
    """The variables GROUP BY makes projectable: `?v`, `(?v)` and `(expr AS ?v)`."""
    keys = {c.var.name for c in conditions if c.var is not None}
    return keys | {c.expr.name for c in conditions if c.var is None and isinstance(c.expr, Var)}


def triple_vars(triple: TriplePattern) -> Iterator[str]:
    for term in (triple.subject, triple.predicate, triple.object):
        if isinstance(term, Var):
            yield term.name
