"""Match graphs in a real on-disk Oxigraph store: their shape read back with
SPARQL, idempotent writes, one transaction per batch, purge."""

from __future__ import annotations

import dataclasses

import pyoxigraph as ox
import pytest

from rsep.plugin.algebra.events import ConstructForm, SelectForm
from rsep.plugin.algebra.sparql import IRI, BNode, Literal, TriplePattern, Var
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.results import Projector
from rsep.plugin.service.match_graphs import (
    MATCHES_GRAPH,
    EventRef,
    MatchGraph,
    match_graph,
    match_iri,
    timestamp_nt,
)
from rsep.plugin.store.kb import KnowledgeBase, solutions
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.store.persistent import open_store

QID = "00112233aabbccdd"
QIRI = f"urn:rsep:query:{QID}"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = """
PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rsep: <https://w3id.org/rsep#>
"""
SELECT = SelectForm(projection=None)


@pytest.fixture
def kb(tmp_path):
    return KnowledgeBase(open_store(tmp_path / "store"))


def a_match(events=(3, 7), mapping=None) -> Match:
    mapping = mapping or {"house": "<urn:h1>", "fare": f'"25"^^<{XSD}integer>'}
    return Match(tuple(events), 10.0, 20.0, 0, 1, mapping)


def refs(*specs) -> list[EventRef]:
    return [
        EventRef(position, name, Timestamp(float(t), lexical, numeric))
        for position, name, t, lexical, numeric in specs
    ]


def graph_of(match: Match, form=SELECT, variables=("house", "fare", "city"), **kwargs) -> MatchGraph:
    events = kwargs.pop("events", None) or refs(
        (3, "<urn:e3>", 10, "10", True), (7, "<urn:e7>", 20, "20", True)
    )
    bindings = {k: v for k, v in match.mapping.items() if k in variables}
    projector = Projector(variables, form)
    return match_graph(QID, QIRI, match, events, projector, bindings, "2026-11-22T10:00:01Z")


def select(kb: KnowledgeBase, query: str) -> list[dict[str, str]]:
    return solutions(kb.store.query(PREFIXES + query))


def test_a_select_match_is_one_result_set_graph(kb):
    graph = graph_of(a_match())
    assert OxigraphMatchSink(kb).write([graph]) == [graph]
    rows = select(kb, f"""
        SELECT ?var ?name ?value WHERE {{ GRAPH <{graph.iri}> {{
            ?set a rs:ResultSet ; rs:resultVariable ?var .
            OPTIONAL {{ ?set rs:solution [ rs:binding [ rs:variable ?name ; rs:value ?value ] ] .
                       FILTER (?name = ?var) }}
        }} }} ORDER BY ?var""")  # fmt: skip
    assert rows == [
        {"var": '"city"'},  # projected but unbound: a result variable without a binding
        {"var": '"fare"', "name": '"fare"', "value": f'"25"^^<{XSD}integer>'},
        {"var": '"house"', "name": '"house"', "value": "<urn:h1>"},
    ]
    assert select(kb, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph.iri}> {{ ?s rs:solution ?o }} }}") == [
        {"n": f'"1"^^<{XSD}integer>'}
    ]


def test_the_metadata_graph_says_where_a_match_comes_from(kb):
    graph = graph_of(a_match())
    OxigraphMatchSink(kb).write([graph])
    rows = select(kb, f"""
        SELECT ?query ?start ?end ?detected WHERE {{ GRAPH <{MATCHES_GRAPH}> {{
            <{graph.iri}> a rsep:Match ; prov:wasGeneratedBy ?query ; rsep:start ?start ; rsep:end ?end ;
                          prov:generatedAtTime ?detected }} }}""")  # fmt: skip
    assert rows == [{
        "query": f"<{QIRI}>", "start": f'"10"^^<{XSD}integer>', "end": f'"20"^^<{XSD}integer>',
        "detected": f'"2026-11-22T10:00:01Z"^^<{XSD}dateTime>',
    }]  # fmt: skip
    derived = select(
        kb, f"SELECT ?e WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ <{graph.iri}> prov:wasDerivedFrom ?e }} }}"
    )
    assert sorted(r["e"] for r in derived) == ["<urn:e3>", "<urn:e7>"]


