"""Window queries (C-SPARQL, CQELS) evaluated by Oxigraph.

One in-memory store per run holds a copy of the background knowledge base;
at each evaluation the windows' triples replace the previous ones in their
graphs (rsep.plugin.windows.window_plan) and the plan's SPARQL query runs over the
dataset the dialect defines:

- C-SPARQL: the default graph is the merge of the static `FROM <g>` graphs
  and the windows. Oxigraph's multi-graph default graph is a union of bags,
  so a window triple that is also static is not loaded again: the merge
  stays a set, as the RDF merge is.
- CQELS: the default graph is the static data (the `FROM <g>` graphs, else
  the knowledge base's default graph); each window is a named graph.

Under an entailment regime each window graph has a hidden graph beside it
holding what the regime derives from the window (C-SPARQL: from the merged
default graph) and the window does not hold (rsep.plugin.store.entailed),
changed by difference at each evaluation like the window graphs.

`FROM <g>` takes g from the knowledge base: the named graph g when the base
has one, else its default graph (CityBench's `FROM <http://127.0.0.1:9000/...
/SensorRepository.rdf>` cannot be fetched: load the file with `--kb`). Every
named graph of the knowledge base stays visible to `GRAPH <g> { ... }`, except
the match graphs of continuous queries (`urn:rsep:match...`); `GRAPH ?g` ranges
over those only, not over the graphs this store adds (the plan excludes its
`internal_graphs`). The copy is made
again when the knowledge base's data changes (a SPARQL Update or Graph Store
write on the endpoint), before the next evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.entailed import EntailedGraph, SchemaClosure, static_entailed
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase, solutions
from rsep.plugin.store.path_tests import ScratchGraphs
from rsep.plugin.store.remote import check_remote
from rsep.plugin.store.remote_deadline import within_deadline
from rsep.plugin.vocabulary import LATE_GRAPH, MATCH_IRI_PREFIX, MATCHES_GRAPH
from rsep.plugin.windows.cep import ClauseRunner, Solution, clause_answer, read_row, window_events
from rsep.plugin.windows.output import WindowRun, output_variables
from rsep.plugin.windows.timestamp import LATEST_FUNCTION, LATEST_IN_FUNCTION
from rsep.plugin.windows.window_plan import (
    MERGED_GRAPH,
    STATIC_GRAPH,
    Form,
    WindowPlan,
    entailed_graph,
    evaluation_query,
)
from rsep.plugin.windows.window_replay import Answer, Evaluation, StreamItem, WindowReplay

XSD = "http://www.w3.org/2001/XMLSchema#"
Graph = ox.NamedNode | ox.BlankNode | ox.DefaultGraph
NamedGraph = ox.NamedNode | ox.BlankNode
Function = Callable[..., ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple | None]
Key = tuple[str, str, str]
Results = ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples
REBUILD_FROM = 50_000
"""Quads added to a window store after which it may be rebuilt (`OxigraphWindows._worn`)."""
RESULT_GRAPHS = (MATCH_IRI_PREFIX, MATCHES_GRAPH, LATE_GRAPH)
"""The graphs continuous queries write on the endpoint: results, not background knowledge."""


def _read(results: Results) -> tuple[bool, list[str], list[tuple[dict[str, str], tuple[int, int] | None]]]:
    """A window query's whole answer, read on the thread that ran it (pyoxigraph's results may
    not cross threads): ASK's boolean, or the variables and rows."""
    if isinstance(results, ox.QueryBoolean):
        return bool(results), [], []
    assert isinstance(results, ox.QuerySolutions)
    return True, [v.value for v in results.variables], [read_row(row) for row in solutions(results)]


