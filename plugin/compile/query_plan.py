"""EventQuery -> QueryPlan: the GPM queries, the automaton, the partition key."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce

from rsep.plugin.algebra.analysis import pattern_vars
from rsep.plugin.algebra.events import (
    Conjunction,
    ConsumptionPolicy,
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
    KleenePlus,
    MatchElement,
    OptionalSequence,
    SelectForm,
    Sequence,
    event_children,
)
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    BinaryOp,
    BNode,
    Filter,
    GraphGraphPattern,
    GroupPattern,
    InlineData,
    Literal,
    Node,
    Var,
)
from rsep.plugin.algebra.terms import term_to_nt
from rsep.plugin.compile.entailment import entail_pattern
from rsep.plugin.compile.gpm_plan import GpmPlan, plan_gpm
from rsep.plugin.compile.interval_patterns import compile_interval_automaton, duration_bound
from rsep.plugin.compile.lazy import lazy_needs
from rsep.plugin.compile.nfa_compiler import CompileError, compile_automaton
from rsep.plugin.expr import UnsupportedExpression, compile_expr, compile_filter
from rsep.plugin.nfa.automaton import Automaton, ResidualFilter
from rsep.plugin.nfa.interval_checks import timed
from rsep.plugin.nfa.runtime import Runtime


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """Everything the runtimes need, free of parser and engine objects (it
    pickles to Spark executors)."""

    query: EventQuery
    gpms: tuple[GpmPlan, ...]
    automaton: Automaton
    key: tuple[str, ...]
    streams: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def output_vars(self) -> tuple[str, ...]:
        """Projected variable names, in SELECT order (all bound ones for `*`)."""
        form = self.query.form
        if isinstance(form, SelectForm) and form.projection is not None:
            return tuple(p.var.name for p in form.projection)
        if self.query.solution_projection is not None:  # `SELECT *` over a sub-SELECT
            return tuple(p.var.name for p in self.query.solution_projection)
        names = sorted(set().union(*(g.variables for g in self.gpms), _extension_vars(self.query)))
        return tuple(n for n in names if not n.startswith("__"))


def _extension_vars(query: EventQuery) -> frozenset[str]:
    """The variables the query's BINDs and VALUES bind (`SELECT *` projects them too)."""
    found: set[str] = {v.name for e in query.where.elements if isinstance(e, InlineData) for v in e.vars}
    pending = [e.pattern for e in query.where.elements if isinstance(e, MatchElement)]
    while pending:
        node = pending.pop()
        if isinstance(node, EventBind):
            found.add(node.var.name)
        elif isinstance(node, EventValues):
            found.update(v.name for v in node.data.vars)
        pending.extend(event_children(node))
    return frozenset(found)


def compile_query(query: EventQuery) -> QueryPlan:
    pattern = event_pattern_of(query)
    if query.entailment is not None:
        pattern = entail_pattern(pattern, query.entailment)
    gpms = collect_gpms(pattern)
    outer = frozenset().union(*(pattern_vars(g.pattern) for g in gpms))
    plans = tuple(_plan_gpm(i, g, outer) for i, g in enumerate(gpms))
    key = _partition_key(query, plans)
    index = {g.name: i for i, g in enumerate(gpms)}
    residuals = tuple(p.residuals for p in plans)
    within = query.within.seconds if query.within is not None else None
    automaton: Automaton
    if query.dialect.interval_semantics:
        bound = duration_bound(pattern)
        within = bound if within is None or (bound is not None and bound < within) else within
        automaton = compile_interval_automaton(
            pattern,
            index,
            residuals,
            within=within,
            policy=query.consumption,
            scopes=group_variables(query),
            outer=len(_joined_last(query)),
        )
        automaton = replace(automaton, inputs=tuple(_input_template(g) for g in gpms))
    else:
        variables = {g.name: p.variables for g, p in zip(gpms, plans, strict=True)}
        certain = {g.name: p.certain for g, p in zip(gpms, plans, strict=True)}
        automaton = compile_automaton(
            pattern,
            index,
            lambda g: variables[g.name],
            residuals,
            key=frozenset(key),
            within=within,
            gpm_certain=lambda g: certain[g.name],
        )
        automaton = replace(automaton, policy=query.consumption)
        needs = lazy_needs(automaton)
        plans = tuple(replace(p, needs=needs.get(p.index)) for p in plans)
    _check_filters(automaton)
    _check_projection(query)
    return QueryPlan(
        query=query,
        gpms=plans,
        automaton=automaton,
        key=key,
        streams=tuple(s.iri for s in query.streams),
        warnings=_warnings(query, pattern, plans, automaton),
    )


