"""Oxigraph checks a query plan's SPARQL at compile time.

Oxigraph prepares a query when it first runs it, so a GPM that calls a function it does not know
(`FILTER(:foo(?b))`) would fail only when the first batch of events reaches it: after `rsep run`
read every file, or after the endpoint accepted the query. Running each query the GPM stage will
run once over an empty store finds those errors while there is still a query position to report.
"""

from __future__ import annotations

import pyoxigraph as ox

from rsep.plugin.compile.automaton import CompileError
from rsep.plugin.compile.gpm import GpmPlan
from rsep.plugin.compile.plan import QueryPlan


def check_plan(plan: QueryPlan) -> None:
    """Raise a CompileError, at the GPM's definition, for a GPM query Oxigraph refuses."""
    store = ox.Store()
    for gpm in plan.gpms:
        for query in _queries(gpm):
            try:
                for _ in store.query(query):  # type: ignore[union-attr]
                    pass
            except (SyntaxError, RuntimeError, ValueError) as error:
                raise CompileError(f"GPM {gpm.name}: {_reason(error)}", gpm.position) from None


def _queries(gpm: GpmPlan) -> list[str]:
    """The event query, the background query and the lookups: every query the GPM stage runs."""
    found = [gpm.event_query, *(lookup.query for lookup in gpm.lookups)]
    return found if gpm.kb_query is None else [*found, gpm.kb_query]


def _reason(error: Exception) -> str:
    """Oxigraph's message; a syntax error is in SPARQL rsep wrote, not in the query text."""
    message = " ".join(str(error).split())
    if isinstance(error, SyntaxError):
        return f"the SPARQL rsep generated for this GPM does not parse ({message}); please report it"
    return message[:1].lower() + message[1:]