class OxigraphWindows:
    """Answers a plan's query over window contents (rsep.plugin.windows.window_replay.WindowEvaluator)."""

    def __init__(self, plan: WindowPlan, kb: KnowledgeBase) -> None:
        self.plan = plan
        self.kb = kb
        self.variables: list[str] = []
        self._triples: dict[str, ox.Triple] = {}
        """The lines of this evaluation's windows, parsed (`_triple`)."""
        self._previous: dict[str, ox.Triple] = {}
        cep = plan.cep.clauses if plan.cep is not None else ()
        self.runners = [ClauseRunner(clause, GpmEvaluator(clause.gpms, kb)) for clause in cep]
        self._build()

    def _build(self, worn: ox.Store | None = None) -> None:
        """The dataset over a copy of the knowledge base's data as of now (not the graphs
        continuous queries write, nor late events: they are results, not background knowledge),
        dated by its `data_version`: a SPARQL Update or Graph Store write, of the default graph
        or a named one, applies from the next evaluation on. The copy is read graph by graph,
        the result graphs left out: the endpoint's store holds every match graph, for ever. A
        `worn` store (`_worn`) gives its own copy (only result graphs were written since):
        rereading the endpoint's store every few minutes filled RocksDB's caches with it (the
        soak, bench/bench_soak.py: ~4 MB/min more with ten queries)."""
        plan = self.plan
        self.data_version = self.kb.data_version  # read first: a write during the copy dates it stale
        if worn is not None:
            copy = _copied(worn, list(self.kb_graphs))
        else:
            endpoint = self.kb.store
            copy = _copied(endpoint, [g for g in endpoint.named_graphs() if not _is_result(g)])
        self.store = ox.Store()
        self.store.extend(copy)
        self.kb_graphs: list[NamedGraph] = list(self.store.named_graphs())
        self._base_size = len(self.store)
        self._added = 0
        """Quads added since the build: Oxigraph's in-memory store keeps memory for every quad it
        ever held (removing one does not free it; bench/bench_soak.py saw ~0.5 KB a quad), so a
        store that windows slide through is rebuilt once that is several times what it holds."""
        self.static = self._static_graph()
        graphs = [MERGED_GRAPH] if plan.merged else [w.graph for w in plan.windows]
        self.window_graphs = [ox.NamedNode(g) for g in graphs]
        self.default_graph: list[Graph] = [self.static] if self.static is not None else []
        self.named_graphs: list[NamedGraph] = list(self.kb_graphs)
        if plan.merged:
            self.default_graph.extend(self.window_graphs)
        else:
            self.named_graphs.extend(self.window_graphs)
        self._loaded: set[ox.Quad] = set()
        self.entailed = self._entailed_graphs() if plan.query.entailment is not None else []
        self.named_graphs.extend(e.graph for e in self.entailed)
        self.scratch = ScratchGraphs(self.store, plan.nested, self.default_graph, graphs)
        self.named_graphs.extend(self.scratch.graphs)

    # ------------------------------------------------------------------ dataset

    def _static_graph(self) -> Graph | None:
        """The static part of the default graph: the FROM graphs merged, or for CQELS without FROM
        the knowledge base's default graph; None for C-SPARQL without FROM."""
        sources: list[Graph] = []
        for iri in self.plan.static_graphs:
            node = ox.NamedNode(iri)
            graph: Graph = node if self.store.contains_named_graph(node) else ox.DefaultGraph()
            if graph not in sources:
                sources.append(graph)
        if not sources:
            return None if self.plan.merged else ox.DefaultGraph()
        if len(sources) == 1:
            return sources[0]
        merged = ox.NamedNode(STATIC_GRAPH)
        for source in sources:
            quads = list(self.store.quads_for_pattern(None, None, None, source))
            self.store.extend(ox.Quad(q.subject, q.predicate, q.object, merged) for q in quads)
        return merged

    def _entailed_graphs(self) -> list[EntailedGraph]:
        """Under an entailment regime, the hidden graph beside each window graph (rsep.plugin.store.
        entailed), over the schema of this copy of the knowledge base. C-SPARQL's merged default
        graph is entailed as one graph: its hidden graph also holds what the static graphs derive."""
        closure = SchemaClosure(self.store)
        if not self.plan.merged:
            return [EntailedGraph(ox.NamedNode(entailed_graph(g.value)), closure) for g in self.window_graphs]
        static: frozenset[ox.Triple] = frozenset()
        if self.static is not None:
            quads = self.store.quads_for_pattern(None, None, None, self.static)
            static = static_entailed(closure, quads, self._is_static)
        graph = EntailedGraph(ox.NamedNode(entailed_graph(MERGED_GRAPH)), closure, static, self._is_static)
        self.store.extend(graph.initial())
        return [graph]

    # ------------------------------------------------------------------ evaluation

    @property
    def knowledge_version(self) -> int:
        """The knowledge base's version an evaluation reads (rsep.plugin.windows.window_replay.
        VersionedEvaluator): the store is copied again when it moves."""
        return self.kb.data_version

    def evaluate(self, contents: Sequence[Sequence[StreamItem]]) -> Answer:
        return self.evaluate_within(contents, ())

    def evaluate_within(
        self, contents: Sequence[Sequence[StreamItem]], bounds: Sequence[tuple[int | None, int]]
    ) -> Answer:
        """The answer over `contents`; CQELS-CEP's event clauses read the events' intervals
        clipped to the windows' `bounds` (rsep.plugin.windows.window_replay.clip_bounds)."""
        if self.kb.data_version != self.data_version:  # any write of background data
            self._build()
        elif self._worn():
            self._build(self.store)
        self._previous, self._triples = self._triples, {}
        found: set[Solution] = set()
        if self.runners:  # CQELS-CEP: the windows are the event clauses' input, not graphs
            events = window_events([w.name for w in self.plan.windows], contents, bounds)
            found = clause_answer(self.runners, events)
        else:
            self._load(contents)
        text = evaluation_query(self.plan, found)
        # a SERVICE (--allow-remote) gets --service-timeout: a silent remote fails the query
        asked, names, pairs = within_deadline(text, None, lambda: _read(self._query(text, contents)))
        if self.plan.form is Form.ASK:
            return Answer(rows=({},) if asked else ())
        self.variables = [name for name in names if not name.startswith("__rsep_")]
        if not self.plan.ordered:
            pairs.sort(
                key=lambda pair: (tuple(pair[0].get(n, "") for n in self.variables), pair[1] or (0, 0))
            )
        rows = tuple(row for row, _ in pairs)
        return Answer(rows=rows, spans=tuple(span for _, span in pairs) if self.plan.intervals else ())

    def results(self, contents: Sequence[Sequence[StreamItem]], found: Iterable[Solution]) -> Results:
        """Oxigraph's answer to the plan's query over the loaded windows `contents`, with the event
        clauses' solutions `found` (CQELS-CEP) in its VALUES block."""
        return self._query(evaluation_query(self.plan, found), contents)

    def _query(self, text: str, contents: Sequence[Sequence[StreamItem]]) -> Results:
        self.scratch.refresh()
        functions = self._functions(contents) if self.plan.timestamps else None
        check_remote(text)
        return self.store.query(
            text,
            default_graph=self.default_graph,
            named_graphs=self.named_graphs,
            custom_functions=functions,
        )

    def _load(self, contents: Sequence[Sequence[StreamItem]]) -> None:
        """Bring the window graphs, and their hidden graphs of entailed triples, to `contents`:
        windows slide, so only the difference with the previous evaluation is removed and added
        (clearing a graph scans the store)."""
        held: list[set[ox.Triple]] = [set() for _ in self.window_graphs]
        for index, items in enumerate(contents):
            triples = held[0 if self.plan.merged else index]
            for item in items:
                triple = self._triple(item.triple)
                if not (self.plan.merged and self._is_static(triple)):
                    triples.add(triple)
        quads = {
            ox.Quad(t.subject, t.predicate, t.object, graph)
            for graph, triples in zip(self.window_graphs, held, strict=True)
            for t in triples
        }
        self._apply(self._loaded - quads, quads - self._loaded)
        self._loaded = quads
        if self.entailed:
            for entailed, triples in zip(self.entailed, held, strict=True):
                self._apply(*entailed.update(triples))

    def _apply(self, removed: Iterable[ox.Quad], added: Iterable[ox.Quad]) -> None:
        for quad in removed:
            self.store.remove(quad)
        fresh = list(added)
        self._added += len(fresh)
        self.store.extend(fresh)

    def _worn(self) -> bool:
        """Whether the store has taken in enough to be rebuilt: at least REBUILD_FROM quads and 4
        times what it holds (the knowledge base's copy and the windows), so that rebuilding costs
        O(1) a quad added and the memory kept for removed quads stays a multiple of what is held."""
        return self._added >= max(REBUILD_FROM, 4 * (self._base_size + len(self._loaded)))

    def _is_static(self, triple: ox.Triple) -> bool:
        if self.static is None:
            return False
        return ox.Quad(triple.subject, triple.predicate, triple.object, self.static) in self.store

    def _triple(self, line: str) -> ox.Triple:
        """A window's line, parsed once while it stays in a window: the cache keeps the lines of
        this evaluation and the previous one, never the whole stream."""
        triple = self._triples.get(line)
        if triple is None:
            triple = self._previous.get(line)
            if triple is None:
                quad = next(iter(ox.parse(line, ox.RdfFormat.N_TRIPLES)))
                triple = ox.Triple(quad.subject, quad.predicate, quad.object)
            self._triples[line] = triple
        return triple

    # ------------------------------------------------------------------ timestamp()

    def _functions(self, contents: Sequence[Sequence[StreamItem]]) -> dict[ox.NamedNode, Function]:
        """latestTime/latestTimeIn over this evaluation's windows (rsep.plugin.windows.timestamp)."""
        latest: dict[Key, StreamItem] = {}
        latest_in: dict[str, dict[Key, StreamItem]] = {}
        for spec, items in zip(self.plan.windows, contents, strict=True):
            per_stream = latest_in.setdefault(spec.stream, {})
            for item in items:
                triple = self._triple(item.triple)
                key = (str(triple.subject), str(triple.predicate), str(triple.object))
                for table in (latest, per_stream):
                    if key not in table or table[key].ticks < item.ticks:
                        table[key] = item
        return {
            ox.NamedNode(LATEST_FUNCTION): lambda *terms: _latest(latest, terms),
            ox.NamedNode(LATEST_IN_FUNCTION): lambda stream, *terms: _latest(
                latest_in.get(getattr(stream, "value", ""), {}), terms
            ),
        }


