"""EP-SPARQL: grammar/epsparql.lark's transformer to the event algebra.

EP-SPARQL queries a single stream of triple occurrences (§4.2): every triple
pattern is matched by one triple occurrence, so each becomes a GPM of one
triple pattern over all the query's streams (a graph event contributes each
of its triples, at its timestamp). Graph patterns map to event operators:
juxtaposition -> EventJoin (Join), SEQ -> Sequence with skip-till-any
(SeqJoin: the left interval ends before the right one starts), EQUALS ->
Equals, OPTIONALSEQ -> OptionalSequence (SeqRightJoin), EQUALSOPTIONAL ->
EqualsOptional (EqLeftJoin), UNION -> Disjunction, OPTIONAL -> EventLeftJoin,
FILTER -> EventFilter over its group (getDURATION() etc. refer to that
group's interval). `GRAPH <kb> {...}` blocks at the top level read the
background knowledge base and join with the event mappings (RSEP-QL's MATCH).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import reduce
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, StaticSemanticsError
from rsep.plugin.algebra.analysis import expr_vars, map_expr, pattern_vars
from rsep.plugin.algebra.events import (
    DURATION_FUNCTION,
    END_TIME_FUNCTION,
    EPSPARQL,
    START_TIME_FUNCTION,
    TIME_FUNCTIONS,
    ConstructForm,
    Disjunction,
    Equals,
    EqualsOptional,
    EventFilter,
    EventJoin,
    EventLeftJoin,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    MatchElement,
    OptionalSequence,
    SelectForm,
    SelectionStrategy,
    Sequence,
)
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    Aggregate,
    BinaryOp,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupPattern,
    InlineData,
    Node,
    OptionalPattern,
    Prologue,
    SelectQuery,
    SolutionModifiers,
    SubSelect,
    UnionPattern,
)

_TIME_FUNCTIONS = {
    "GETDURATION": DURATION_FUNCTION,
    "GETSTARTTIME": START_TIME_FUNCTION,
    "GETENDTIME": END_TIME_FUNCTION,
}


@dataclass(frozen=True, slots=True)
class TemporalChain(Node):
    """`{P1} op {P2} op ...` before translation: groups and the operators between them."""

    groups: tuple[GroupPattern, ...]
    operators: tuple[str, ...]


@dataclass
class _Translation:
    """Per query: GPM names handed out, background blocks and filters that
    need them, collected while translating the WHERE group."""

    count: int = 0
    background: list[GraphGraphPattern] = field(default_factory=list)
    late_filters: list[Filter] = field(default_factory=list)


class EpsparqlTransformer(SparqlTransformer):
    """One method per rule epsparql.lark adds or overrides."""

    def built_in_call(self, children: list[Any]) -> Expr:
        head = children[0]
        if isinstance(head, Token) and head.type.endswith("TIME_FUNCTION"):
            return FunctionCall(IRI(_TIME_FUNCTIONS[str(head).upper()]), ())
        return super().built_in_call(children)

    def where_body(self, children: list[Node]) -> GroupPattern:
        return self._group(self.group_graph_pattern_sub(children).items)

    def group_or_union_graph_pattern(self, children: list[Any]) -> Any:
        groups = [c for c in children if isinstance(c, GroupPattern)]
        operators = [str(c).upper() for c in children if isinstance(c, Token)]
        if all(op == "UNION" for op in operators):
            return super().group_or_union_graph_pattern(groups)
        node = TemporalChain(tuple(groups), tuple(operators))
        self.set_scope(node, (name for group in groups for name in self.scope(group)))
        return node

    @v_args(meta=True)
    def select_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        clause = parts.select
        assert clause is not None and parts.where is not None
        return self._query(SelectForm(clause.projection, clause.distinct), parts, meta)

    @v_args(meta=True)
    def construct_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        if parts.where is None or parts.template is None:
            raise self.fail("an EP-SPARQL CONSTRUCT rule needs a template and a WHERE pattern", meta)
        return self._query(ConstructForm(parts.template), parts, meta)

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        if values is not None:
            raise StaticSemanticsError("a trailing VALUES clause does not apply to an EP-SPARQL query", 1, 1)
        return replace(form, prologue=prologue)

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        if parts.dataset:
            raise self.fail("FROM and FROM NAMED do not apply to EP-SPARQL: use GRAPH <kb> { ... }", meta)
        assert parts.where is not None
        state = _Translation()
        where = _top_level(parts.where)
        projection = None
        if len(where.elements) == 1 and isinstance(where.elements[0], SubSelect):
            sub = where.elements[0].query
            self._check_sub_select(sub, meta)
            where, projection = _top_level(sub.where), sub.projection
        pattern = self._translate(where, state, top=True)
        return EventQuery(
            dialect=EPSPARQL,
            form=form,
            streams=(),
            where=GroupPattern((MatchElement(pattern), *state.background, *state.late_filters)),
            modifiers=parts.modifiers,
            solution_projection=projection,
        )

    def _check_sub_select(self, sub: SelectQuery, meta: Meta) -> None:
        """A sub-SELECT as the whole WHERE (rule (5)) projects and computes per solution; what
        would need the set of all solutions (grouping, ordering, slicing) has no place there."""
        aggregated = any(p.expr is not None and _has_aggregate(p.expr) for p in sub.projection or ())
        if sub.distinct or sub.reduced or sub.modifiers != SolutionModifiers() or aggregated:
            raise self.fail(
                "a sub-SELECT in an EP-SPARQL query computes per solution: DISTINCT, REDUCED, "
                "aggregates, GROUP BY, HAVING, ORDER BY, LIMIT and OFFSET do not apply",
                meta,
            )
        if sub.values is not None or sub.dataset:
            raise self.fail("a sub-SELECT in an EP-SPARQL query takes no VALUES and no FROM", meta)

    # ------------------------------------------------------------------ translation

    def _translate(self, group: GroupPattern, state: _Translation, *, top: bool = False) -> EventPattern:
        parts: list[EventPattern] = []
        filters: list[Filter] = []
        for element in group.elements:
            if isinstance(element, Filter):
                filters.append(element)
            elif isinstance(element, OptionalPattern):
                left = self._joined(parts, element)
                parts = [EventLeftJoin(left, self._translate(element.pattern, state))]
            elif isinstance(element, GraphGraphPattern) and top:
                state.background.append(element)
            else:
                parts.extend(self._element(element, state))
        pattern = self._joined(parts, group)
        return self._filtered(pattern, filters, state, top=top)

    def _element(self, element: Node, state: _Translation) -> list[EventPattern]:
        if isinstance(element, BGP):
            return [self._triple_event(triple, state) for triple in element.triples]
        if isinstance(element, GroupPattern):
            return [self._translate(element, state)]
        if isinstance(element, UnionPattern):
            return [Disjunction(tuple(self._translate(b, state) for b in element.branches))]
        if isinstance(element, TemporalChain):
            return [self._chain(element, state)]
        if isinstance(element, GraphGraphPattern):
            raise self.fail(
                "GRAPH <kb> { ... } may only appear at the top level of an EP-SPARQL pattern", element
            )
        if isinstance(element, SubSelect):
            raise self.fail("a sub-SELECT may only be the whole WHERE of an EP-SPARQL query", element)
        raise self.fail(f"{type(element).__name__} is not supported in an EP-SPARQL event pattern", element)

    def _triple_event(self, triple: Any, state: _Translation) -> GraphPatternEvent:
        state.count += 1
        return GraphPatternEvent(f"t{state.count}", (), GroupPattern((BGP((triple,)),)))

    def _chain(self, chain: TemporalChain, state: _Translation) -> EventPattern:
        patterns = [self._translate(group, state) for group in chain.groups]
        result = patterns[0]
        for operator, right in zip(chain.operators, patterns[1:], strict=True):
            result = _combine(operator, result, right)
        return result

    def _joined(self, parts: list[EventPattern], where: Node) -> EventPattern:
        if not parts:
            raise self.fail("an EP-SPARQL group needs at least one triple pattern", where)
        return parts[0] if len(parts) == 1 else EventJoin(tuple(parts))

    def _filtered(
        self, pattern: EventPattern, filters: list[Filter], state: _Translation, *, top: bool
    ) -> EventPattern:
        """Filters over the group's event mappings; at the top level those that
        read background variables wait for the background join."""
        event_vars = _event_vars(pattern)
        local: list[Expr] = []
        for flt in filters:
            if top and not expr_vars(flt.expr) <= event_vars and state.background:
                if _uses_time(flt.expr):
                    raise self.fail(
                        "getDURATION() and friends cannot be mixed with background variables", flt
                    )
                state.late_filters.append(flt)
            else:
                local.append(flt.expr)
        if not local:
            return pattern
        return EventFilter(pattern, reduce(lambda a, b: BinaryOp("&&", a, b), local))


def _combine(operator: str, left: EventPattern, right: EventPattern) -> EventPattern:
    if operator == "SEQ":
        return Sequence((left, right), (SelectionStrategy.SKIP_TILL_ANY,))
    if operator == "EQUALS":
        return Equals(left, right)
    if operator == "OPTIONALSEQ":
        return OptionalSequence(left, right)
    if operator == "EQUALSOPTIONAL":
        return EqualsOptional(left, right)
    return Disjunction((left, right))


def _event_vars(pattern: EventPattern) -> frozenset[str]:
    if isinstance(pattern, GraphPatternEvent):
        return pattern_vars(pattern.pattern)
    children: tuple[Any, ...] = ()
    for name in ("elements", "operands"):
        children += getattr(pattern, name, ())
    for name in ("left", "right", "element"):
        if hasattr(pattern, name):
            children += (getattr(pattern, name),)
    return frozenset().union(*(_event_vars(child) for child in children))


def _uses_time(expr: Expr) -> bool:
    if isinstance(expr, FunctionCall):
        return (isinstance(expr.name, IRI) and expr.name.value in TIME_FUNCTIONS) or any(
            _uses_time(a) for a in expr.args
        )
    return any(_uses_time(getattr(expr, n)) for n in ("left", "right", "operand") if hasattr(expr, n))


def _top_level(where: GroupPattern) -> GroupPattern:
    """`WHERE { P }` is `WHERE P`: P is the top level."""
    while len(where.elements) == 1 and isinstance(where.elements[0], GroupPattern):
        where = where.elements[0]
    return where


def _has_aggregate(expr: Expr) -> bool:
    found: list[Aggregate] = []

    def visit(node: Expr) -> Expr | None:
        if isinstance(node, Aggregate):
            found.append(node)
            return node
        return None

    map_expr(expr, visit)
    return bool(found)
