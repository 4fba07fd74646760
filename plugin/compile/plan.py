"""EventQuery -> QueryPlan: the GPM queries, the automaton, the partition key."""

from __future__ import annotations

from dataclasses import dataclass

from rsep.plugin.algebra.events import (
    Conjunction,
    ConsumptionPolicy,
    Disjunction,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    KleenePlus,
    Negation,
    OptionalEvent,
    SelectForm,
    Sequence,
)
from rsep.plugin.compile.automaton import CompileError, compile_automaton
from rsep.plugin.compile.gpm import GpmPlan, plan_gpm
from rsep.plugin.nfa.automaton import Automaton


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
        names = sorted(set().union(*(g.variables for g in self.gpms)))
        return tuple(n for n in names if not n.startswith("__"))


def compile_query(query: EventQuery) -> QueryPlan:
    pattern = query.event_pattern
    if pattern is None:
        raise CompileError(
            "this query mixes event patterns with other graph patterns; "
            "the NFA compiler handles one top-level event pattern"
        )
    if query.consumption is not ConsumptionPolicy.UNRESTRICTED:
        raise CompileError(
            f"the {query.consumption.value} consumption policy is not implemented by the NFA runtime yet; "
            "use unrestricted"
        )
    gpms = collect_gpms(pattern)
    plans = tuple(plan_gpm(i, g) for i, g in enumerate(gpms))
    key = _partition_key(query, plans)
    index = {g.name: i for i, g in enumerate(gpms)}
    variables = {g.name: p.variables for g, p in zip(gpms, plans, strict=True)}
    automaton = compile_automaton(
        pattern,
        index,
        lambda g: variables[g.name],
        tuple(p.residuals for p in plans),
        key=frozenset(key),
        within=query.within.seconds if query.within is not None else None,
    )
    return QueryPlan(
        query=query,
        gpms=plans,
        automaton=automaton,
        key=key,
        streams=tuple(s.iri for s in query.streams),
        warnings=_warnings(query, plans),
    )


def collect_gpms(pattern: EventPattern) -> list[GraphPatternEvent]:
    """GPMs in order of first appearance; one name, one definition."""
    found: dict[str, GraphPatternEvent] = {}

    def walk(node: EventPattern) -> None:
        if isinstance(node, GraphPatternEvent):
            if node.name in found and found[node.name] != node:
                raise CompileError(f"GPM {node.name} is defined twice")
            found.setdefault(node.name, node)
        elif isinstance(node, Sequence):
            for element in node.elements:
                walk(element)
        elif isinstance(node, (Conjunction, Disjunction)):
            for operand in node.operands:
                walk(operand)
        elif isinstance(node, (KleenePlus, Negation, OptionalEvent)):
            walk(node.element)
        else:
            raise CompileError(f"{type(node).__name__} is not supported by the NFA compiler yet")

    walk(pattern)
    return list(found.values())


def _partition_key(query: EventQuery, plans: tuple[GpmPlan, ...]) -> tuple[str, ...]:
    """Variables every GPM binds in every solution: runs of different values
    never interact, so the NFA can run per value (one partition when none)."""
    shared = frozenset.intersection(*(p.certain for p in plans))
    if not query.partition_by:
        return tuple(sorted(shared))
    requested = tuple(v.name for v in query.partition_by)
    loose = [f"?{n}" for n in requested if n not in shared]
    if loose:
        raise CompileError(
            f"PARTITION BY {', '.join(loose)}: a partition variable must be bound by every GPM "
            f"in every solution (candidates: {', '.join('?' + n for n in sorted(shared)) or 'none'})"
        )
    return requested


def _warnings(query: EventQuery, plans: tuple[GpmPlan, ...]) -> tuple[str, ...]:
    bound = frozenset().union(*(p.variables for p in plans))
    notes = []
    for plan in plans:
        for residual in plan.residuals:
            missing = sorted(residual.variables - bound)
            if missing:
                names = ", ".join("?" + n for n in missing)
                notes.append(
                    f"GPM {plan.name}: FILTER reads {names}, which no GPM binds; "
                    "under SPARQL semantics it is unbound, so the comparison is an error and the filter fails"
                )
    if query.within is None:
        notes.append("no WITHIN clause: partial matches never expire, memory grows with the stream")
    return tuple(notes)