def _copied(store: ox.Store, graphs: Sequence[NamedGraph]) -> Iterator[ox.Quad]:
    """The quads of the default graph and of `graphs`: the knowledge base's data, from the
    endpoint's store or from a window store's copy (whose windows, static merge, entailed and
    scratch graphs are its own)."""
    for graph in [ox.DefaultGraph(), *graphs]:
        yield from store.quads_for_pattern(None, None, None, graph)


def _is_result(graph: object) -> bool:
    return isinstance(graph, ox.NamedNode) and graph.value.startswith(RESULT_GRAPHS)


def _latest(table: Mapping[Key, StreamItem], terms: Sequence[object]) -> ox.Literal | None:
    keys = ((str(terms[i]), str(terms[i + 1]), str(terms[i + 2])) for i in range(0, len(terms) - 2, 3))
    found = [table[key] for key in keys if key in table]
    if not found:
        return None
    return timestamp_literal(max(found, key=lambda item: item.ticks).time)


def timestamp_literal(time: Timestamp) -> ox.Literal:
    """A timestamp as the event file wrote it: an xsd:dateTime, or a number."""
    if not time.numeric:
        return ox.Literal(time.lexical, datatype=ox.NamedNode(XSD + "dateTime"))
    lexical = time.lexical.strip()
    if any(c in lexical for c in "eE"):
        datatype = "double"
    elif "." in lexical:
        datatype = "decimal"
    else:
        datatype = "integer"
    return ox.Literal(lexical, datatype=ox.NamedNode(XSD + datatype))


