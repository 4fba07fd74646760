"""Batched graph pattern matching through Oxigraph (SPAseq §6.4's GPM evaluator).

A batch of events is loaded as named graphs into one in-memory store per
stream, and each GPM runs as one SPARQL query over it, so everything SPARQL
1.1 allows in a group pattern works. The background part of a GPM, and its
lookups under an entailment regime, are evaluated once per knowledge-base
version and hash-joined in Python. A GPM whose event part is a basic graph
pattern with FILTERs over its own variables (`GpmPlan.simple`) is matched in
Python instead, against each event's triples, with the rows Oxigraph would give
(rsep.plugin.store.fast_gpm); the events it cannot read or filter exactly still
go to Oxigraph. A conjunction's later operands are matched
lazily, only at the timestamps where the earlier ones found rows (SPAseq §7.3,
rsep.plugin.compile.lazy); `GpmEvaluator.stats` counts what was matched.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pyoxigraph as ox

from rsep.plugin.compile.entailment import is_blank_node_var
from rsep.plugin.compile.gpm_plan import EVENT_GRAPH_PREFIX, EVENT_VAR, GpmPlan, Lookup
from rsep.plugin.compile.lazy import Needs
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.automaton import Atom, DisjunctionAtom, GpmAtom
from rsep.plugin.store.fast_gpm import FastStage, Matched, spliced
from rsep.plugin.store.kb import BackgroundSnapshot, KnowledgeBase, solutions
from rsep.plugin.store.rdfio import batch_nquads
from rsep.plugin.store.remote import check_remote
from rsep.plugin.store.remote_deadline import within_deadline

__all__ = ["Background", "BackgroundSnapshot", "GpmEvaluator", "GpmStats"]
"""(`BackgroundSnapshot` is also named here: Spark snapshots pickled by older rsep name this module.)"""

Row = tuple[int, dict[str, str]]
"""(event id, solution mapping as N-Triples terms)."""
Index = dict[tuple[str, ...], list[dict[str, str]]]


class Background(Protocol):
    """What the GPM stage reads from the background knowledge base."""

    @property
    def version(self) -> int: ...

    def select(self, query: str) -> list[dict[str, str]]: ...

    def graph_quads(self, graph: str) -> Iterable[ox.Quad]: ...

    @property
    def lookup_version(self) -> int: ...

    def lookup(self, query: str) -> list[dict[str, str]]: ...


@dataclass(slots=True)
class GpmStats:
    """What the GPM stage did, per GPM index, since the evaluator was made: the SPARQL queries it
    ran, the event graphs the GPM was matched against (by those queries or in Python), the rows
    it gave, the event graphs a lazy conjunction operand was not matched against
    (`GpmPlan.needs`), and the event graphs of a simple GPM that went to Oxigraph
    (rsep.plugin.store.fast_gpm)."""

    queries: Counter[int] = field(default_factory=Counter)
    events: Counter[int] = field(default_factory=Counter)
    rows: Counter[int] = field(default_factory=Counter)
    skipped: Counter[int] = field(default_factory=Counter)
    fallbacks: Counter[int] = field(default_factory=Counter)


class GpmEvaluator:
    """Runs a query plan's GPMs over batches of events.

    A batch must be a contiguous slice of the time-ordered streamset (every runtime's is):
    a lazy conjunction operand is then matched only at the timestamps where its earlier operands
    found rows in the batch, and at the batch's first and last timestamps, which may have events
    in the neighbouring batch (rsep.plugin.compile.lazy).

    `fast=False` runs every GPM in Oxigraph (the reference the fast path is tested and measured
    against)."""

    def __init__(self, plans: Sequence[GpmPlan], kb: Background | None = None, *, fast: bool = True) -> None:
        self.plans = sorted(plans, key=lambda plan: plan.index)  # a lazy GPM's operands first
        self.kb = kb or KnowledgeBase()
        self.stats = GpmStats()
        self._background: dict[int, tuple[int, list[dict[str, str]]]] = {}
        self._lookups: dict[str, tuple[int, Index]] = {}
        self._kb_graphs = sorted({g for plan in self.plans for g in plan.kb_graphs_in_batch})
        self._fast = FastStage({p.index: p.simple for p in self.plans if fast and p.simple is not None})

    def evaluate(self, events: Iterable[tuple[int, GraphEvent]]) -> dict[int, list[Row]]:
        """GPM index -> rows, for a batch of (event id, event)."""
        batch = _Batch(events)
        stores: dict[tuple[str, bool], ox.Store] = {}
        rows: dict[int, list[Row]] = {}
        self._match_eager_simple(batch)
        for plan in self.plans:
            wanted = None if plan.needs is None else batch.needed(plan.needs, rows)
            found: list[Row] = []
            for stream in plan.streams or batch.streams:  # no streams: every stream (EP-SPARQL)
                chosen = batch.of(stream, wanted)
                if chosen:
                    found.extend(self._rows(plan, stream, chosen, batch, stores))
                if wanted is not None:
                    self.stats.skipped[plan.index] += len(batch.streams.get(stream, ())) - len(chosen)
            if found:
                rows[plan.index] = found
                self.stats.rows[plan.index] += len(found)
        return rows

    def _match_eager_simple(self, batch: _Batch) -> None:
        """The simple GPMs matched at every event, together, stream by stream (`FastStage`)."""
        eager = [p for p in self.plans if p.index in self._fast.gpms and p.needs is None]
        for stream, events in batch.streams.items():
            indices = [p.index for p in eager if not p.streams or stream in p.streams]
            if indices:
                for index, matched in self._fast.match(events, indices).items():
                    batch.fast[index, stream] = matched

    def _rows(
        self,
        plan: GpmPlan,
        stream: str,
        chosen: Sequence[tuple[int, GraphEvent]],
        batch: _Batch,
        stores: dict[tuple[str, bool], ox.Store],
    ) -> list[Row]:
        """The GPM's rows in a stream's `chosen` events: matched in Python when it is simple
        (the events the fast path hands back matched in Oxigraph), else in Oxigraph."""
        if plan.index not in self._fast.gpms:
            return self._complete(
                plan, self._event_rows(plan, self._store_for(plan, stream, chosen, batch, stores))
            )
        matched = batch.fast.get((plan.index, stream))
        if matched is None:  # a lazy one, at the timestamps it is needed
            matched = self._fast.match(chosen, [plan.index])[plan.index]
        rows, missed = matched.rows, matched.missed
        self.stats.events[plan.index] += len(chosen) - len(missed)
        if missed:
            self.stats.fallbacks[plan.index] += len(missed)
            store = self._store_for(plan, stream, missed, batch, stores)
            rows = spliced(rows, matched.holes, self._event_rows(plan, store))
        return self._complete(plan, rows)

    def _store_for(
        self,
        plan: GpmPlan,
        stream: str,
        chosen: Sequence[tuple[int, GraphEvent]],
        batch: _Batch,
        stores: dict[tuple[str, bool], ox.Store],
    ) -> ox.Store:
        """The store of a stream's events in this batch (one per stream, built when first
        needed), or of just `chosen` when a lazy GPM needs fewer. Plans that read KB graphs
        inside the event pattern get stores holding copies of those graphs, so that other GPMs
        never see them."""
        self.stats.queries[plan.index] += 1
        self.stats.events[plan.index] += len(chosen)
        kb_graphs = self._kb_graphs if plan.kb_graphs_in_batch else ()
        if len(chosen) < len(batch.streams[stream]):
            return self._store(batch_nquads(chosen, EVENT_GRAPH_PREFIX), kb_graphs)
        key = (stream, bool(kb_graphs))
        store = stores.get(key)
        if store is None:
            store = stores[key] = self._store(batch.nquads(stream), kb_graphs)
        return store

    def _store(self, nquads: str, kb_graphs: Iterable[str]) -> ox.Store:
        store = ox.Store()
        store.extend(ox.parse(nquads, ox.RdfFormat.N_QUADS))
        for graph in kb_graphs:
            store.extend(self.kb.graph_quads(graph))
        return store

    def _event_rows(self, plan: GpmPlan, store: ox.Store) -> list[Row]:
        check_remote(plan.event_query)
        # a SERVICE (--allow-remote) gets --service-timeout: a silent remote fails the query
        return within_deadline(
            plan.event_query, None, lambda: [_row(m) for m in solutions(store.query(plan.event_query))]
        )

    def _complete(self, plan: GpmPlan, rows: list[Row]) -> list[Row]:
        """The event query's rows joined with the background part and the lookups."""
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


