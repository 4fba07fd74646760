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
group's interval). As SPARQL 1.1 translates a group (§18.2.2.6), elements
fold left: BIND -> EventBind over the group's patterns written before it
(Extend; the time functions read their interval), VALUES -> EventValues (a
join with a static table, applied with the next OPTIONAL, BIND or the end of
the group, so the triple patterns around it stay one join group); a BIND
written before any pattern reads only the VALUES and BINDs before it; a
trailing VALUES clause joins the whole WHERE (compile/query_plan.py, after its
FILTERs). Neither adds a triple occurrence: what would join only them (a
group of VALUES, an OPTIONAL after nothing else) has no interval and is
refused at them. `GRAPH <kb> {...}` blocks at the top level read the
background knowledge base and join with the event mappings (RSEP-QL's MATCH).
A property path that needs several triples (`:p/:q`, `^(:p/:q)`) becomes the
join of one GPM per triple, with fresh `?__path` variables for the nodes in
between: a path over triple occurrences, its interval their hull.

What has no meaning on a stream whose answers are reported as detected and
never retracted (§4.2, time-wise monotonicity) is refused where it is
written: aggregates, GROUP BY, HAVING, ORDER BY, EXISTS, MINUS,
SERVICE, ASK, DESCRIBE, arbitrary-length paths, and LIMIT/OFFSET on a
CONSTRUCT (its solutions feed the stream). docs/semantics.md has the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import reduce
from itertools import pairwise
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.absolute_iris import AbsoluteIris
from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, StaticSemanticsError
from rsep.plugin.algebra.analysis import expr_contains, expr_vars, pattern_vars
from rsep.plugin.algebra.events import (
    DURATION_FUNCTION,
    END_TIME_FUNCTION,
    START_TIME_FUNCTION,
    TIME_FUNCTIONS,
    ConstructForm,
    ConsumptionPolicy,
    Dialect,
    Disjunction,
    Equals,
    EqualsOptional,
    EventBind,
    EventFilter,
    EventJoin,
    EventLeftJoin,
    EventPattern,
    EventQuery,
    EventValues,
    GraphPatternEvent,
    MatchElement,
    OptionalSequence,
    ReportPolicy,
    SelectForm,
    SelectionStrategy,
    Sequence,
    event_children,
)
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    Aggregate,
    BinaryOp,
    Bind,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupPattern,
    InlineData,
    Node,
    OptionalPattern,
    Path,
    PathAlternative,
    PathInverse,
    PathMod,
    PathNegatedSet,
    PathSequence,
    Projection,
    Prologue,
    SelectQuery,
    SolutionModifiers,
    SourcePosition,
    SubSelect,
    TriplePattern,
    UnionPattern,
    Var,
)

