"""Writing match graphs into the endpoint's Oxigraph store (a `MatchSink`).

A batch's new graphs go in with ONE `Store.extend` call, which Oxigraph runs
as a single transaction: readers see all of a batch's matches or none, and a
crash cannot leave half a graph. A graph that was already written is skipped,
so writing a match twice (a batch replayed after a crash) creates nothing.

"Already written" is read from the graph's metadata (`G a rsep:Match` in
`urn:rsep:matches`, written in the same transaction as its content), not from
the graph's quads: a CONSTRUCT match whose template instantiates to nothing
has none. Such a graph is still created as an empty named graph, which
`Store.extend` cannot do (it adds quads) and pyoxigraph offers no other
transaction for: a batch's empty graphs and their metadata go in one SPARQL
update (`CREATE GRAPH`s and an `INSERT DATA`, one transaction) just before the
batch's `extend`. Readers never see a match graph without its metadata; a
crash between the two leaves the empty graphs written and the rest to the
replay.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, TypeVar

import pyoxigraph as ox

from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.vocabulary import MATCHES_GRAPH, PROV, RDF_TYPE, RSEP

_MATCHES = ox.NamedNode(MATCHES_GRAPH)
_GENERATED_BY = ox.NamedNode(PROV + "wasGeneratedBy")
_TYPE = ox.NamedNode(RDF_TYPE)
_MATCH = ox.NamedNode(RSEP + "Match")


class NamedGraph(Protocol):
    """What the sink writes: a graph with its IRI, as N-Quads (its metadata in MATCHES_GRAPH
    included); rsep.plugin.service's match and evaluation graphs are such graphs."""

    @property
    def iri(self) -> str: ...

    def nquads(self) -> str: ...


G = TypeVar("G", bound=NamedGraph)


class OxigraphMatchSink:
    """Match graphs into the knowledge base's store (it is the endpoint's one
    store), moving the knowledge base's version on so that cached background
    answers that may read match graphs are refreshed."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._lock = threading.Lock()

    def write(self, graphs: Sequence[G]) -> list[G]:
        with self._lock:
            fresh: dict[str, G] = {}
            for graph in graphs:
                if graph.iri not in fresh and not self.exists(graph.iri):
                    fresh[graph.iri] = graph
            if not fresh:
                return []
            quads = list(ox.parse("".join(graph.nquads() for graph in fresh.values()), ox.RdfFormat.N_QUADS))
            named = {quad.graph_name for quad in quads}
            empty = {name for name in map(ox.NamedNode, fresh) if name not in named}
            with self.kb.writing(default_graph=False, results=True) as store:
                if empty:
                    metadata = [q for q in quads if q.graph_name == _MATCHES and q.subject in empty]
                    _create_empty_graphs(store, empty, metadata)
                    quads = [q for q in quads if not (q.graph_name == _MATCHES and q.subject in empty)]
                store.extend(quads)
        return list(fresh.values())

    def exists(self, iri: str) -> bool:
        """Whether the match graph `iri` was written: its metadata says so."""
        return any(self.kb.store.quads_for_pattern(ox.NamedNode(iri), _TYPE, _MATCH, _MATCHES))

    def count(self, query_iri: str) -> int:
        """How many match graphs a query has generated."""
        pattern = self.kb.store.quads_for_pattern(None, _GENERATED_BY, ox.NamedNode(query_iri), _MATCHES)
        return sum(1 for _ in pattern)

    def flush(self) -> None:
        self.kb.flush()

    def purge(self, query_iri: str) -> int:
        """Remove a query's match graphs and their metadata (graph by graph:
        an interrupted purge can be run again)."""
        with self._lock:
            pattern = self.kb.store.quads_for_pattern(None, _GENERATED_BY, ox.NamedNode(query_iri), _MATCHES)
            names = [quad.subject for quad in pattern]
            if names:
                with self.kb.writing(default_graph=False, results=True) as store:
                    for name in names:
                        assert isinstance(name, ox.NamedNode)
                        store.remove_graph(name)
                        for quad in list(store.quads_for_pattern(name, None, None, _MATCHES)):
                            store.remove(quad)
        return len(names)


def _create_empty_graphs(store: ox.Store, graphs: set[ox.NamedNode], metadata: list[ox.Quad]) -> None:
    """Empty named graphs and their metadata in one transaction (a SPARQL update is one). The
    metadata holds no blank node (events named by one are cited as `urn:rsep:event:<position>`),
    which INSERT DATA would rename; its N-Triples text is pyoxigraph's."""
    triples = (ox.serialize([q.triple for q in metadata], format=ox.RdfFormat.N_TRIPLES) or b"").decode()
    creates = "".join(f"CREATE SILENT GRAPH {graph} ;\n" for graph in sorted(graphs, key=str))
    store.update(f"{creates}INSERT DATA {{ GRAPH {_MATCHES} {{\n{triples}}} }}")
