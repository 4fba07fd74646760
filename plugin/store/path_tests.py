"""Nested paths' node tests materialised in an evaluation store (rsep.plugin.compile.paths).

Each site's scratch graph gets a copy of the graph its patterns read, then each test's relation,
`(node, <relation>, node)` for every node the test's SELECT returns, inner tests first (an outer
test's query reads the inner relations). A site over static data (the knowledge base, loaded
once per run) is filled once; a site over a window graph is refilled at every evaluation, after
the windows are loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyoxigraph as ox

from rsep.plugin.compile.paths import NestedSite

Graph = ox.NamedNode | ox.BlankNode | ox.DefaultGraph


class ScratchGraphs:
    """The scratch graphs of a plan's nested-path sites in `store`. `default_graph` is the query's
    default graph (the source of sites outside GRAPH blocks); a site is *dynamic* when its source
    is one of `window_graphs` (or the default graph holds one)."""

    def __init__(
        self,
        store: ox.Store,
        sites: Sequence[NestedSite],
        default_graph: Sequence[Graph],
        window_graphs: Iterable[str],
    ) -> None:
        self.store = store
        self.sites = sites
        self.default_graph = list(default_graph)
        windows = set(window_graphs)
        default_is_dynamic = any(isinstance(g, ox.NamedNode) and g.value in windows for g in default_graph)
        self.dynamic = [s for s in sites if (s.source in windows if s.source else default_is_dynamic)]
        for site in sites:
            if site not in self.dynamic:
                self._fill(site)

    @property
    def graphs(self) -> list[ox.NamedNode]:
        """The scratch graphs, which the query's dataset must name (it reads them with GRAPH)."""
        return [ox.NamedNode(site.graph) for site in self.sites]

    def refresh(self) -> None:
        """Refill the sites over window graphs (call after loading the windows)."""
        for site in self.dynamic:
            self._fill(site)

    def _fill(self, site: NestedSite) -> None:
        graph = ox.NamedNode(site.graph)
        if self.store.contains_named_graph(graph):
            self.store.remove_graph(graph)
        sources: list[Graph] = [ox.NamedNode(site.source)] if site.source else self.default_graph
        for source in sources:
            quads = list(self.store.quads_for_pattern(None, None, None, source))
            self.store.extend(ox.Quad(q.subject, q.predicate, q.object, graph) for q in quads)
        for test in site.tests:
            relation = ox.NamedNode(test.relation)
            results = self.store.query(test.query)
            assert isinstance(results, ox.QuerySolutions)
            nodes = [solution["node"] for solution in results]
            self.store.extend(
                ox.Quad(node, relation, node, graph)
                for node in nodes
                if isinstance(node, (ox.NamedNode, ox.BlankNode))  # literals are never subjects
            )
