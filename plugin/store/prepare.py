"""Oxigraph checks a query plan's SPARQL at compile time.

Oxigraph prepares a query when it first runs it, so a GPM that calls a function it does not know
(`FILTER(:foo(?b))`) would fail only when the first batch of events reaches it: after `rsep run`
read every file, or after the endpoint accepted the query. Running each query the GPM stage will
run once over an empty store finds those errors while there is still a query position to report.

A window query (C-SPARQL, CQELS) is checked the same way: CQELS-CEP's event clauses are query plans
whose GPMs the NFA runs per event, and the query Oxigraph runs at each evaluation is run once over
empty windows and an empty knowledge base, with the same dataset and timestamp() functions.
"""

from __future__ import annotations

import pyoxigraph as ox

from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.remote import check_remote
from rsep.plugin.store.windows import OxigraphWindows, Results
from rsep.plugin.windows.cep import Solution
from rsep.plugin.windows.window_plan import WindowPlan

_REFUSALS = (SyntaxError, RuntimeError, ValueError)
"""What pyoxigraph raises for a query it cannot prepare or evaluate."""


def check_plan(plan: QueryPlan) -> None:
    """Raise a CompileError, at the GPM's definition, for a GPM query Oxigraph refuses."""
    store = ox.Store()
    for gpm in plan.gpms:
        for query in _queries(gpm):
            try:
                check_remote(query)
                _drain(store.query(query))
            except _REFUSALS as error:
                raise CompileError(f"GPM {gpm.name}: {_reason(error, 'GPM')}", gpm.position) from None


def check_window_plan(plan: WindowPlan) -> None:
    """Raise a CompileError for an event clause's GPM query Oxigraph refuses (at the element's
    position), or for the window query itself (at the query form: SELECT, CONSTRUCT or ASK)."""
    for clause in plan.cep.clauses if plan.cep is not None else ():
        check_plan(clause)
    windows = OxigraphWindows(plan, KnowledgeBase())
    # one solution of the event clauses, all UNDEF: over an empty VALUES block Oxigraph would not
    # even prepare the rest of the query
    found = [Solution((), 0, 0)] if plan.cep is not None else []
    try:
        _drain(windows.results([() for _ in plan.windows], found))
    except _REFUSALS as error:
        reason = _reason(error, "window query")
        raise CompileError(f"the window query: {reason}", plan.query.position) from None


def _queries(gpm: GpmPlan) -> list[str]:
    """The event query, the background query and the lookups: every query the GPM stage runs."""
    found = [gpm.event_query, *(lookup.query for lookup in gpm.lookups)]
    return found if gpm.kb_query is None else [*found, gpm.kb_query]


def _drain(results: Results) -> None:
    """Evaluate the query to the end: Oxigraph reports some refusals only when iterated."""
    if isinstance(results, ox.QueryBoolean):
        bool(results)
        return
    for _ in results:
        pass


def _reason(error: Exception, what: str) -> str:
    """Oxigraph's message; a syntax error is in SPARQL rsep wrote, not in the query text."""
    message = " ".join(str(error).split())
    if isinstance(error, SyntaxError):
        return f"the SPARQL rsep generated for this {what} does not parse ({message}); please report it"
    return message[:1].lower() + message[1:]
