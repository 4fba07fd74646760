"""Rebuilding the parts of a group pattern that are matched against one active graph.

A rewrite that concerns the graph a pattern is matched against (the entailed window, the event
graph of a GPM) must reach every element matched against it: inside nested groups, OPTIONAL,
MINUS, UNION, sub-selects and EXISTS, but not inside GRAPH or SERVICE blocks, which name their
own graph. Extension nodes that subclass GroupPattern (a knowledge-base lookup) are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rsep.plugin.algebra.analysis import map_expr
from rsep.plugin.algebra.sparql import (
    Bind,
    Exists,
    Expr,
    Filter,
    GroupPattern,
    MinusPattern,
    Node,
    OptionalPattern,
    SubSelect,
    UnionPattern,
)

Visit = Callable[[Node], Node | None]
"""A replacement for an element, or None to keep it and descend into it."""


def map_in_graph(element: Node, visit: Visit) -> Node:
    """`element` rebuilt with `visit` applied to it and to every element read in its graph."""
    found = visit(element)
    if found is not None:
        return found
    if type(element) is GroupPattern:
        return GroupPattern(tuple(map_in_graph(e, visit) for e in element.elements))
    if isinstance(element, OptionalPattern):
        return OptionalPattern(map_group(element.pattern, visit))
    if isinstance(element, MinusPattern):
        return MinusPattern(map_group(element.pattern, visit))
    if isinstance(element, UnionPattern):
        return UnionPattern(tuple(map_group(b, visit) for b in element.branches))
    if isinstance(element, SubSelect):
        return SubSelect(replace(element.query, where=map_group(element.query.where, visit)))
    if isinstance(element, Filter):
        return Filter(map_exists(element.expr, visit))
    if isinstance(element, Bind):
        return Bind(map_exists(element.expr, visit), element.var)
    return element  # BGPs, VALUES; GRAPH and SERVICE blocks read their own graph


def map_group(group: GroupPattern, visit: Visit) -> GroupPattern:
    mapped = map_in_graph(group, visit)
    assert isinstance(mapped, GroupPattern)
    return mapped


def map_exists(expr: Expr, visit: Visit) -> Expr:
    """The expression with the patterns of its EXISTS rebuilt."""

    def exists(node: Expr) -> Expr | None:
        return Exists(map_group(node.pattern, visit), node.negated) if isinstance(node, Exists) else None

    return map_expr(expr, exists)
