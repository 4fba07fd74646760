"""The background knowledge base: the endpoint's one Oxigraph store, and its version.

Answers computed from the knowledge base (a plan's background queries, entailment lookups, the
snapshots Spark broadcasts) are cached per *version*, so every write must move it: the write
methods here do, and they are the only way to write (the `store` property is for reads). A
write that touches named graphs only (match graphs, `GRAPH <g>` updates of the Graph Store
Protocol) moves `version`; one that may change the default graph moves `default_version` too,
which dates what lookups read. Every write but the match sink's moves `data_version`, which dates
copies of the background data (they leave the continuous queries' result graphs out), and calls
the write's observers (`observe`) before the write returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.compile.entailment import SCHEMA_GRAPH, SCHEMA_PREDICATES
from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.store import sparql_service
from rsep.plugin.store.rdfio import load_into
from rsep.plugin.store.remote import check_remote
from rsep.plugin.store.remote_deadline import within_deadline
from rsep.plugin.store.sparql_service import Dataset, GraphName, Payload, QueryForm

LOG = logging.getLogger(__name__)


class KnowledgeBase:
    """The background knowledge base (see the module docstring)."""

    def __init__(self, store: ox.Store | None = None) -> None:
        self._store = store if store is not None else ox.Store()
        self.version = 0
        self.default_version = 0
        self.data_version = 0
        """Moved by every write except those of rsep's own output graphs only (matches, late
        events: `writing(results=True)`); dates copies of the background data."""
        self._lookups: dict[str, tuple[int, list[dict[str, str]]]] = {}
        self._moving = threading.Lock()
        self._observers: list[Callable[[], None]] = []

    def observe(self, moved: Callable[[], None]) -> Callable[[], None]:
        """Call `moved()` after each write of the background data (not of rsep's output graphs
        only), in the writer's thread, before the write returns; returns the function that stops
        it. The Spark engine refreshes the snapshots its next batches ship, so that an update
        answered before an event is posted applies to that event: refreshed only by the
        engine's watcher, a batch planned in between read the old one."""
        self._observers.append(moved)
        return lambda: self._observers.remove(moved)

    @property
    def store(self) -> ox.Store:
        """The store, to read (write through the methods below, which move the version)."""
        return self._store

    # ------------------------------------------------------------------ writes

    @contextmanager
    def writing(self, *, default_graph: bool = True, results: bool = False) -> Iterator[ox.Store]:
        """The store for a write the methods below do not cover; the version moves after it,
        even when it fails half-way (a partial write is a write). `default_graph=False` when it
        writes named graphs only, `results=True` when only rsep's output graphs (matches
        `urn:rsep:match...`, late events `urn:rsep:late...`: copies of the background data leave
        them out)."""
        try:
            yield self._store
        finally:
            self._moved(default_graph, results)
            if not results:
                for moved in list(self._observers):
                    try:
                        moved()
                    except Exception:  # the write is done: an observer's failure is not the writer's
                        LOG.exception("an observer of the knowledge base's writes failed")

    def update(self, text: str, *, base_iri: str | None = None) -> None:
        """A SPARQL update (one transaction)."""
        with self.writing():
            sparql_service.run_update(self._store, text, base_iri=base_iri)

    def load(self, path: Path, *, graph: str | None = None) -> int:
        """An RDF file (TriG, N-Quads, Turtle, N-Triples, RDF/XML), into `graph` or as it says."""
        with self.writing(default_graph=graph is None):
            return load_into(self._store, path, graph=graph)

    def load_data(self, data: bytes | str, media: ox.RdfFormat, *, graph: str | None = None) -> None:
        """RDF text, into `graph` or as it says."""
        target = None if graph is None else ox.NamedNode(graph)
        with self.writing(default_graph=graph is None):
            self._store.load(data.encode() if isinstance(data, str) else data, media, to_graph=target)

    def put_graph(self, graph: GraphName, payload: Payload, *, base_iri: str | None) -> bool:
        """Graph Store PUT: True if the graph was created."""
        with self.writing(default_graph=graph is None):
            return sparql_service.put_graph(self._store, graph, payload, base_iri=base_iri)

    def post_graph(self, graph: GraphName, payloads: Sequence[Payload], *, base_iri: str | None) -> bool:
        """Graph Store POST to a graph: True if the graph was created."""
        with self.writing(default_graph=graph is None):
            return sparql_service.post_graph(self._store, graph, payloads, base_iri=base_iri)

    def post_dataset(self, payload: Payload, *, base_iri: str | None) -> None:
        """Graph Store POST of a dataset to the store itself."""
        with self.writing():
            sparql_service.post_dataset(self._store, payload, base_iri=base_iri)

    def delete_graph(self, graph: GraphName) -> bool:
        """Graph Store DELETE: False if there was no such graph."""
        with self.writing(default_graph=graph is None):
            return sparql_service.delete_graph(self._store, graph)

    def flush(self) -> None:
        """Make every write so far durable."""
        self._store.flush()

    def _moved(self, default_graph: bool, results: bool = False) -> None:
        with self._moving:
            self.version += 1
            if default_graph:
                self.default_version += 1
            if not results:
                self.data_version += 1

    # ------------------------------------------------------------------ reads

    def query(
        self,
        text: str,
        *,
        choose: Callable[[QueryForm], str],
        base_iri: str | None,
        dataset: Dataset | None,
        union_default_graph: bool = False,
    ) -> tuple[str, bytes]:
        """A SPARQL query as the protocol runs it: (media type, serialised result)."""
        return sparql_service.run_query(
            self._store, text, choose=choose, base_iri=base_iri, dataset=dataset, union=union_default_graph
        )

    def probe(self) -> None:
        """The cheapest read that takes the store's snapshot: what a query's forked child does
        first (rsep.plugin.service.query_child)."""
        self._store.query("ASK {}")

    def graph_exists(self, graph: GraphName) -> bool:
        return sparql_service.graph_exists(self._store, graph)

    def get_graph(self, graph: GraphName, media_type: str) -> bytes:
        """Graph Store GET of one graph, serialised."""
        return sparql_service.get_graph(self._store, graph, media_type)

    def get_dataset(self, media_type: str) -> bytes:
        """Graph Store GET of the whole store, serialised."""
        return sparql_service.get_dataset(self._store, media_type)

    @property
    def lookup_version(self) -> int:
        return self.default_version

    def lookup(self, query: str) -> list[dict[str, str]]:
        """A lookup's solutions (lookups read the default graph only, rsep.plugin.compile.gpm_plan),
        evaluated again only when the default graph may have changed."""
        version = self.default_version  # read first: an update during the query dates it stale
        cached = self._lookups.get(query)
        if cached is None or cached[0] != version:
            cached = self._lookups[query] = (version, self.select(query))
        return cached[1]

    def select(self, query: str) -> list[dict[str, str]]:
        check_remote(query)
        # a SERVICE (--allow-remote) gets --service-timeout: a silent remote fails the query
        return within_deadline(query, None, lambda: solutions(self._store.query(query)))

    def graph_quads(self, graph: str) -> list[ox.Quad]:
        if graph == SCHEMA_GRAPH:
            return schema_quads(self._store)
        return list(self._store.quads_for_pattern(None, None, None, ox.NamedNode(graph)))

    def snapshot(self, plans: Sequence[GpmPlan]) -> BackgroundSnapshot:
        """What `plans` read from this knowledge base, evaluated now."""
        answers = {p.kb_query: self.select(p.kb_query) for p in plans if p.kb_query is not None}
        answers.update({lookup.query: self.lookup(lookup.query) for p in plans for lookup in p.lookups})
        names = sorted({g for p in plans for g in p.kb_graphs_in_batch})
        graphs = {g: _nquads(self.graph_quads(g)) for g in names}
        return BackgroundSnapshot(self.version, answers, graphs)


