"""The in-process engine over a real event log, registry, checkpoints and
on-disk Oxigraph store: registration position, push, restart and replay
exactly once, failure isolation, the background thread."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.nfa.snapshot import StateMismatch
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.inprocess import InProcessEngine
from rsep.plugin.service.lifecycle import EngineWiring
from rsep.plugin.service.match_graphs import match_iri
from rsep.plugin.service.registry import FAILED, RegisteredQuery, Registry
from rsep.plugin.service.runner import load_state
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase, solutions
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.store.persistent import open_store
from rsep.plugin.vocabulary import MATCHES_GRAPH
from tests.support.events import OTHER, QUERIES, S1, S2, clock, event, plan_of, reference

QUERY = QUERIES["any"]  # SEQ (A : C) with ?v2 > ?v1


@pytest.fixture
def kb(tmp_path):
    return KnowledgeBase(open_store(tmp_path / "store"))


class Node:
    """One 'process': log, registry, checkpoints and engine on a data folder
    (the store handle is shared: a process can open it only once)."""

    def __init__(self, root, kb, interval=0.0, max_batch=10_000):
        self.log = EventLog(root / "log")
        self.registry = Registry(root / "queries")
        self.checkpoints = CheckpointStore(root / "checkpoints")
        self.sink = OxigraphMatchSink(kb)
        self.engine = InProcessEngine(
            EngineWiring(self.log, self.registry, self.checkpoints, self.sink, clock=clock),
            lambda q: compile_query(parse_event_query(q.text)),
            lambda plan: GpmEvaluator(plan.gpms, kb),
            checkpoint_interval=interval, poll_interval=0.05, max_batch=max_batch,
        )  # fmt: skip

    def register(self, text=QUERY, start=None):
        plan = compile_query(parse_event_query(text))
        start = self.log.next_position if start is None else start
        query = self.registry.create(text, "spaseq", plan.streams, start, {})
        self.engine.register(query)
        return query

    def ingest(self, *events):
        positions = self.log.append(list(events))
        self.engine.notify([LogRecord(p, e) for p, e in zip(positions, events, strict=True)])


def graphs_of(kb, query_iri):
    generated_by = "<http://www.w3.org/ns/prov#wasGeneratedBy>"
    query = f"SELECT ?g WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ ?g {generated_by} <{query_iri}> }} }}"
    return sorted(r["g"][1:-1] for r in solutions(kb.store.query(query)))


def expected_graphs(node, query):
    log = list(node.log.read(query.start))
    return sorted(match_iri(query.id, m) for m in reference(plan_of("any"), log))


def drain_all(subscription):
    out = []
    while (record := subscription.get(timeout=0)) is not None:
        out.append(record)
    return out


BATCH_1 = (event(1, "a1", S1, val=1), event(2, "c1", S1, kind="c", val=2), event(2, "b1", S2, kind="b"))
BATCH_2 = (event(3, "a2", S1, val=0), event(4, "c2", S1, kind="c", val=3), event(5, "x", OTHER))


def test_a_query_sees_the_events_ingested_after_its_registration(tmp_path, kb):
    node = Node(tmp_path, kb)
    node.ingest(event(0, "a0", S1, val=0))
    query = node.register()
    node.ingest(*BATCH_1)
    node.engine.drain()
    assert graphs_of(kb, query.iri) == expected_graphs(node, query)
    assert len(graphs_of(kb, query.iri)) == 1  # a1 -> c1; a0 came before the query
    progress = node.engine.progress(query.id)
    assert (progress.position, progress.events, progress.matches) == (4, 3, 1)


def test_from_zero_replays_the_history(tmp_path, kb):
    node = Node(tmp_path, kb)
    node.ingest(event(0, "a0", S1, val=0), *BATCH_1)
    query = node.register(start=0)
    node.engine.drain()
    assert graphs_of(kb, query.iri) == expected_graphs(node, query)
    assert len(graphs_of(kb, query.iri)) == 2


def test_created_matches_are_pushed_once_and_checkpointed_after_writing(tmp_path, kb):
    node = Node(tmp_path, kb)
    query = node.register()
    listener = node.engine.listeners.subscribe(query.id)
    node.ingest(*BATCH_1)
    node.engine.drain()
    node.ingest(*BATCH_2)
    node.engine.drain()
    pushed = drain_all(listener)
    assert sorted(r["graph"] for r in pushed) == graphs_of(kb, query.iri) == expected_graphs(node, query)
    assert pushed[0] == {"start": 1, "end": 2, "graph": pushed[0]["graph"],
                         "bindings": {"k": "<urn:t:k1>", "v1": pushed[0]["bindings"]["v1"],
                                      "v2": pushed[0]["bindings"]["v2"]}}  # fmt: skip
    state = load_state(node.checkpoints.load(query.id))
    assert (state.position, state.match_count) == (node.log.next_position, len(pushed))


def test_a_restart_resumes_from_the_checkpoint_and_finds_the_rest_exactly_once(tmp_path, kb):
    first = Node(tmp_path, kb)
    query = first.register()
    first.ingest(*BATCH_1)
    first.engine.drain()
    before = graphs_of(kb, query.iri)
    # crash: no stop(); the checkpoint is whatever was last written
    second = Node(tmp_path, kb)
    second.ingest(*BATCH_2)
    listener = second.engine.listeners.subscribe(query.id)
    second.engine.drain()
    after = graphs_of(kb, query.iri)
    assert after == expected_graphs(second, query)
    assert sorted(r["graph"] for r in drain_all(listener)) == sorted(set(after) - set(before))
    assert second.engine.progress(query.id).matches == len(after)


def test_a_batch_replayed_after_losing_the_latest_checkpoint_creates_and_pushes_nothing(tmp_path, kb):
    first = Node(tmp_path, kb)
    query = first.register()
    first.ingest(*BATCH_1)
    first.engine.drain()
    first.ingest(*BATCH_2)
    first.engine.drain()
    written = graphs_of(kb, query.iri)
    size = len(kb.store)
    latest = first.checkpoints.paths(query.id)[-1]
    latest.write_bytes(latest.read_bytes()[:20])  # torn: the previous checkpoint is used
    assert load_state(first.checkpoints.load(query.id)).position < first.log.next_position

    second = Node(tmp_path, kb)
    listener = second.engine.listeners.subscribe(query.id)
    second.engine.drain()
    assert drain_all(listener) == []
    assert graphs_of(kb, query.iri) == written and len(kb.store) == size
    progress = second.engine.progress(query.id)
    assert (progress.position, progress.matches) == (second.log.next_position, len(written))


def test_losing_every_checkpoint_replays_from_the_registration(tmp_path, kb):
    first = Node(tmp_path, kb)
    query = first.register()
    first.ingest(*BATCH_1, *BATCH_2)
    first.engine.drain()
    written = graphs_of(kb, query.iri)
    for path in first.checkpoints.paths(query.id):
        path.unlink()
    second = Node(tmp_path, kb)
    listener = second.engine.listeners.subscribe(query.id)
    second.engine.drain()
    assert drain_all(listener) == [] and graphs_of(kb, query.iri) == written


def test_batches_are_bounded_and_split_anywhere(tmp_path, kb):
    node = Node(tmp_path, kb, max_batch=2)
    query = node.register()
    node.ingest(*BATCH_1, *BATCH_2)
    node.engine.drain()
    assert graphs_of(kb, query.iri) == expected_graphs(node, query)


def test_unregister_stops_a_query_and_removes_its_checkpoints_not_its_graphs(tmp_path, kb):
    node = Node(tmp_path, kb)
    query = node.register()
    listener = node.engine.listeners.subscribe(query.id)
    node.ingest(*BATCH_1)
    node.engine.drain()
    written = graphs_of(kb, query.iri)
    node.engine.unregister(query.id)
    node.registry.remove(query.id)
    assert node.checkpoints.paths(query.id) == [] and not (tmp_path / "checkpoints" / query.id).exists()
    assert listener.closed and node.engine.progress(query.id) is None
    node.ingest(*BATCH_2)
    node.engine.drain()
    assert graphs_of(kb, query.iri) == written
    node.engine.unregister(query.id, purge=True)
    assert graphs_of(kb, query.iri) == []


def test_a_query_that_fails_does_not_stop_the_others(tmp_path, kb):
    node = Node(tmp_path, kb)
    good = node.register()
    broken = node.registry.create("SELECT nonsense", "spaseq", (S1,), 0, {})
    restarted = Node(tmp_path, kb)  # resumes both: one does not compile
    restarted.ingest(*BATCH_1)
    restarted.engine.drain()
    assert restarted.engine.progress(broken.id).state == "failed"
    assert "SparqlSyntaxError" in restarted.engine.progress(broken.id).error
    assert restarted.registry.get(broken.id).status == FAILED
    assert len(graphs_of(kb, good.iri)) == 1


def test_a_step_that_raises_fails_its_query_without_a_checkpoint(tmp_path, kb):
    node = Node(tmp_path, kb)
    query = node.register()
    node.engine.drain()
    checkpoints = node.checkpoints.paths(query.id)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    node.sink.write = broken
    node.ingest(*BATCH_1)
    node.engine.drain()
    progress = node.engine.progress(query.id)
    assert (progress.state, progress.error) == ("failed", "OSError: disk full")
    assert node.checkpoints.paths(query.id) == checkpoints


def test_the_thread_wakes_on_new_events_and_stops_cleanly(tmp_path, kb):
    node = Node(tmp_path, kb, interval=60.0)  # only the final checkpoint at stop
    node.engine.start()
    try:
        query = node.register()
        listener = node.engine.listeners.subscribe(query.id)
        assert node.engine.progress(query.id).state == "running"
        node.ingest(*BATCH_1)
        record = listener.get(timeout=10)
        assert record is not None and record["graph"] in graphs_of(kb, query.iri)
    finally:
        node.engine.stop(timeout=10)
    assert not node.engine.running and listener.closed
    assert load_state(node.checkpoints.load(query.id)).position == node.log.next_position


def test_stop_ends_listeners_blocked_in_get(tmp_path, kb):
    node = Node(tmp_path, kb)
    node.engine.start()
    query = node.register()
    listener = node.engine.listeners.subscribe(query.id)
    got = []
    waiter = threading.Thread(target=lambda: got.append(listener.get(timeout=30)))
    waiter.start()
    node.engine.stop(timeout=10)
    waiter.join(timeout=5)
    assert not waiter.is_alive() and got == [None] and listener.closed


def test_checkpoints_of_queries_no_longer_registered_are_removed_on_load(tmp_path, kb):
    node = Node(tmp_path, kb)
    query = node.register()
    node.engine.drain()
    node.registry.remove(query.id)  # a crash between the two steps of a DELETE
    restarted = Node(tmp_path, kb)
    restarted.engine.load()
    assert restarted.checkpoints.query_ids() == []


CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
EX = "http://example.org/"


def _epsparql_event(time: int, triple: str) -> GraphEvent:
    s, p, o = triple.split()
    return GraphEvent(
        EX + "s",
        f"<{EX}g{time}>",
        Timestamp(float(time), str(time), True),
        f"<{EX}{s}> <{EX}{p}> <{EX}{o}> .\n",
    )


def _compile_with_options(query: RegisteredQuery) -> QueryPlan:
    parsed = parse_event_query(query.text, dialect=query.dialect)
    return compile_query(
        replace(parsed, consumption=ConsumptionPolicy(query.options.get("policy", "unrestricted")))
    )


def test_a_checkpoint_rsep_can_no_longer_continue_replays_the_query_from_its_registration(tmp_path, kb):
    """A real checkpoint of an older rsep (tests/fixtures/checkpoints: NFA state format 4, no
    automaton fingerprint), whose runs wait in states of the automaton compiled then (one
    state per detection order of the BGP): the engine refuses it and replays the query from
    its registration, which finds what a fresh run finds. Resuming it used to fail the
    query (IndexError: the runs' states are not in today's automaton)."""
    log, registry, checkpoints = (
        EventLog(tmp_path / "log"),
        Registry(tmp_path / "queries"),
        CheckpointStore(tmp_path / "checkpoints"),
    )
    events = [_epsparql_event(1, "a r f"), _epsparql_event(3, "a q e"), _epsparql_event(5, "a p b")]
    log.append(events)
    text = f"PREFIX : <{EX}>\nSELECT * WHERE {{ ?x :p ?y . ?x :q ?z . ?x :r ?w }}\n"
    query = registry.create(text, "ep-sparql", (), 0, {"policy": "chronological"})
    old = (CHECKPOINTS / "epsparql-bgp-chronological-format4.ckpt").read_bytes()
    checkpoints.save(query.id, old)  # position 2: a r f and a q e read
    plan = _compile_with_options(query)
    with pytest.raises(StateMismatch):
        load_state(checkpoints.load(query.id), plan.automaton)
    engine = InProcessEngine(
        EngineWiring(log, registry, checkpoints, OxigraphMatchSink(kb), clock=clock), _compile_with_options,
        lambda plan: GpmEvaluator(plan.gpms, kb), checkpoint_interval=0.0, poll_interval=0.05,
    )  # fmt: skip
    engine.drain()
    assert registry.get(query.id).status != FAILED
    fresh = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase())).run(number_events([events]))
    assert [(m.start_time, m.end_time) for m in fresh] == [(1.0, 5.0)]
    assert graphs_of(kb, query.iri) == [match_iri(query.id, m) for m in fresh]
    assert load_state(checkpoints.load(query.id), plan.automaton).position == 3


def test_progress_does_not_wait_for_a_step_in_progress(tmp_path, kb):
    """GET /queries waited behind a busy query (22 s seen): a step holds the query's lock, so
    progress answers what the last finished step left (its graphs written)."""
    node = Node(tmp_path, kb)
    query = node.register()
    node.ingest(*BATCH_1)
    node.engine.drain()
    slot = node.engine.slots.get(query.id)
    answered = []
    with slot.lock:  # a step of the query in progress
        reader = threading.Thread(target=lambda: answered.append(node.engine.progress(query.id)))
        reader.start()
        reader.join(timeout=5)
        assert not reader.is_alive()
    (progress,) = answered
    assert (progress.position, progress.events, progress.matches) == (3, 3, 1)


def test_a_stop_asked_during_a_round_steps_no_further_query(tmp_path, kb):
    """A lagging engine steps each query over up to max_batch events per round, and a shutdown
    waited for every query's step (15 s seen): once stop is asked, the round ends after the step in
    progress; the others resume from their checkpoints and find their matches exactly once."""
    node = Node(tmp_path, kb, interval=60.0)
    first, second = node.register(), node.register()
    node.ingest(*BATCH_1)
    runner = node.engine.slots.get(first.id).runner
    step = runner.step

    def step_then_stop(records):
        node.engine._stopping.set()  # what stop() does first, from the signal handler's thread
        return step(records)

    runner.step = step_then_stop
    node.engine.drain()
    assert node.engine.progress(first.id).position == 3
    assert node.engine.progress(second.id).position == 0
    assert graphs_of(kb, second.iri) == []
    node.engine.stop()  # the final checkpoint the engine's thread writes as it ends
    assert load_state(node.checkpoints.load(first.id)).position == 3

    restarted = Node(tmp_path, kb)
    restarted.engine.drain()
    assert graphs_of(kb, first.iri) == expected_graphs(restarted, first)
    assert graphs_of(kb, second.iri) == expected_graphs(restarted, second)
    assert restarted.engine.progress(second.id).position == 3
