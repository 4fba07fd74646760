"""Batched graph pattern matching through Oxigraph (SPAseq §6.4's GPM evaluator).

A batch of events is loaded as named graphs into one in-memory store per
stream, and each GPM runs as one SPARQL query over it, so everything SPARQL
1.1 allows in a group pattern works. The background part of a GPM is
evaluated once per knowledge-base version and hash-joined in Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import pyoxigraph as ox

from rsep.plugin.compile.gpm import EVENT_GRAPH_PREFIX, EVENT_VAR, GpmPlan
from rsep.plugin.events import GraphEvent
from rsep.plugin.store.rdfio import batch_nquads

Row = tuple[int, dict[str, str]]
"""(event id, solution mapping as N-Triples terms)."""


class KnowledgeBase:
    """The background knowledge base: a store plus a version that moves on
    every update, so cached background solutions know when they are stale."""

    def __init__(self, store: ox.Store | None = None) -> None:
        self.store = store if store is not None else ox.Store()
        self.version = 0

    def touch(self) -> None:
        self.version += 1

    def select(self, query: str) -> list[dict[str, str]]:
        return solutions(self.store.query(query))

    def graph_quads(self, graph: str) -> list[ox.Quad]:
        return list(self.store.quads_for_pattern(None, None, None, ox.NamedNode(graph)))


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

    def __init__(self, plans: Sequence[GpmPlan], kb: KnowledgeBase | None = None) -> None:
        self.plans = plans
        self.kb = kb or KnowledgeBase()
        self._background: dict[int, tuple[int, list[dict[str, str]]]] = {}

    def evaluate(self, events: Iterable[tuple[int, GraphEvent]]) -> dict[int, list[Row]]:
        """GPM index -> rows, for a batch of (event id, event)."""
        by_stream: dict[str, list[tuple[int, GraphEvent]]] = defaultdict(list)
        for event_id, event in events:
            by_stream[event.stream].append((event_id, event))
        stores = {stream: self._store(batch) for stream, batch in by_stream.items()}
        rows: dict[int, list[Row]] = {}
        for plan in self.plans:
            found: list[Row] = []
            for stream in plan.streams:
                store = stores.get(stream)
                if store is not None:
                    found.extend(self._match(plan, store))
            if found:
                rows[plan.index] = found
        return rows

    def _store(self, batch: list[tuple[int, GraphEvent]]) -> ox.Store:
        store = ox.Store()
        store.extend(ox.parse(batch_nquads(batch, EVENT_GRAPH_PREFIX), ox.RdfFormat.N_QUADS))
        return store

    def _match(self, plan: GpmPlan, store: ox.Store) -> list[Row]:
        if plan.kb_graphs_in_batch:
            for graph in plan.kb_graphs_in_batch:
                store.extend(self.kb.graph_quads(graph))
        rows = [_row(m) for m in solutions(store.query(plan.event_query))]
        if plan.kb_query is None:
            return rows
        return _hash_join(rows, self._background_rows(plan), plan.join_vars)

    def _background_rows(self, plan: GpmPlan) -> list[dict[str, str]]:
        cached = self._background.get(plan.index)
        if cached is None or cached[0] != self.kb.version:
            assert plan.kb_query is not None
            cached = (self.kb.version, self.kb.select(plan.kb_query))
            self._background[plan.index] = cached
        return cached[1]


def _row(mapping: dict[str, str]) -> Row:
    graph = mapping.pop(EVENT_VAR)
    return int(graph[len(EVENT_GRAPH_PREFIX) + 1 : -1]), mapping


def _hash_join(rows: list[Row], background: list[dict[str, str]], keys: tuple[str, ...]) -> list[Row]:
    index: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for solution in background:
        index[tuple(solution[k] for k in keys)].append(solution)
    out: list[Row] = []
    for event_id, mapping in rows:
        for solution in index.get(tuple(mapping[k] for k in keys), ()):
            joined = _join(mapping, solution)
            if joined is not None:
                out.append((event_id, joined))
    return out


def _join(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str] | None:
    for name, value in b.items():
        if a.get(name, value) != value:
            return None
    return {**a, **b}