EPSPARQL = Dialect(
    "ep-sparql",
    selection=SelectionStrategy.SKIP_TILL_ANY,
    consumption=ConsumptionPolicy.UNRESTRICTED,
    report=ReportPolicy.CONTENT_CHANGE,
    interval_semantics=True,
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
    path_nodes: int = 0
    top_binds: list[tuple[Bind, frozenset[str]]] = field(default_factory=list)
    """BINDs of the top-level group, with the variables the patterns before them bind."""


_NOT_MONOTONE = (
    "EP-SPARQL reports each answer as soon as it is detected and never retracts it (WWW 2011 §4.2, "
    "time-wise monotonicity)"
)
_REFUSED = {
    "GROUP BY": f"GROUP BY groups the whole solution set, which a stream never completes: {_NOT_MONOTONE}; "
    "aggregate over windows with C-SPARQL, or keep running values with a CONSTRUCT rule as in query (5)",
    "HAVING": f"HAVING filters groups of the whole solution set: {_NOT_MONOTONE}",
    "ORDER BY": "ORDER BY sorts the whole solution set; an EP-SPARQL query reports its answers as they are "
    "detected, in detection order (LIMIT and OFFSET count in that order)",
    "EXISTS": "EXISTS and NOT EXISTS are not part of EP-SPARQL (§4.2 defines no interval for them): "
    "write the pattern into the query, or NOT EXISTS as OPTIONAL and !BOUND",
    "MINUS": "MINUS is not part of EP-SPARQL (§4.2 defines no interval for it): write OPTIONAL and !BOUND",
    "SERVICE": "SERVICE is not supported in an EP-SPARQL query",
    "ASK": "an EP-SPARQL query reports solutions as they are detected: ASK has one answer for the whole "
    "stream; use SELECT ... LIMIT 1 (the first solution, if any)",
    "DESCRIBE": "DESCRIBE is not supported for EP-SPARQL: use SELECT or CONSTRUCT",
}


def _refusing(what: str) -> Any:
    """A transformer method that refuses its rule where it is written (`_REFUSED[what]`)."""

    @v_args(meta=True)
    def refuse(self: SparqlTransformer, meta: Meta, children: list[Any]) -> Any:
        raise self.fail(_REFUSED[what], meta)

    return refuse


class EpsparqlTransformer(AbsoluteIris):
    """One method per rule epsparql.lark adds or overrides."""

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(base_iri)
        self._slices: list[Meta] = []
        """Where LIMIT and OFFSET clauses are written, in text order."""

    def built_in_call(self, children: list[Any]) -> Expr:
        head = children[0]
        if isinstance(head, Token) and head.type.endswith("TIME_FUNCTION"):
            return FunctionCall(IRI(_TIME_FUNCTIONS[str(head).upper()]), ())
        return super().built_in_call(children)

    # ------------------------------------------------------------------ refused where written

    def aggregate(self, children: list[Any]) -> Aggregate:
        node = super().aggregate(children)
        raise self.fail(
            f"aggregates ({node.name}) need the whole solution set, which a stream never completes: "
            f"{_NOT_MONOTONE}; aggregate over windows with C-SPARQL, or keep running values with a "
            "CONSTRUCT rule as in query (5)",
            node,
        )

    group_clause = _refusing("GROUP BY")
    having_clause = _refusing("HAVING")
    order_clause = _refusing("ORDER BY")
    exists_func = not_exists_func = _refusing("EXISTS")
    minus_graph_pattern = _refusing("MINUS")
    service_graph_pattern = _refusing("SERVICE")
    ask_query = _refusing("ASK")
    describe_query = _refusing("DESCRIBE")

    # ------------------------------------------------------------------ positioned for later checks

    @v_args(meta=True)
    def bind(self, meta: Meta, children: list[Any]) -> Bind:
        node = super().bind(children)
        self.remember(node, *self.position(meta))
        return node

    @v_args(meta=True)
    def inline_data(self, meta: Meta, children: list[InlineData]) -> InlineData:
        node = super().inline_data(children)
        self.remember(node, *self.position(meta))
        return node

    @v_args(meta=True)
    def function_call(self, meta: Meta, children: list[Any]) -> FunctionCall:
        return self._positioned_call(super().function_call(children), meta)

    @v_args(meta=True)
    def iri_or_function(self, meta: Meta, children: list[Any]) -> IRI | FunctionCall:
        node = super().iri_or_function(children)
        return self._positioned_call(node, meta) if isinstance(node, FunctionCall) else node

    def _positioned_call(self, call: FunctionCall, meta: Meta) -> FunctionCall:
        """An extension function call, where it is written: the compiler refuses an unknown one
        in a FILTER or BIND the NFA evaluates there."""
        return replace(call, position=SourcePosition(*self.position(meta)))

    @v_args(meta=True)
    def limit_clause(self, meta: Meta, children: list[int]) -> Any:
        self._slices.append(meta)
        return super().limit_clause(children)

    @v_args(meta=True)
    def offset_clause(self, meta: Meta, children: list[int]) -> Any:
        self._slices.append(meta)
        return super().offset_clause(children)

    @v_args(meta=True)
    def path_elt(self, meta: Meta, children: list[Any]) -> PathMod:
        node = super().path_elt(children)
        self.remember(node, *self.position(meta))
        return node

    # ------------------------------------------------------------------ the paper's draft projection

    def select_var(self, children: list[Var]) -> Var:
        return children[0]

    @v_args(meta=True)
    def draft_projection(self, meta: Meta, children: list[Expr]) -> Projection:
        """`?sum / ?count AS ?average` (query (6)) or `?count AS ?prevcount + 1` (query (5)):
        SPARQL 1.1's `(expression AS ?variable)`, whichever side is the variable."""
        left, right = children
        if isinstance(left, Var) and isinstance(right, Var):
            a, b = left.name, right.name
            raise self.fail(
                f"?{a} AS ?{b} (the paper's draft syntax) could mean either variable is computed from "
                f"the other: write (?{a} AS ?{b}) or (?{b} AS ?{a})",
                meta,
            )
        if isinstance(right, Var):
            return Projection(right, left)
        if isinstance(left, Var):
            return Projection(left, right)
        raise self.fail("an item `expression AS expression` needs a variable on one side", meta)

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
        self.check_projection(clause, parts.where, parts.modifiers)
        return self._query(SelectForm(clause.projection, clause.distinct), parts, meta)

    @v_args(meta=True)
    def construct_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        if parts.where is None or parts.template is None:
            raise self.fail("an EP-SPARQL CONSTRUCT rule needs a template and a WHERE pattern", meta)
        return self._query(ConstructForm(parts.template), parts, meta)

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        """A trailing VALUES joins the query's solutions (SPARQL §18.2.4.3): it goes into the WHERE
        after the background and its FILTERs (`compile.plan.attach_background` joins it last)."""
        if values is not None:
            self._check_trailing(values, form.solution_projection)
            if any(isinstance(e, InlineData) for e in form.where.elements):
                raise self.fail("a query takes one trailing VALUES clause", values)
            if isinstance(form.form, SelectForm):
                names = frozenset(v.name for v in values.vars)
                self.check_assigned(form.form.projection, names, "the trailing VALUES clause")
            form = replace(form, where=GroupPattern((*form.where.elements, values)))
        return replace(form, prologue=prologue)

    def _check_trailing(self, values: InlineData, projection: tuple[Projection, ...] | None) -> None:
        if projection is not None:
            raise self.fail(
                "a trailing VALUES clause would join the sub-SELECT's projected solutions, which an "
                "EP-SPARQL query computes per solution after its pattern: write the VALUES inside the "
                "sub-SELECT's WHERE group",
                values,
            )

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        sliced = parts.modifiers.limit is not None or parts.modifiers.offset is not None
        if isinstance(form, ConstructForm) and sliced:
            raise self.fail(
                "LIMIT and OFFSET do not apply to an EP-SPARQL CONSTRUCT: its solutions feed the stream "
                "(the Q-closure, §4.2, is defined over all of them)",
                self._slices[-1] if self._slices else meta,
            )
        if parts.dataset:
            raise self.fail("FROM and FROM NAMED do not apply to EP-SPARQL: use GRAPH <kb> { ... }", meta)
        assert parts.where is not None
        state = _Translation()
        where, trailing = _trailing_values(_top_level(parts.where))
        projection = None
        if len(where.elements) == 1 and isinstance(where.elements[0], SubSelect):
            sub = where.elements[0].query
            self._check_sub_select(sub, meta)
            where, projection = _top_level(sub.where), sub.projection
        if len(trailing) > 1:
            raise self.fail("a query takes one trailing VALUES clause", trailing[1])
        for values in trailing:
            self._check_trailing(values, projection)
        pattern = self._translate(where, state, top=True)
        self._check_top_binds(state)
        return EventQuery(
            dialect=EPSPARQL,
            form=form,
            streams=(),
            where=GroupPattern((MatchElement(pattern), *state.background, *state.late_filters, *trailing)),
            modifiers=parts.modifiers,
            solution_projection=projection,
        )

    def _check_sub_select(self, sub: SelectQuery, meta: Meta) -> None:
        """A sub-SELECT as the whole WHERE (rule (5)) projects and computes per solution; what
        would need the set of all solutions (grouping, ordering, slicing) has no place there."""
        aggregated = any(
            p.expr is not None and expr_contains(p.expr, Aggregate) for p in sub.projection or ()
        )
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
        """The group folded left as SPARQL §18.2.2.6 does; `statics` are the VALUES (and the BINDs
        written before any pattern) not applied yet: they join what is folded next."""
        parts: list[EventPattern] = []
        statics: list[Bind | InlineData] = []
        filters: list[Filter] = []
        for element in group.elements:
            if isinstance(element, Filter):
                filters.append(element)
            elif isinstance(element, OptionalPattern):
                left = self._folded(parts, statics, element)
                parts, statics = [EventLeftJoin(left, self._translate(element.pattern, state))], []
            elif isinstance(element, GraphGraphPattern) and top:
                state.background.append(element)
            elif isinstance(element, Bind) and parts:
                before = self._folded(parts, statics, element)
                if top:
                    state.top_binds.append((element, _event_vars(before)))
                parts, statics = [EventBind(before, element.expr, element.var)], []
            elif isinstance(element, (Bind, InlineData)):
                if top and isinstance(element, Bind):
                    state.top_binds.append((element, _static_vars(statics)))
                statics.append(element)
            else:
                parts.extend(self._element(element, state))
        pattern = self._folded(parts, statics, group)
        return self._filtered(pattern, filters, state, top=top)

    def _folded(
        self, parts: list[EventPattern], statics: list[Bind | InlineData], where: Node
    ) -> EventPattern:
        """The group's patterns so far joined, then the pending VALUES and BINDs applied in order."""
        if not parts and statics:
            raise self._no_interval(statics[0], where)
        pattern = self._joined(parts, where)
        for index, static in enumerate(statics):
            if isinstance(static, InlineData):
                pattern = EventValues(pattern, static)
                continue
            if _uses_time(static.expr):
                raise self.fail(
                    "getDURATION(), getSTARTTIME() and getENDTIME() in a BIND read the interval of the "
                    "patterns written before it in its group, and this BIND comes before any: write it "
                    "after a triple pattern",
                    static,
                )
            pattern = EventBind(pattern, static.expr, static.var, leading=index)
        return pattern

    def _no_interval(self, static: Bind | InlineData, where: Node) -> StaticSemanticsError:
        what = "BIND" if isinstance(static, Bind) else "VALUES"
        if isinstance(where, OptionalPattern):
            joined = "an OPTIONAL extends what its group has before it, and here that is only"
        else:
            joined = "its group has no triple pattern, only"
        return self.fail(
            f"{what} adds no triple occurrence, and {joined} VALUES and BIND: those solutions would have "
            "no interval (EP-SPARQL §4.2 stamps a solution with the interval of its triple occurrences); "
            "write a triple pattern in the group",
            static,
        )

    def _check_top_binds(self, state: _Translation) -> None:
        """The knowledge base joins the whole pattern (at a mandatory triple pattern, `GRAPH <kb>`
        above), so a top-level BIND cannot be placed after it: one that reads what only the
        knowledge base binds is refused."""
        background = frozenset().union(*(_graph_vars(block) for block in state.background))
        for bind, before in state.top_binds:
            read = sorted((expr_vars(bind.expr) & background) - before)
            if read:
                names = ", ".join("?" + name for name in read)
                raise self.fail(
                    f"this BIND reads {names}, which the knowledge base (GRAPH <kb>) binds: rsep joins the "
                    "knowledge base with the whole event pattern, not before a BIND; compute the value in "
                    "the SELECT clause, (expression AS ?var)",
                    bind,
                )

    def _element(self, element: Node, state: _Translation) -> list[EventPattern]:
        if isinstance(element, BGP):
            return [event for triple in element.triples for event in self._triple_events(triple, state)]
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

    def _triple_event(self, triple: TriplePattern, state: _Translation) -> GraphPatternEvent:
        state.count += 1
        return GraphPatternEvent(f"t{state.count}", (), GroupPattern((BGP((triple,)),)))

    def _triple_events(self, triple: TriplePattern, state: _Translation) -> list[EventPattern]:
        """One GPM per triple occurrence the pattern needs: a path over several triples
        joins one GPM per step (SPARQL 1.1 §18.2.2.4's translation of sequence and inverse
        paths), alternatives of such paths are unions."""
        path = triple.predicate
        if isinstance(path, Var) or _one_triple(path):
            return [self._triple_event(triple, state)]
        if isinstance(path, PathMod):
            raise self.fail(
                f"the path modifier {path.modifier.value} ({_REPEATS[path.modifier.value]}) is not supported "
                "in EP-SPARQL: a path over triple occurrences has an interval only when it takes a fixed "
                "number of steps (zero steps take none); write the steps out with /, or use SEQ",
                path,
            )
        if isinstance(path, PathInverse):
            return self._triple_events(TriplePattern(triple.object, path.path, triple.subject), state)
        if isinstance(path, PathSequence):
            nodes: list[Any] = [triple.subject]
            for _ in path.steps[1:]:
                state.path_nodes += 1
                nodes.append(Var(f"__path{state.path_nodes}"))
            nodes.append(triple.object)
            return [
                event
                for step, (start, end) in zip(path.steps, pairwise(nodes), strict=True)
                for event in self._triple_events(TriplePattern(start, step, end), state)
            ]
        assert isinstance(path, PathAlternative)
        options = [
            self._triple_events(TriplePattern(triple.subject, o, triple.object), state) for o in path.options
        ]
        return [Disjunction(tuple(_joined_events(events) for events in options))]

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


_REPEATS = {"*": "zero or more steps", "+": "one or more steps", "?": "zero or one step"}


def _one_triple(path: Path) -> bool:
    """Does every match of the path use exactly one triple (so one GPM matches it)?"""
    if isinstance(path, (IRI, PathNegatedSet)):
        return True
    if isinstance(path, PathInverse):
        return _one_triple(path.path)
    if isinstance(path, PathAlternative):
        return all(map(_one_triple, path.options))
    return False


def _joined_events(events: list[EventPattern]) -> EventPattern:
    return events[0] if len(events) == 1 else EventJoin(tuple(events))


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
    """The variables an event pattern may bind (its BINDs and VALUES included)."""
    if isinstance(pattern, GraphPatternEvent):
        return pattern_vars(pattern.pattern)
    own: frozenset[str] = frozenset()
    if isinstance(pattern, EventBind):
        own = frozenset((pattern.var.name,))
    elif isinstance(pattern, EventValues):
        own = frozenset(v.name for v in pattern.data.vars)
    return own.union(*(_event_vars(child) for child in event_children(pattern)))


def _static_vars(statics: list[Bind | InlineData]) -> frozenset[str]:
    """The variables VALUES and BINDs bind, for a BIND written after them before any pattern."""
    return frozenset(
        name
        for static in statics
        for name in ([static.var.name] if isinstance(static, Bind) else [v.name for v in static.vars])
    )


def _graph_vars(block: GraphGraphPattern) -> frozenset[str]:
    own = frozenset((block.name.name,)) if isinstance(block.name, Var) else frozenset()
    return own | pattern_vars(block.pattern)


def _uses_time(expr: Expr) -> bool:
    if isinstance(expr, FunctionCall):
        return (isinstance(expr.name, IRI) and expr.name.value in TIME_FUNCTIONS) or any(
            _uses_time(a) for a in expr.args
        )
    return any(_uses_time(getattr(expr, n)) for n in ("left", "right", "operand") if hasattr(expr, n))


def _trailing_values(where: GroupPattern) -> tuple[GroupPattern, tuple[InlineData, ...]]:
    """`WHERE { P } VALUES ...` (the paper's braceless WHERE reads the VALUES into the WHERE group,
    beside { P }): P is the top level and the VALUES joins its solutions, as a trailing VALUES
    clause does (the same join: the group holds no FILTER that could see the data)."""
    first, rest = where.elements[:1], where.elements[1:]
    data = tuple(e for e in rest if isinstance(e, InlineData))
    if first and isinstance(first[0], GroupPattern) and rest and len(data) == len(rest):
        return _top_level(first[0]), data
    return where, ()


def _top_level(where: GroupPattern) -> GroupPattern:
    """`WHERE { P }` is `WHERE P`: P is the top level."""
    while len(where.elements) == 1 and isinstance(where.elements[0], GroupPattern):
        where = where.elements[0]
    return where


_OPERATORS = frozenset({"UNION", "SEQ", "EQUALS", "OPTIONALSEQ", "EQUALSOPTIONAL"})


def _misplaced_operator(word: str) -> str | None:
    """A binary operator followed by a group (`SEQ {`) where the grammar cannot take it: the
    pattern before it is not a group of the same group (SPAseq and CQELS write `SEQ (`)."""
    operator = word.upper()
    if operator not in _OPERATORS:
        return None
    return (
        f"{operator} joins two group graph patterns, {{ P1 }} {operator} {{ P2 }}: "
        "the pattern before it must be a group in braces in the same group as the one after it (a "
        "sub-SELECT without the WHERE keyword takes a single group: write WHERE { P1 } "
        f"{operator} {{ P2 }})"
    )


DIALECT = DialectSpec(
    EPSPARQL,
    "epsparql",
    EpsparqlTransformer,
    not_event_syntax=frozenset(
        {
            # the paper's draft projection, `?sum / ?count AS ?average`: SPARQL's (expr AS ?v), loosely
            "draft_projection",
            "select_var",
            # WHERE without braces: the contents of a group, which means the same as the group
            "where_body",
        }
    ),
    reads_plain_sparql=True,  # every SPARQL 1.1 query is an EP-SPARQL query (WWW 2011 §4.2)
    misplaced_hint=_misplaced_operator,
)