# --------------------------------------------------------------------------- replay over files


class StreamFileError(InvalidInput):
    """An event file that does not fit the query (unknown or missing stream)."""


def read_window_streams(plan: WindowPlan, files: Sequence[tuple[str, Path]]) -> dict[str, list[GraphEvent]]:
    """Events per stream IRI of the plan, from (stream IRI, TriG or N-Quads file) pairs."""
    streams: dict[str, list[GraphEvent]] = {}
    for index, (iri, path) in enumerate(files):
        if iri not in plan.streams:
            known = ", ".join(f"<{s}>" for s in plan.streams)
            raise StreamFileError(f"unknown stream <{iri}>: the query reads {known}")
        streams.setdefault(iri, []).extend(read_event_file(path, iri, scope=f"s{index}"))
    missing = [iri for iri in plan.streams if iri not in streams]
    if missing:
        raise StreamFileError(f"no events given for stream <{missing[0]}>: add --stream {missing[0]}=FILE")
    return streams


def replay_windows(plan: WindowPlan, kb: KnowledgeBase, files: Sequence[tuple[str, Path]]) -> WindowRun:
    """`rsep run` for a window query: read the files, replay, collect what each evaluation answers."""
    return replay_window_events(plan, kb, read_window_streams(plan, files))


def replay_window_events(
    plan: WindowPlan,
    kb: KnowledgeBase,
    streams: Mapping[str, Sequence[GraphEvent]],
    until: int | None = None,
    scope: str = "",
    t0: int | None = None,
) -> WindowRun:
    """The replay over events already read, per stream IRI (event files, and the graph events of
    C-SPARQL `REGISTER STREAM` rules); `until` and `t0` as for `WindowReplay.run`, `scope` names
    the query in its CONSTRUCT results' blank nodes (rsep.plugin.windows.construct)."""
    replay = stream_window_events(plan, kb, streams, until, scope, t0)
    return replay.collect(list(replay.evaluations))


@dataclass
class WindowStream:
    """A window query's replay whose evaluations come as they are computed (`rsep run` prints each
    one then), with what printing them needs."""

    plan: WindowPlan
    evaluator: OxigraphWindows
    evaluations: Iterator[Evaluation]
    numeric: bool

    def variables(self) -> tuple[str, ...]:
        """The projected variables (for SELECT *, the ones Oxigraph reported so far)."""
        return output_variables(self.plan, self.evaluator.variables)

    def collect(self, evaluations: Sequence[Evaluation]) -> WindowRun:
        """Evaluations of this replay as a `WindowRun` (all of them, or one to print)."""
        return WindowRun(self.plan, tuple(evaluations), self.variables(), self.numeric)


def stream_window_events(
    plan: WindowPlan,
    kb: KnowledgeBase,
    streams: Mapping[str, Sequence[GraphEvent]],
    until: int | None = None,
    scope: str = "",
    t0: int | None = None,
) -> WindowStream:
    """`replay_window_events`, its evaluations as they are computed."""
    evaluator = OxigraphWindows(plan, kb)
    evaluations = WindowReplay(plan, evaluator, scope).stream(streams, until, t0)
    numeric = all(event.time.numeric for iri in plan.streams for event in streams.get(iri, ()))
    return WindowStream(plan, evaluator, evaluations, numeric)
