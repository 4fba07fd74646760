"""Batched graph pattern matching through Oxigraph (SPAseq §6.4's GPM evaluator).

A batch of events is loaded as named graphs into one in-memory store per
stream, and each GPM runs as one SPARQL query over it, so everything SPARQL
1.1 allows in a group pattern works. The background part of a GPM, and its
lookups under an entailment regime, are evaluated once per knowledge-base
version and hash-joined in Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyoxigraph as ox

from rsep.plugin.compile.entailment import SCHEMA_GRAPH, SCHEMA_PREDICATES
from rsep.plugin.compile.gpm import EVENT_GRAPH_PREFIX, EVENT_VAR, GpmPlan, Lookup
from rsep.plugin.events import GraphEvent
from rsep.plugin.store.rdfio import batch_nquads

Row = tuple[int, dict[str, str]]
"""(event id, solution mapping as N-Triples terms)."""
Index = dict[tuple[str, ...], list[dict[str, str]]]


class KnowledgeBase:
    """The background knowledge base: a store plus a version that moves on
    every update, so cached background solutions know when they are stale.
    `default_version` moves only with updates that may change the default
    graph (match graphs are named graphs): it dates what lookups read."""

    def __init__(self, store: ox.Store | None = None) -> None:
        self.store = store if store is not None else ox.Store()
        self.version = 0
        self.default_version = 0
        self._lookups: dict[str, tuple[int, list[dict[str, str]]]] = {}

    def touch(self, default_graph: bool = True) -> None:
        """Record an update; `default_graph=False` when it wrote named graphs only."""
        self.version += 1
        if default_graph:
            self.default_version += 1

    @property
    def lookup_version(self) -> int:
        return self.default_version

    def lookup(self, query: str) -> list[dict[str, str]]:
        """A lookup's solutions (lookups read the default graph only, rsep.plugin.compile.gpm),
        evaluated again only when the default graph may have changed."""
        version = self.default_version  # read first: an update during the query dates it stale
        cached = self._lookups.get(query)
        if cached is None or cached[0] != version:
            cached = self._lookups[query] = (version, self.select(query))
        return cached[1]

    def select(self, query: str) -> list[dict[str, str]]:
        return solutions(self.store.query(query))

    def graph_quads(self, graph: str) -> list[ox.Quad]:
        if graph == SCHEMA_GRAPH:
            return schema_quads(self.store)
        return list(self.store.quads_for_pattern(None, None, None, ox.NamedNode(graph)))

    def snapshot(self, plans: Sequence[GpmPlan]) -> BackgroundSnapshot:
        """What `plans` read from this knowledge base, evaluated now."""
        answers = {p.kb_query: self.select(p.kb_query) for p in plans if p.kb_query is not None}
        answers.update({lookup.query: self.lookup(lookup.query) for p in plans for lookup in p.lookups})
        names = sorted({g for p in plans for g in p.kb_graphs_in_batch})
        graphs = {g: _nquads(self.graph_quads(g)) for g in names}
        return BackgroundSnapshot(self.version, answers, graphs)


class Background(Protocol):
    """What the GPM stage reads from the background knowledge base."""

    @property
    def version(self) -> int: ...

    def select(self, query: str) -> list[dict[str, str]]: ...

    def graph_quads(self, graph: str) -> Iterable[ox.Quad]: ...

    @property
    def lookup_version(self) -> int: ...

    def lookup(self, query: str) -> list[dict[str, str]]: ...


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


def _nquads(quads: list[ox.Quad]) -> str:
    return (ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b"").decode()


def solutions(results: object) -> list[dict[str, str]]:
    """SELECT results as mappings of variable name -> N-Triples term."""
    assert isinstance(results, ox.QuerySolutions)
    names = [v.value for v in results.variables]
    out = []
    for solution in results:
        out.append({n: str(t) for n, t in zip(names, solution, strict=True) if t is not None})
    return out


class GpmEvaluator:
    """Runs a query plan's GPMs over batches of events."""

    def __init__(self, plans: Sequence[GpmPlan], kb: Background | None = None) -> None:
        self.plans = plans
        self.kb = kb or KnowledgeBase()
        self._background: dict[int, tuple[int, list[dict[str, str]]]] = {}
        self._lookups: dict[str, tuple[int, Index]] = {}

    def evaluate(self, events: Iterable[tuple[int, GraphEvent]]) -> dict[int, list[Row]]:
        """GPM index -> rows, for a batch of (event id, event)."""
        by_stream: dict[str, list[tuple[int, GraphEvent]]] = defaultdict(list)
        for event_id, event in events:
            by_stream[event.stream].append((event_id, event))
        texts = {stream: batch_nquads(batch, EVENT_GRAPH_PREFIX) for stream, batch in by_stream.items()}
        plain = {stream: self._store(text, ()) for stream, text in texts.items()}
        kb_graphs = sorted({g for plan in self.plans for g in plan.kb_graphs_in_batch})
        # Plans that read KB graphs inside the event pattern get their own store
        # holding copies of those graphs, so that other GPMs never see them.
        enriched = {s: self._store(text, kb_graphs) for s, text in texts.items()} if kb_graphs else {}
        rows: dict[int, list[Row]] = {}
        for plan in self.plans:
            stores = enriched if plan.kb_graphs_in_batch else plain
            found: list[Row] = []
            for stream in plan.streams or stores:  # no streams: every stream (EP-SPARQL)
                store = stores.get(stream)
                if store is not None:
                    found.extend(self._match(plan, store))
            if found:
                rows[plan.index] = found
        return rows

    def _store(self, nquads: str, kb_graphs: Iterable[str]) -> ox.Store:
        store = ox.Store()
        store.extend(ox.parse(nquads, ox.RdfFormat.N_QUADS))
        for graph in kb_graphs:
            store.extend(self.kb.graph_quads(graph))
        return store

    def _match(self, plan: GpmPlan, store: ox.Store) -> list[Row]:
        rows = [_row(m) for m in solutions(store.query(plan.event_query))]
        if plan.kb_query is not None:
            rows = _hash_join(rows, self._background_rows(plan), plan.join_vars)
        for lookup in plan.lookups:
            rows = _probe(rows, self._lookup_index(lookup), lookup.keys)
        return _distinct_without(rows, frozenset(plan.hidden)) if plan.hidden else rows

    def _background_rows(self, plan: GpmPlan) -> list[dict[str, str]]:
        cached = self._background.get(plan.index)
        if cached is None or cached[0] != self.kb.version:
            assert plan.kb_query is not None
            cached = (self.kb.version, self.kb.select(plan.kb_query))
            self._background[plan.index] = cached
        return cached[1]

    def _lookup_index(self, lookup: Lookup) -> Index:
        """A lookup's table indexed by its keys, built once per KB version (lookups are shared
        by the GPMs that read the same one)."""
        version = self.kb.lookup_version
        cached = self._lookups.get(lookup.query)
        if cached is None or cached[0] != version:
            index = _index(self.kb.lookup(lookup.query), lookup.keys)
            cached = self._lookups[lookup.query] = (version, index)
        return cached[1]


