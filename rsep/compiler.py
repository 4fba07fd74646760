"""Query text -> plan: the one compile pipeline.

Every place a continuous query is compiled goes through `compile_text` (`rsep run` and its
rules, `POST /queries` and the engines that resume registered queries, the benchmarks):

1. **parse**: the text, in its dialect or whichever dialect claims it (`rsep.grammar`), to one
   `EventQuery` of the algebra, relative IRIs resolved against `base`;
2. **options**: the consumption policy and entailment regime the caller gives replace the
   query's own (they are options, not syntax), and a match limit caps what one timestamp of one
   partition key may report where the shared buffer enumerates runs (`Automaton.match_limit`);
3. **plan**: an event pattern to its automaton (`QueryPlan`), a window query (C-SPARQL, CQELS)
   to its `WindowPlan`; a policy applies to event patterns only;
4. **check**: Oxigraph parses every SPARQL query the plan will run, so a query is refused when it
   is compiled, not at its first event.

Errors are `InvalidInput`s located in `source` (`query`, a file name): a syntax error at its line
and column, a compile error where the construct at fault is written.

This module sits above `rsep.grammar` and `rsep.plugin` (it needs both) and below
`rsep.endpoint`, which, like `bench/`, imports it.
"""

from __future__ import annotations

from dataclasses import replace

from rsep.grammar import parse_event_query
from rsep.plugin import (
    CompileError,
    ConsumptionPolicy,
    EventQuery,
    QueryPlan,
    WindowPlan,
    check_plan,
    check_window_plan,
    compile_query,
    is_window_query,
    plan_windows,
)

Plan = QueryPlan | WindowPlan
"""What a continuous query compiles to."""


def compile_text(
    text: str,
    *,
    dialect: str | None = None,
    policy: ConsumptionPolicy | str | None = None,
    entailment: str | None = None,
    base: str | None = None,
    match_limit: int | None = None,
    source: str = "query",
) -> Plan:
    """Parse, set the options, plan and check a continuous query (see the module docstring)."""
    query = parse(text, dialect=dialect, base=base, source=source)
    found = plan(with_options(query, policy=policy, entailment=entailment), source=source)
    return limited(found, match_limit)


def parse(
    text: str, *, dialect: str | None = None, base: str | None = None, source: str = "query"
) -> EventQuery:
    """Step 1: the query's algebra (e.g. to tell a window query from an event pattern)."""
    return parse_event_query(text, source=source, dialect=dialect, base_iri=base)


def with_options(
    query: EventQuery, *, policy: ConsumptionPolicy | str | None = None, entailment: str | None = None
) -> EventQuery:
    """Step 2: the caller's consumption policy (event patterns only) and entailment regime."""
    if entailment is not None:
        query = replace(query, entailment=entailment)
    chosen = None if policy is None else ConsumptionPolicy(policy)
    if is_window_query(query):
        if chosen not in (None, ConsumptionPolicy.UNRESTRICTED):
            raise CompileError("policy applies to event patterns, not to window queries (C-SPARQL, CQELS)")
    elif chosen is not None and chosen is not query.consumption:
        query = replace(query, consumption=chosen)
    return query


def limited(found: Plan, match_limit: int | None) -> Plan:
    """The plan with the caller's match limit (event patterns; None keeps the default)."""
    if match_limit is None:
        return found
    if match_limit < 1:
        raise CompileError(f"the match limit must be a positive number of matches, got {match_limit}")
    if not isinstance(found, QueryPlan):
        raise CompileError("a match limit applies to event patterns, not to window queries (C-SPARQL, CQELS)")
    return replace(found, automaton=replace(found.automaton, match_limit=match_limit))


def plan(query: EventQuery, *, source: str = "query") -> Plan:
    """Steps 3 and 4: the query's plan, checked by Oxigraph; errors located in `source`."""
    try:
        if is_window_query(query):
            window_plan = plan_windows(query)
            check_window_plan(window_plan)
            return window_plan
        query_plan = compile_query(query)
        check_plan(query_plan)
        return query_plan
    except CompileError as error:
        raise error.located(source) from None
    except RecursionError:  # a pattern within the parser's bounds, past the planner's recursion
        raise CompileError(
            "too large to compile: the event pattern nests or chains too many operators "
            "(split it into smaller queries)"
        ).located(source) from None
