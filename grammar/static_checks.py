"""The static rules of SPARQL the grammar cannot express, checked as the tree is transformed:
§18.2.1 scoping (BIND, `(expr AS ?v)`), §18.2.4.1 and §11.4 projection and grouping, aggregates
outside SELECT/HAVING/ORDER BY, and §19.6 blank-node labels. Each failure is a
`StaticSemanticsError` at the offending construct."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from rsep.grammar.expression_walks import first_aggregate, group_keys, has_aggregate, iter_expression
from rsep.grammar.query_parts import SelectClause
from rsep.grammar.transformer_base import Occurrence, StaticSemanticsError, TransformerBase
from rsep.plugin.algebra.sparql import (
    BGP,
    Bind,
    Filter,
    GroupPattern,
    InlineData,
    Node,
    Projection,
    SolutionModifiers,
    Var,
)


def _first_reuse(occurrences: Iterable[Occurrence], spans: list[tuple[int, int, int]]) -> Occurrence | None:
    """The first label occurrence that lies in a different span group than the label's first one.
    `spans` are disjoint (start, end, group) character ranges."""
    spans = sorted(spans)
    starts = [start for start, _, _ in spans]
    first_group: dict[str, int] = {}
    for occurrence in sorted(occurrences, key=lambda o: o.start):
        index = bisect_right(starts, occurrence.start) - 1
        if index < 0 or occurrence.start >= spans[index][1]:
            continue
        if first_group.setdefault(occurrence.name, spans[index][2]) != spans[index][2]:
            return occurrence
    return None


class StaticChecks(TransformerBase):
    """The checks rule methods call (and the blank-node label check `transform` runs last)."""

    def check_group(self, elements: Sequence[Node]) -> None:
        """§18.2.1: the variable of BIND must not be in scope in the group before the BIND."""
        in_scope: set[str] = set()
        for element in elements:
            if isinstance(element, Bind) and element.var.name in in_scope:
                raise self.fail(f"BIND variable ?{element.var.name} is already in scope", element.var)
            in_scope |= self.scope(element)

    def _check_projection_names(self, items: Sequence[Projection]) -> None:
        """§18.2.4.1: the variable of `(expr AS ?v)` is new: not projected elsewhere in the clause."""
        for item in items:
            if item.expr is not None and sum(other.var.name == item.var.name for other in items) > 1:
                raise self.fail(f"?{item.var.name} is projected more than once", item.var)

    def check_assigned(
        self, projection: Sequence[Projection] | None, in_scope: frozenset[str], where: str
    ) -> None:
        """§18.2.1: the variable of `(expr AS ?v)` must not be in scope already (`where` says where)."""
        for item in projection or ():
            if item.expr is not None and item.var.name in in_scope:
                raise self.fail(f"?{item.var.name} is already in scope in {where}", item.var)

    def check_projection(
        self, clause: SelectClause, where: GroupPattern, modifiers: SolutionModifiers
    ) -> None:
        """§18.2.4.1 and §11.4: `(expr AS ?v)` needs ?v out of scope of WHERE; with GROUP BY or
        aggregates, `*` is not allowed and plain projected variables must be grouping keys."""
        self.check_assigned(clause.projection, self.scope(where), "the WHERE clause")
        if self._is_aggregated(clause, modifiers):
            self._check_grouped_projection(clause, modifiers)

    @staticmethod
    def _is_aggregated(clause: SelectClause, modifiers: SolutionModifiers) -> bool:
        exprs: list[Node] = [p.expr for p in clause.projection or () if p.expr is not None]
        exprs += [*modifiers.having, *(c.expr for c in modifiers.order_by)]
        return bool(modifiers.group_by) or has_aggregate(exprs)

    def _check_grouped_projection(self, clause: SelectClause, modifiers: SolutionModifiers) -> None:
        if clause.projection is None:
            assert clause.star is not None
            raise StaticSemanticsError("SELECT * is not allowed with GROUP BY or aggregates", *clause.star)
        allowed = group_keys(modifiers.group_by)
        for item in clause.projection:
            if item.expr is None and item.var.name not in allowed:
                raise self.fail(f"?{item.var.name} is neither a GROUP BY key nor aggregated", item.var)
            for node in iter_expression(item.expr, into_aggregates=False) if item.expr is not None else ():
                if isinstance(node, Var) and node.name not in allowed:
                    raise self.fail(f"?{node.name} is neither a GROUP BY key nor aggregated", node)
            allowed.add(item.var.name)

    def reject_aggregates(self, expr: Node, clause: str) -> None:
        """Aggregates belong to SELECT, HAVING and ORDER BY only."""
        aggregate = first_aggregate(expr)
        if aggregate is not None:
            raise self.fail(f"aggregate {aggregate.name} is not allowed in {clause}", aggregate)

    def _register_bgp_groups(self, elements: Sequence[Node]) -> None:
        """Record the basic graph patterns of a group for the blank-node label rule. As in Oxigraph,
        triples blocks separated only by FILTER, BIND or VALUES count as one BGP; nested groups,
        OPTIONAL, MINUS, UNION, GRAPH, SERVICE and sub-queries start new ones."""
        group = None
        for element in elements:
            if isinstance(element, BGP):
                if group is None:
                    group = self._bgp_groups
                    self._bgp_groups += 1
                _, start, end = self._spans[id(element)]
                self._bgp_spans.append((start, end, group))
            elif not isinstance(element, Filter | Bind | InlineData):
                group = None

    def check_whole_tree(self) -> None:
        """§19.6: a blank-node label names one node in one BGP of a query or one operation of an update."""
        reused = _first_reuse(self._labels, self._bgp_spans)
        if reused is not None:
            raise StaticSemanticsError(
                f"blank node _:{reused.name} is used in more than one basic graph pattern",
                reused.line,
                reused.column,
            )
        reused = _first_reuse(self._labels, self._operation_spans)
        if reused is not None:
            raise StaticSemanticsError(
                f"blank node _:{reused.name} is used in more than one update operation",
                reused.line,
                reused.column,
            )