def test_timestamps_keep_the_type_the_input_gave_them():
    assert (
        timestamp_nt(Timestamp(1.0, "2026-11-22T10:00:00Z", False))
        == f'"2026-11-22T10:00:00Z"^^<{XSD}dateTime>'
    )
    assert timestamp_nt(Timestamp(5.0, "5", True)) == f'"5"^^<{XSD}integer>'
    assert timestamp_nt(Timestamp(0.5, "0.5", True)) == f'"0.5"^^<{XSD}decimal>'
    assert timestamp_nt(Timestamp(500.0, "5e2", True)) == f'"5e2"^^<{XSD}double>'


def test_an_event_named_by_a_blank_node_is_cited_by_its_log_position():
    events = refs((3, "_:r0xb1", 10, "10", True), (7, "<urn:e7>", 20, "20", True))
    assert graph_of(a_match(), events=events).derived_from == ("urn:rsep:event:3", "urn:e7")


def test_the_graph_iri_depends_on_query_events_and_mapping_only():
    iri = match_iri(QID, a_match())
    assert iri.startswith(f"urn:rsep:match:{QID}:") and len(iri.rsplit(":", 1)[1]) == 32
    assert match_iri(QID, Match((3, 7), 99.0, 99.0, 5, 6, dict(a_match().mapping))) == iri
    assert match_iri(QID, a_match(events=(3, 8))) != iri
    assert match_iri(QID, a_match(mapping={"house": "<urn:h2>"})) != iri
    assert match_iri("ffffffffffffffff", a_match()) != iri


def test_writing_a_match_twice_creates_one_graph(kb):
    sink = OxigraphMatchSink(kb)
    first, second = graph_of(a_match()), graph_of(a_match(events=(4, 9)))
    assert sink.write([first]) == [first]
    size = len(kb.store)
    assert sink.write([first]) == []
    assert len(kb.store) == size
    assert sink.write([first, second, second]) == [second]
    assert len(select(kb, f"SELECT ?g WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ ?g a rsep:Match }} }}")) == 2


class _CountingStore:
    """An Oxigraph store that counts `extend` calls."""

    def __init__(self, store: ox.Store) -> None:
        self.store, self.extends = store, 0

    def extend(self, quads) -> None:
        self.extends += 1
        self.store.extend(quads)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_a_batch_of_graphs_is_one_store_transaction_and_moves_the_kb_version(kb):
    counting = _CountingStore(kb.store)
    kb = KnowledgeBase(counting)
    sink = OxigraphMatchSink(kb)
    version = kb.version
    graphs = [graph_of(a_match(events=(i, i + 1))) for i in range(5)]
    assert sink.write(graphs) == graphs
    assert counting.extends == 1 and kb.version == version + 1
    sink.write(graphs)
    assert counting.extends == 1 and kb.version == version + 1  # nothing new, nothing written


