"""Writing match graphs into the endpoint's Oxigraph store (a `MatchSink`).

A batch's new graphs go in with ONE `Store.extend` call, which Oxigraph runs
as a single transaction: readers see all of a batch's matches or none, and a
crash cannot leave half a graph. A graph that was already written is skipped,
so writing a match twice (a batch replayed after a crash) creates nothing.

"Already written" is read from the graph's metadata (`G a rsep:Match` in
`urn:rsep:matches`, written in the same transaction as its content), not from
the graph's quads: a CONSTRUCT match whose template instantiates to nothing
has none. Such a graph is still created as an empty named graph.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TypeVar

import pyoxigraph as ox

from rsep.plugin.service.matches import MATCHES_GRAPH, PROV, RDF_TYPE, RSEP, ResultGraph
from rsep.plugin.store.gpm import KnowledgeBase

_MATCHES = ox.NamedNode(MATCHES_GRAPH)
_GENERATED_BY = ox.NamedNode(PROV + "wasGeneratedBy")
_TYPE = ox.NamedNode(RDF_TYPE)
_MATCH = ox.NamedNode(RSEP + "Match")
G = TypeVar("G", bound=ResultGraph)


class OxigraphMatchSink:
    """Match graphs into the knowledge base's store (it is the endpoint's one
    store), moving the knowledge base's version on so that cached background
    answers that may read match graphs are refreshed."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._lock = threading.Lock()

    def write(self, graphs: Sequence[G]) -> list[G]:
        store = self.kb.store
        with self._lock:
            fresh: dict[str, G] = {}
            for graph in graphs:
                if graph.iri not in fresh and not self.exists(graph.iri):
                    fresh[graph.iri] = graph
            if not fresh:
                return []
            quads = list(ox.parse("".join(graph.nquads() for graph in fresh.values()), ox.RdfFormat.N_QUADS))
            named = {quad.graph_name for quad in quads}
            for name in (ox.NamedNode(iri) for iri in fresh):
                if name not in named:
                    store.add_graph(name)  # an empty graph, before the metadata that makes it "written"
            store.extend(quads)
        self.kb.touch(default_graph=False)
        return list(fresh.values())

    def exists(self, iri: str) -> bool:
        """Whether the match graph `iri` was written: its metadata says so."""
        return any(self.kb.store.quads_for_pattern(ox.NamedNode(iri), _TYPE, _MATCH, _MATCHES))

    def count(self, query_iri: str) -> int:
        """How many match graphs a query has generated."""
        pattern = self.kb.store.quads_for_pattern(None, _GENERATED_BY, ox.NamedNode(query_iri), _MATCHES)
        return sum(1 for _ in pattern)

    def flush(self) -> None:
        self.kb.store.flush()

    def purge(self, query_iri: str) -> int:
        """Remove a query's match graphs and their metadata (graph by graph:
        an interrupted purge can be run again)."""
        store = self.kb.store
        with self._lock:
            pattern = store.quads_for_pattern(None, _GENERATED_BY, ox.NamedNode(query_iri), _MATCHES)
            names = [quad.subject for quad in pattern]
            for name in names:
                assert isinstance(name, ox.NamedNode)
                store.remove_graph(name)
                for quad in list(store.quads_for_pattern(name, None, None, _MATCHES)):
                    store.remove(quad)
        if names:
            self.kb.touch(default_graph=False)
        return len(names)