def _plan_gpm(index: int, gpm: GraphPatternEvent, outer: frozenset[str]) -> GpmPlan:
    """`plan_gpm`, its errors positioned at the GPM's definition when they have no position."""
    try:
        plan = plan_gpm(index, gpm, outer)
        for residual in plan.residuals:
            _check_residual(gpm, residual)
        return plan
    except CompileError as error:
        raise error.at(gpm.position) from None


def _check_residual(gpm: GraphPatternEvent, residual: ResidualFilter) -> None:
    """A FILTER over other GPMs' variables is evaluated by rsep's own evaluator, in the NFA:
    what it cannot evaluate is refused here rather than when the first candidate reaches it."""
    try:
        compile_filter(residual.expr)
    except UnsupportedExpression as error:
        raise CompileError(
            f"GPM {gpm.name}: {error}, in a FILTER that reads variables of other GPMs (rsep evaluates "
            "those itself, with SPARQL 1.1's functions and the XSD casts)",
            error.position,
        ) from None


def _check_filters(automaton: Automaton) -> None:
    """The runtime compiles its filters (interval conditions too) when it is built: build one."""
    try:
        Runtime(automaton)
    except UnsupportedExpression as error:
        raise CompileError(f"{error}, in a FILTER or BIND the NFA evaluates", error.position) from None


def _check_projection(query: EventQuery) -> None:
    """SELECT's `(expr AS ?v)` (and a sub-SELECT's) are evaluated by rsep when a match is
    projected, the time functions over the match's interval: what the evaluator cannot evaluate
    is refused here, at the call, rather than when the first match is projected."""
    form = query.form
    items = [
        *(form.projection or () if isinstance(form, SelectForm) else ()),
        *(query.solution_projection or ()),
    ]
    for item in items:
        if item.expr is None:
            continue
        try:
            compile_expr(timed(item.expr))
        except UnsupportedExpression as error:
            raise CompileError(
                f"{error}, in the SELECT expression bound to ?{item.var.name}", error.position
            ) from None


def collect_gpms(pattern: EventPattern) -> list[GraphPatternEvent]:
    """GPMs in order of first appearance; one name, one definition."""
    found: dict[str, GraphPatternEvent] = {}
    pending = [pattern]
    while pending:
        node = pending.pop()
        if isinstance(node, GraphPatternEvent):
            if node.name in found and found[node.name] != node:
                raise CompileError(f"GPM {node.name} is defined twice")
            found.setdefault(node.name, node)
        pending.extend(reversed(event_children(node)))
    return list(found.values())


def event_pattern_of(query: EventQuery) -> EventPattern:
    """The query's event pattern; for interval dialects the WHERE may also
    hold background GRAPH blocks and FILTERs that read them (RSEP-QL's MATCH
    joined with graph patterns), folded in by `attach_background`."""
    matches = [e for e in query.where.elements if isinstance(e, MatchElement)]
    others = [e for e in query.where.elements if not isinstance(e, MatchElement)]
    if len(matches) != 1 or (others and not query.dialect.interval_semantics):
        raise CompileError(
            "this query mixes event patterns with other graph patterns; "
            "the NFA compiler handles one top-level event pattern"
        )
    return attach_background(matches[0].pattern, others) if others else matches[0].pattern


