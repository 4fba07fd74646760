"""Rule methods for queries, W3C productions [1]-[28]: the prologue (BASE and PREFIX, applied as
they are read), the four query forms, dataset clauses, solution modifiers and the trailing VALUES."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from rsep.grammar.expression_walks import triple_vars
from rsep.grammar.lexical import resolve_iri, terminal_name
from rsep.grammar.query_parts import (
    BaseDecl,
    GroupBy,
    Having,
    Limit,
    Offset,
    OrderBy,
    QueryParts,
    SelectClause,
)
from rsep.grammar.transformer_base import position_of
from rsep.grammar.update_rules import UpdateRules
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    AskQuery,
    ConstructQuery,
    DatasetClause,
    DescribeQuery,
    Expr,
    GroupCondition,
    GroupPattern,
    InlineData,
    Node,
    OrderCondition,
    Projection,
    Prologue,
    SelectQuery,
    SolutionModifiers,
    SubSelect,
    Var,
)


class QueryRules(UpdateRules):
    """[1]-[28] queries."""

    def query_unit(self, children: list[Any]) -> Any:
        return children[0]

    def update_unit(self, children: list[Any]) -> None:
        return None

    def query(self, children: list[Any]) -> Any:
        prologue, form, values = children
        return self.finish_query(form, prologue, values)

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        """Attach the prologue and the trailing VALUES ([2] keeps them outside the query form)."""
        if values is not None and isinstance(form, SelectQuery):
            names = frozenset(v.name for v in values.vars)
            self.check_assigned(form.projection, names, "the trailing VALUES clause")
        return replace(form, prologue=prologue, values=values)

    def prologue(self, children: list[Any]) -> Prologue:
        base = None
        prefixes = []
        for child in children:
            if isinstance(child, BaseDecl):
                base = child.iri
            else:
                prefixes.append(child)
        return Prologue(base, tuple(prefixes))

    def base_decl(self, children: list[Token]) -> BaseDecl:
        self.base = resolve_iri(self.base, self._iriref_text(children[0]))
        return BaseDecl(self.base)

    def prefix_decl(self, children: list[Token]) -> tuple[str, str]:
        namespace, reference = children
        iri = resolve_iri(self.base, self._iriref_text(reference))
        self.prefixes[str(namespace)[:-1]] = iri
        return (str(namespace)[:-1], iri)

    def select_query(self, children: list[Any]) -> Node:
        return self.build_select(QueryParts.collect(children))

    def build_select(self, parts: QueryParts) -> SelectQuery:
        """A SelectQuery from its parts, after the projection rules (§18.2.4.1, §11.4)."""
        clause, where = parts.select, parts.where
        assert clause is not None and where is not None
        self.check_projection(clause, where, parts.modifiers)
        return SelectQuery(
            projection=clause.projection,
            where=where,
            distinct=clause.distinct,
            reduced=clause.reduced,
            dataset=tuple(parts.dataset),
            modifiers=parts.modifiers,
            values=parts.values,
        )

    def sub_select(self, children: list[Any]) -> SubSelect:
        parts = QueryParts.collect(children)
        query = self.build_select(parts)
        assert parts.where is not None
        node = SubSelect(query)
        projected = (p.var.name for p in query.projection) if query.projection else self.scope(parts.where)
        self.set_scope(node, projected)
        return node

    @v_args(meta=True)
    def select_clause(self, meta: Meta, children: list[Any]) -> SelectClause:
        keywords = {terminal_name(c): c for c in children if isinstance(c, Token)}
        items = [self._projection(c) for c in children if not isinstance(c, Token)]
        self._check_projection_names(items)
        star = keywords.get("STAR")
        return SelectClause(
            projection=None if star is not None else tuple(items),
            distinct="DISTINCT" in keywords,
            reduced="REDUCED" in keywords,
            star=self.position(star) if star is not None else None,
        )

    @staticmethod
    def _projection(item: Var | Projection) -> Projection:
        return item if isinstance(item, Projection) else Projection(item)

    def select_expression(self, children: list[Any]) -> Projection:
        expr, var = children
        return Projection(var, expr)

    def construct_query(self, children: list[Any]) -> ConstructQuery:
        parts = QueryParts.collect(children)
        template = parts.template or ()
        where = parts.where
        if where is None:  # CONSTRUCT WHERE { triples }: the template is the pattern
            bgp = BGP(template)
            self.set_scope(bgp, (name for t in template for name in triple_vars(t)))
            where = self._group((bgp,) if template else ())
        return ConstructQuery(template, where, tuple(parts.dataset), parts.modifiers)

    def describe_query(self, children: list[Any]) -> DescribeQuery:
        parts = QueryParts.collect(children)
        targets = None if parts.star else tuple(parts.targets)
        return DescribeQuery(targets, parts.where, tuple(parts.dataset), parts.modifiers)

    def ask_query(self, children: list[Any]) -> AskQuery:
        parts = QueryParts.collect(children)
        assert parts.where is not None
        return AskQuery(parts.where, tuple(parts.dataset), parts.modifiers)

    def dataset_clause(self, children: list[DatasetClause]) -> DatasetClause:
        return children[0]

    def default_graph_clause(self, children: list[IRI]) -> DatasetClause:
        return DatasetClause(children[0])

    def named_graph_clause(self, children: list[Any]) -> DatasetClause:
        return DatasetClause(children[-1], named=True)

    def where_clause(self, children: list[GroupPattern]) -> GroupPattern:
        return children[0]

    def solution_modifier(self, children: list[Any]) -> SolutionModifiers:
        values: dict[str, Any] = {}
        for child in children:
            if isinstance(child, GroupBy):
                values["group_by"] = child.conditions
            elif isinstance(child, Having):
                values["having"] = child.conditions
            elif isinstance(child, OrderBy):
                values["order_by"] = child.conditions
            else:
                values.update(child)
        return SolutionModifiers(**values)

    def group_clause(self, children: list[GroupCondition]) -> GroupBy:
        return GroupBy(tuple(children))

    def group_condition(self, children: list[Any]) -> GroupCondition:
        self.reject_aggregates(children[0], "GROUP BY")
        return GroupCondition(children[0], children[1] if len(children) > 1 else None)

    def having_clause(self, children: list[Expr]) -> Having:
        return Having(tuple(children))

    def order_clause(self, children: list[OrderCondition]) -> OrderBy:
        return OrderBy(tuple(children))

    def order_condition(self, children: list[Any]) -> OrderCondition:
        if isinstance(children[0], Token):
            return OrderCondition(children[1], descending=terminal_name(children[0]) == "DESC")
        return OrderCondition(children[0])

    def limit_offset_clauses(self, children: list[Any]) -> dict[str, int]:
        return {("limit" if isinstance(c, Limit) else "offset"): c.value for c in children}

    def limit_clause(self, children: list[int]) -> Limit:
        return Limit(children[0])

    def offset_clause(self, children: list[int]) -> Offset:
        return Offset(children[0])

    @v_args(meta=True)
    def values_clause(self, meta: Meta, children: list[InlineData]) -> InlineData | None:
        """The data, positioned at its VALUES keyword so a dialect that refuses it can say where."""
        if not children:
            return None
        self.remember(children[0], *position_of(meta))
        return children[0]
