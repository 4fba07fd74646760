"""Static variable analysis over the SPARQL syntax tree.

The compiler needs three questions answered about a GPM's group pattern:
which variables it may bind (to find what earlier elements bound), which it
binds in *every* solution (a partition key must never be unbound), and which
variables an expression reads (to decide where a FILTER can run).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce

from rsep.plugin.algebra.sparql import (
    BGP,
    Aggregate,
    BinaryOp,
    Bind,
    Exists,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupPattern,
    In,
    InlineData,
    MinusPattern,
    Node,
    OptionalPattern,
    ServicePattern,
    SubSelect,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
)


def expr_vars(expr: Expr) -> frozenset[str]:
    """Variables an expression reads, including inside EXISTS patterns."""
    if isinstance(expr, Var):
        return frozenset((expr.name,))
    if isinstance(expr, BinaryOp):
        return expr_vars(expr.left) | expr_vars(expr.right)
    if isinstance(expr, UnaryOp):
        return expr_vars(expr.operand)
    if isinstance(expr, In):
        return reduce(frozenset.union, map(expr_vars, expr.options), expr_vars(expr.expr))
    if isinstance(expr, FunctionCall):
        return reduce(frozenset.union, map(expr_vars, expr.args), frozenset())
    if isinstance(expr, Aggregate):
        return expr_vars(expr.expr) if expr.expr is not None else frozenset()
    if isinstance(expr, Exists):
        return pattern_vars(expr.pattern)
    return frozenset()


def triple_vars(triple: TriplePattern) -> frozenset[str]:
    names = {t.name for t in (triple.subject, triple.object) if isinstance(t, Var)}
    if isinstance(triple.predicate, Var):
        names.add(triple.predicate.name)
    return frozenset(names)


def pattern_vars(pattern: GroupPattern) -> frozenset[str]:
    """Variables that may be bound by (or are visible from) a group pattern."""
    return reduce(frozenset.union, (_element_vars(e) for e in pattern.elements), frozenset())


def _element_vars(element: Node) -> frozenset[str]:
    if isinstance(element, BGP):
        return reduce(frozenset.union, map(triple_vars, element.triples), frozenset())
    if isinstance(element, GroupPattern):
        return pattern_vars(element)
    if isinstance(element, OptionalPattern):
        return pattern_vars(element.pattern)
    if isinstance(element, UnionPattern):
        return reduce(frozenset.union, map(pattern_vars, element.branches), frozenset())
    if isinstance(element, (GraphGraphPattern, ServicePattern)):
        own = frozenset((element.name.name,)) if isinstance(element.name, Var) else frozenset()
        return own | pattern_vars(element.pattern)
    if isinstance(element, Bind):
        return frozenset((element.var.name,))
    if isinstance(element, InlineData):
        return frozenset(v.name for v in element.vars)
    if isinstance(element, SubSelect):
        return _subselect_visible(element)
    return frozenset()


def _subselect_visible(element: SubSelect) -> frozenset[str]:
    query = element.query
    if query.projection is None:
        return pattern_vars(query.where)
    return frozenset(p.var.name for p in query.projection)


def certain_vars(pattern: GroupPattern) -> frozenset[str]:
    """Variables bound in every solution of the pattern (a safe under-approximation)."""
    return reduce(frozenset.union, (_element_certain(e) for e in pattern.elements), frozenset())


def _element_certain(element: Node) -> frozenset[str]:
    if isinstance(element, BGP):
        return reduce(frozenset.union, map(triple_vars, element.triples), frozenset())
    if isinstance(element, GroupPattern):
        return certain_vars(element)
    if isinstance(element, UnionPattern):
        return reduce(frozenset.intersection, map(certain_vars, element.branches))
    if isinstance(element, GraphGraphPattern):
        own = frozenset((element.name.name,)) if isinstance(element.name, Var) else frozenset()
        return own | certain_vars(element.pattern)
    if isinstance(element, InlineData):
        return frozenset(
            var.name for i, var in enumerate(element.vars) if all(row[i] is not None for row in element.rows)
        )
    if isinstance(element, SubSelect):
        query = element.query
        inner = certain_vars(query.where)
        if query.projection is None:
            return inner
        return frozenset(p.var.name for p in query.projection if p.expr is None and p.var.name in inner)
    return frozenset()


def filters_of(pattern: GroupPattern) -> tuple[Filter, ...]:
    """The FILTERs directly in a group (their scope is the whole group)."""
    return tuple(e for e in pattern.elements if isinstance(e, Filter))


def mentioned_vars(element: Node) -> frozenset[str]:
    """Every variable written anywhere inside an element, expressions included
    (what an order-sensitive element such as OPTIONAL or BIND can observe)."""
    if isinstance(element, Filter):
        return expr_vars(element.expr)
    if isinstance(element, Bind):
        return expr_vars(element.expr) | {element.var.name}
    if isinstance(element, GroupPattern):
        return reduce(frozenset.union, map(mentioned_vars, element.elements), frozenset())
    if isinstance(element, (OptionalPattern, MinusPattern)):
        return mentioned_vars(element.pattern)
    if isinstance(element, UnionPattern):
        return reduce(frozenset.union, map(mentioned_vars, element.branches), frozenset())
    if isinstance(element, (GraphGraphPattern, ServicePattern)):
        own = frozenset((element.name.name,)) if isinstance(element.name, Var) else frozenset()
        return own | mentioned_vars(element.pattern)
    if isinstance(element, SubSelect):
        return mentioned_vars(element.query.where) | _subselect_visible(element)
    return _element_vars(element)


def graph_names(element: Node) -> frozenset[str | None]:
    """IRIs of the GRAPH blocks nested anywhere in an element (None for GRAPH ?var)."""
    own: frozenset[str | None] = frozenset()
    if isinstance(element, GraphGraphPattern):
        own = frozenset((None if isinstance(element.name, Var) else element.name.value,))
    return reduce(frozenset.union, map(graph_names, _subpatterns(element)), own)


def service_blocks(element: Node) -> tuple[ServicePattern, ...]:
    """The SERVICE blocks nested anywhere in an element (EXISTS and sub-SELECTs included)."""
    own = (element,) if isinstance(element, ServicePattern) else ()
    return own + tuple(block for child in _subpatterns(element) for block in service_blocks(child))


def _subpatterns(element: Node) -> tuple[Node, ...]:
    """The patterns directly inside an element, those of EXISTS in its expressions included."""
    if isinstance(element, (Filter, Bind)):
        return _expr_patterns(element.expr)
    if isinstance(element, GroupPattern):
        return element.elements
    if isinstance(element, (OptionalPattern, MinusPattern, ServicePattern, GraphGraphPattern)):
        return (element.pattern,)
    if isinstance(element, UnionPattern):
        return element.branches
    if isinstance(element, SubSelect):
        return (element.query.where,)
    return ()


def _expr_patterns(expr: Expr) -> tuple[Node, ...]:
    if isinstance(expr, Exists):
        return (expr.pattern,)
    children: tuple[Expr, ...] = ()
    if isinstance(expr, BinaryOp):
        children = (expr.left, expr.right)
    elif isinstance(expr, UnaryOp):
        children = (expr.operand,)
    elif isinstance(expr, In):
        children = (expr.expr, *expr.options)
    elif isinstance(expr, FunctionCall):
        children = expr.args
    return tuple(pattern for child in children for pattern in _expr_patterns(child))


def expr_contains(expr: Expr, kind: type[Expr] | tuple[type[Expr], ...]) -> bool:
    """Is a node of `kind` anywhere in the expression (not looking into EXISTS patterns)?"""
    found: list[Expr] = []

    def visit(node: Expr) -> Expr | None:
        if isinstance(node, kind):
            found.append(node)
            return node
        return None

    map_expr(expr, visit)
    return bool(found)


def map_expr(expr: Expr, replace_node: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild an expression bottom-up, letting `replace_node` substitute any
    sub-expression (return None to keep it). Patterns inside EXISTS are kept."""
    found = replace_node(expr)
    if found is not None:
        return found
    if isinstance(expr, BinaryOp):
        return BinaryOp(expr.op, map_expr(expr.left, replace_node), map_expr(expr.right, replace_node))
    if isinstance(expr, UnaryOp):
        return UnaryOp(expr.op, map_expr(expr.operand, replace_node))
    if isinstance(expr, In):
        options = tuple(map_expr(o, replace_node) for o in expr.options)
        return In(map_expr(expr.expr, replace_node), options, expr.negated)
    if isinstance(expr, FunctionCall):
        args = tuple(map_expr(a, replace_node) for a in expr.args)
        return FunctionCall(expr.name, args, expr.distinct, expr.position)
    return expr