def _joined_last(query: EventQuery) -> list[Node]:
    """The FILTERs (one node) and VALUES `attach_background` puts above the event pattern: they
    join the whole pattern, the knowledge base included, and see its variables."""
    others = [e for e in query.where.elements if not isinstance(e, MatchElement)]
    values: list[Node] = [e for e in others if isinstance(e, InlineData)]
    return [f for f in others if isinstance(f, Filter)][:1] + values


def group_variables(query: EventQuery) -> dict[str, frozenset[str]]:
    """Per GPM, the variables of its own group, before `attach_background` joins the knowledge
    base into one: what the checks of the groups nested in the top level see (SPARQL §18.2.2: a
    group's FILTER and BIND read its own group's solution), whatever the leaf the join went to."""
    matches = [e.pattern for e in query.where.elements if isinstance(e, MatchElement)]
    return {gpm.name: pattern_vars(gpm.pattern) for match in matches for gpm in collect_gpms(match)}


def attach_background(pattern: EventPattern, others: list[Node]) -> EventPattern:
    """Join top-level background blocks into a mandatory leaf of each
    alternative (a join commutes, so where does not matter, and the GPM stage
    then evaluates them once per knowledge-base version), check the
    FILTERs that read them when the whole pattern has matched, and then join
    a trailing VALUES clause (SPARQL §18.2.4.3: after the WHERE group's FILTERs)."""
    blocks = tuple(e for e in others if isinstance(e, GraphGraphPattern))
    filters = [e.expr for e in others if isinstance(e, Filter)]
    values = [e for e in others if isinstance(e, InlineData)]
    unknown = [type(e).__name__ for e in others if not isinstance(e, (GraphGraphPattern, Filter, InlineData))]
    if unknown:
        raise CompileError(f"{', '.join(unknown)} cannot be combined with an event pattern yet")
    if blocks:
        pattern = _with_background(pattern, blocks)
    if filters:
        pattern = EventFilter(pattern, reduce(lambda a, b: BinaryOp("&&", a, b), filters))
    for data in values:
        pattern = EventValues(pattern, data)
    return pattern


def _with_background(pattern: EventPattern, blocks: tuple[GraphGraphPattern, ...]) -> EventPattern:
    if isinstance(pattern, GraphPatternEvent):
        return replace(pattern, pattern=GroupPattern((*pattern.pattern.elements, *blocks)))
    if isinstance(pattern, Disjunction):
        return replace(pattern, operands=tuple(_with_background(op, blocks) for op in pattern.operands))
    if isinstance(pattern, Sequence):
        return replace(
            pattern, elements=(_with_background(pattern.elements[0], blocks), *pattern.elements[1:])
        )
    if isinstance(pattern, (EventJoin, Conjunction)):
        return replace(
            pattern, operands=(_with_background(pattern.operands[0], blocks), *pattern.operands[1:])
        )
    if isinstance(pattern, (Equals, EqualsOptional, EventLeftJoin)):
        return replace(pattern, left=_with_background(pattern.left, blocks))
    if isinstance(pattern, OptionalSequence):
        return replace(pattern, right=_with_background(pattern.right, blocks))
    if isinstance(pattern, (EventFilter, KleenePlus, EventBind, EventValues)):
        return replace(pattern, element=_with_background(pattern.element, blocks))
    raise CompileError(f"no mandatory part of {type(pattern).__name__} to join the background knowledge with")


def _input_template(gpm: GraphPatternEvent) -> tuple[str, str, str] | None:
    """The triple pattern a one-triple GPM matches (its consumable input)."""
    bgps = [e for e in gpm.pattern.elements if isinstance(e, BGP)]
    if len(bgps) != 1 or len(bgps[0].triples) != 1:
        return None
    triple = bgps[0].triples[0]
    out: list[str] = []
    for term in (triple.subject, triple.predicate, triple.object):
        if isinstance(term, Var):
            out.append(f"?{term.name}")
        elif isinstance(term, (IRI, Literal, BNode)):
            out.append(term_to_nt(term))
        else:
            return None  # a property path: the whole event is the input
    return out[0], out[1], out[2]