@dataclass(frozen=True, slots=True)
class BackgroundSnapshot:
    """A knowledge base's answers to a plan's background queries and its
    graphs as N-Quads text, taken once on the driver: it pickles, so Spark
    broadcasts it and executors never open the store."""

    version: int
    answers: Mapping[str, list[dict[str, str]]]
    graphs: Mapping[str, str]

    def select(self, query: str) -> list[dict[str, str]]:
        try:
            return self.answers[query]
        except KeyError:
            raise KeyError(f"background query not in the snapshot: {query}") from None

    def graph_quads(self, graph: str) -> Iterable[ox.Quad]:
        return ox.parse(self.graphs[graph], ox.RdfFormat.N_QUADS)

    @property
    def lookup_version(self) -> int:
        return self.version

    def lookup(self, query: str) -> list[dict[str, str]]:
        return self.select(query)


def schema_quads(store: ox.Store) -> list[ox.Quad]:
    """The schema an entailment regime reads: the RDFS schema triples of the default graph, as
    the named graph SCHEMA_GRAPH (rsep.plugin.compile.entailment)."""
    graph = ox.NamedNode(SCHEMA_GRAPH)
    return [
        ox.Quad(quad.subject, quad.predicate, quad.object, graph)
        for predicate in SCHEMA_PREDICATES
        for quad in store.quads_for_pattern(None, ox.NamedNode(predicate), None, ox.DefaultGraph())
    ]


def solutions(results: object) -> list[dict[str, str]]:
    """SELECT results as mappings of variable name -> N-Triples term."""
    assert isinstance(results, ox.QuerySolutions)
    names = [v.value for v in results.variables]
    out = []
    for solution in results:
        out.append({n: str(t) for n, t in zip(names, solution, strict=True) if t is not None})
    return out


def _nquads(quads: list[ox.Quad]) -> str:
    return (ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b"").decode()