class _Batch:
    """One batch's events by stream, with what lazy GPMs ask of it."""

    def __init__(self, events: Iterable[tuple[int, GraphEvent]]) -> None:
        self.streams: dict[str, list[tuple[int, GraphEvent]]] = defaultdict(list)
        self.times: dict[int, float] = {}
        for event_id, event in events:
            self.streams[event.stream].append((event_id, event))
            self.times[event_id] = event.time.seconds
        self.edges = {min(self.times.values()), max(self.times.values())} if self.times else set()
        self._texts: dict[str, str] = {}
        self.fast: dict[tuple[int, str], Matched] = {}
        """(simple GPM index, stream) -> its rows (`GpmEvaluator._match_eager_simple`)."""

    def nquads(self, stream: str) -> str:
        text = self._texts.get(stream)
        if text is None:
            text = self._texts[stream] = batch_nquads(self.streams[stream], EVENT_GRAPH_PREFIX)
        return text

    def of(self, stream: str, wanted: set[float] | None) -> list[tuple[int, GraphEvent]]:
        """The stream's events, or those at the `wanted` timestamps."""
        events = self.streams.get(stream, [])
        return events if wanted is None else [(i, e) for i, e in events if self.times[i] in wanted]

    def needed(self, needs: Needs, rows: Mapping[int, Sequence[Row]]) -> set[float]:
        """The timestamps a lazy GPM is matched at: where one of its conjunctions of atoms has
        rows for every atom, and the batch's edges (their other events may be in another batch)."""
        wanted = set(self.edges)
        for atoms in needs:
            wanted |= set.intersection(*(self._with_rows(atom, rows) for atom in atoms))
        return wanted

    def _with_rows(self, atom: Atom, rows: Mapping[int, Sequence[Row]]) -> set[float]:
        if isinstance(atom, GpmAtom):
            return {self.times[event_id] for event_id, _ in rows.get(atom.gpm, ())}
        parts = [self._with_rows(operand, rows) for operand in atom.operands]
        return set.union(*parts) if isinstance(atom, DisjunctionAtom) else set.intersection(*parts)


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
    """The rows without the hidden variables, each once per assignment of the visible variables
    and the pattern's blank nodes (in first-seen order): two witnesses of one entailed triple are
    one solution, two blank-node witnesses two, as without entailment."""
    seen: set[tuple[int, tuple[tuple[str, str], ...]]] = set()
    out: list[Row] = []
    for event_id, mapping in rows:
        visible = {name: value for name, value in mapping.items() if name not in hidden}
        kept = (item for item in mapping.items() if item[0] not in hidden or is_blank_node_var(item[0]))
        key = (event_id, tuple(sorted(kept)))
        if key not in seen:
            seen.add(key)
            out.append((event_id, visible))
    return out


def _join(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str] | None:
    for name, value in b.items():
        if a.get(name, value) != value:
            return None
    return {**a, **b}