def _partition_key(query: EventQuery, plans: tuple[GpmPlan, ...]) -> tuple[str, ...]:
    """Variables every GPM binds in every solution: runs of different values
    never interact, so the NFA can run per value (one partition when none).
    Under a consuming policy they do interact (an input used by a match in one
    partition is used up for all), so there is one partition."""
    positions = dict(zip(query.partition_by, query.partition_positions, strict=False))
    if query.consumption is not ConsumptionPolicy.UNRESTRICTED:
        if query.partition_by:
            raise CompileError(
                f"PARTITION BY cannot be combined with the {query.consumption.value} policy",
                positions.get(query.partition_by[0]),
            )
        return ()
    shared = frozenset.intersection(*(p.certain for p in plans))
    if not query.partition_by:
        return tuple(sorted(shared))
    requested = tuple(v.name for v in query.partition_by)
    loose = [v for v in query.partition_by if v.name not in shared]
    if loose:
        candidates = ", ".join("?" + n for n in sorted(shared)) or "none"
        raise CompileError(
            f"PARTITION BY {', '.join('?' + v.name for v in loose)}: a partition variable must be bound "
            f"by every GPM in every solution (candidates: {candidates})",
            positions.get(loose[0]),
        )
    return requested


def _warnings(
    query: EventQuery, pattern: EventPattern, plans: tuple[GpmPlan, ...], automaton: Automaton
) -> tuple[str, ...]:
    notes = _unbound_filter_notes(plans, None if query.dialect.interval_semantics else _steps(pattern))
    if automaton.within is None:
        limit = "a getDURATION() bound" if query.dialect.interval_semantics else "a WITHIN clause"
        notes.append(f"without {limit}, partial matches never expire: memory grows with the stream")
    return tuple(notes)


def _unbound_filter_notes(plans: tuple[GpmPlan, ...], steps: dict[str, int] | None) -> list[str]:
    """FILTERs that read a variable no GPM binds, or (given the GPMs' `steps`) one that only GPMs
    matched later bind: it is unbound when the filter is evaluated, whatever the filter makes of
    that (an error for a comparison, false for BOUND, the fallback for COALESCE)."""
    notes = []
    for plan in plans:
        for residual in plan.residuals:
            foreign = residual.variables - plan.variables
            binders = {n: [p.name for p in plans if n in p.variables] for n in foreign}
            unbound = sorted(n for n, names in binders.items() if not names)
            if unbound:
                notes.append(
                    f"GPM {plan.name}: FILTER reads {_names(unbound)}, which no GPM binds: "
                    "the variable is unbound when the filter is evaluated"
                )
            later = sorted(n for n, names in binders.items() if names and _after(names, plan.name, steps))
            if later:
                gpms = ", ".join(sorted({b for n in later for b in binders[n]}))
                notes.append(
                    f"GPM {plan.name}: FILTER reads {_names(later)}, which only a later GPM binds "
                    f"({gpms}): the variable is unbound when the filter is evaluated (a GPM's FILTER "
                    "sees the variables of its own and earlier GPMs; move it to the later GPM)"
                )
    return notes


def _after(names: list[str], name: str, steps: dict[str, int] | None) -> bool:
    """Are the GPMs `names` all matched after GPM `name`? (None: no order is known.)"""
    return steps is not None and all(steps[n] > steps[name] for n in names)


def _names(names: list[str]) -> str:
    return ", ".join("?" + n for n in names)


def _steps(pattern: EventPattern) -> dict[str, int]:
    """Each GPM's earliest step: the elements of a sequence are successive steps; the operands of
    any other operator share one (a conjunction joins its operands before their filters run)."""
    steps: dict[str, int] = {}

    def visit(node: EventPattern, step: int) -> int:
        """Number `node`'s GPMs from `step` on; the step after them."""
        if isinstance(node, GraphPatternEvent):
            steps[node.name] = min(steps.get(node.name, step), step)
            return step + 1
        if isinstance(node, Sequence):
            for element in node.elements:
                step = visit(element, step)
            return step
        return max((visit(child, step) for child in event_children(node)), default=step)

    visit(pattern, 0)
    return steps
