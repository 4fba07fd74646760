"""Windows over RDF streams queried with SPARQL: the C-SPARQL and CQELS runtime.

RSEP-QL's window functions (`functions`), the report policies' evaluation
times (`schedule`), the plan that turns a query into the SPARQL Oxigraph
runs at each evaluation (`plan`, `timestamp`), CQELS-CEP's event clauses on
the NFA (`cep`), the replay loop (`runtime`) and its output (`output`). Pure: the Oxigraph side is
rsep.plugin.store.windows. docs/semantics.md ("Windows: C-SPARQL and CQELS")
records the semantic choices.
"""

from rsep.plugin.windows.window_plan import WindowPlan, WindowPlanError, is_window_query, plan_windows

__all__ = ["WindowPlan", "WindowPlanError", "is_window_query", "plan_windows"]