def _row(mapping: dict[str, str]) -> Row:
    graph = mapping.pop(EVENT_VAR)
    return int(graph[len(EVENT_GRAPH_PREFIX) + 1 : -1]), mapping


def _hash_join(rows: list[Row], background: list[dict[str, str]], keys: tuple[str, ...]) -> list[Row]:
    return _probe(rows, _index(background, keys), keys)


def _index(background: list[dict[str, str]], keys: tuple[str, ...]) -> Index:
    index: Index = defaultdict(list)
    for solution in background:
        index[tuple(solution[k] for k in keys)].append(solution)
    return index


def _probe(rows: list[Row], index: Index, keys: tuple[str, ...]) -> list[Row]:
    out: list[Row] = []
    for event_id, mapping in rows:
        for solution in index.get(tuple(mapping[k] for k in keys), ()):
            joined = _join(mapping, solution)
            if joined is not None:
                out.append((event_id, joined))
    return out


def _distinct_without(rows: list[Row], hidden: frozenset[str]) -> list[Row]:
    """The rows without the hidden variables, each once (in first-seen order)."""
    seen: set[tuple[int, tuple[tuple[str, str], ...]]] = set()
    out: list[Row] = []
    for event_id, mapping in rows:
        visible = {name: value for name, value in mapping.items() if name not in hidden}
        key = (event_id, tuple(sorted(visible.items())))
        if key not in seen:
            seen.add(key)
            out.append((event_id, visible))
    return out


def _join(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str] | None:
    for name, value in b.items():
        if a.get(name, value) != value:
            return None
    return {**a, **b}