def test_observers_see_writes_of_the_background_data_only_and_cannot_fail_them(kb):
    """KnowledgeBase.observe (the Spark engine refreshes its snapshots so): called after an
    update, not after the sink's match graphs (rsep's output); one that raises leaves the
    write done and the next observer called; stopped when asked."""
    seen: list[str] = []

    def failing() -> None:
        seen.append("failing")
        raise RuntimeError("observer down")

    stop_failing = kb.observe(failing)
    stop = kb.observe(lambda: seen.append("ok"))
    kb.update("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    assert seen == ["failing", "ok"]
    assert select(kb, "SELECT ?o { <urn:a> <urn:b> ?o }") == [{"o": "<urn:c>"}]  # the write is done
    OxigraphMatchSink(kb).write([graph_of(a_match())])
    assert seen == ["failing", "ok"]
    stop_failing()
    stop()
    kb.update("INSERT DATA { <urn:a> <urn:b> <urn:d> }")
    assert seen == ["failing", "ok"]


def test_a_construct_match_holds_the_instantiated_template(kb):
    template = (
        TriplePattern(Var("house"), IRI("urn:t:pays"), Var("fare")),
        TriplePattern(BNode("alert"), IRI("urn:t:about"), Var("house")),
        TriplePattern(Var("house"), IRI("urn:t:in"), Var("city")),  # ?city unbound: left out
        TriplePattern(Literal("x"), IRI("urn:t:bad"), Var("house")),  # a literal subject: left out
    )
    graph = graph_of(a_match(), form=ConstructForm(template))
    OxigraphMatchSink(kb).write([graph])
    rows = select(kb, f"SELECT ?s ?p ?o WHERE {{ GRAPH <{graph.iri}> {{ ?s ?p ?o }} }} ORDER BY ?p")
    label = graph.iri.rsplit(":", 1)[1]
    assert rows == [
        {"s": f"_:m{label}talert", "p": "<urn:t:about>", "o": "<urn:h1>"},
        {"s": "<urn:h1>", "p": "<urn:t:pays>", "o": f'"25"^^<{XSD}integer>'},
    ]


def test_an_empty_construct_match_written_twice_is_created_once(kb):
    """A template that instantiates to nothing (its only triple has an unbound variable) gives
    a graph without quads: its metadata, not its content, says it was written, so a replayed
    batch, with a later detection time, neither writes it again nor pushes it again."""
    template = (TriplePattern(Var("house"), IRI("urn:t:in"), Var("city")),)
    graph = graph_of(a_match(), form=ConstructForm(template))
    replayed = dataclasses.replace(graph, detected="2026-11-22T10:00:09Z")
    sink = OxigraphMatchSink(kb)
    assert sink.write([graph]) == [graph]
    assert sink.write([replayed]) == []
    assert sink.exists(graph.iri) and kb.store.contains_named_graph(ox.NamedNode(graph.iri))
    assert select(kb, f"SELECT ?s WHERE {{ GRAPH <{graph.iri}> {{ ?s ?p ?o }} }}") == []
    detected = select(
        kb, f"SELECT ?t WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ <{graph.iri}> prov:generatedAtTime ?t }} }}"
    )
    assert detected == [{"t": f'"2026-11-22T10:00:01Z"^^<{XSD}dateTime>'}]
    assert sink.count(QIRI) == 1


def test_purge_drops_a_querys_graphs_and_their_metadata(kb):
    sink = OxigraphMatchSink(kb)
    mine = [graph_of(a_match(events=(i, i + 1))) for i in range(3)]
    events = refs((3, "<urn:e3>", 10, "10", True))
    other_query = "urn:rsep:query:ffffffffffffffff"
    bindings = {"house": "<urn:h1>"}
    other = match_graph(
        "ffffffffffffffff",
        other_query,
        a_match(),
        events,
        Projector(("house",), SELECT),
        bindings,
        "2026-11-22T10:00:01Z",
    )
    sink.write([*mine, other])
    assert sink.purge(QIRI) == 3
    assert not any(sink.exists(g.iri) for g in mine) and sink.exists(other.iri)
    left = select(kb, f"SELECT DISTINCT ?g WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ ?g ?p ?o }} }}")
    assert left == [{"g": f"<{other.iri}>"}]
    assert sink.write(mine) == mine  # gone means gone: writing them again creates them


class _CrashingStore:
    """An Oxigraph store whose `extend` fails (the process dies before the batch's transaction),
    noting what each `update` left in the store's metadata graph."""

    def __init__(self, store: ox.Store) -> None:
        self.store, self.after_update = store, []

    def update(self, text: str) -> None:
        self.store.update(text)
        self.after_update.append(sorted(str(q) for q in self.store.quads_for_pattern(None, None, None, None)))

    def extend(self, quads) -> None:
        raise OSError("crash")

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_an_empty_match_graph_appears_with_its_metadata_and_a_crash_leaves_the_rest_to_the_replay(kb):
    """pyoxigraph's `extend` cannot create an empty graph: the batch's empty graphs and their
    metadata are one SPARQL update (one transaction) before the batch's `extend`."""
    template = (TriplePattern(Var("house"), IRI("urn:t:in"), Var("city")),)  # ?city unbound: no triple
    empty = graph_of(a_match(events=(1, 2)), form=ConstructForm(template))
    full = graph_of(
        a_match(events=(3, 4)),
        form=ConstructForm((TriplePattern(Var("house"), IRI("urn:t:p"), Var("fare")),)),
    )
    real = kb.store
    crashing = _CrashingStore(real)
    with pytest.raises(OSError, match="crash"):
        OxigraphMatchSink(KnowledgeBase(crashing)).write([empty, full])
    expected_metadata = sorted(str(q) for q in ox.parse(empty.nquads(), ox.RdfFormat.N_QUADS))
    assert crashing.after_update == [expected_metadata]  # the graph's metadata, nothing of `full`
    assert sorted(str(g) for g in real.named_graphs()) == sorted([f"<{empty.iri}>", f"<{MATCHES_GRAPH}>"])
    sink = OxigraphMatchSink(kb)
    assert sink.write([empty, full]) == [full]  # the replay writes what the crash lost, once
    assert sink.count(QIRI) == 2 and len(real) == len(expected_metadata) + len(
        list(ox.parse(full.nquads(), ox.RdfFormat.N_QUADS))
    )
