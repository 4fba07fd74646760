"""The Spark streaming engine on the shared `local[2]` session: exact results
(the smart-grid example, random logs against the in-process engine), a crash
in the middle of a stream, background-knowledge updates, unregistering."""

from __future__ import annotations

import pickle
import random
import time

import pytest

from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa.snapshot import fingerprint
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.service import checkpoints as checkpoint_format
from rsep.plugin.service.match_graphs import match_iri
from rsep.plugin.service.reorder import watermark_mark
from rsep.plugin.spark.log_source import SnapshotFiles
from rsep.plugin.store.gpm_stage import GpmEvaluator
from tests.spark_streaming.support import (
    INTERVAL_SEQ,
    KB_QUERY,
    graph_iris,
    graph_quads,
    in_process_graphs,
    spanning,
    wait_for,
)
from tests.support.events import OTHER, QUERIES, S1, S2, event, plan_of, reference, synthetic_events
from tests.support.smart_grid import SMART_GRID, smart_grid_events

pytestmark = pytest.mark.spark


def drain(subscription, wait: float = 0) -> list[str]:
    """The graphs pushed to a subscription, waiting up to `wait` for each."""
    out = []
    while (record := subscription.get(timeout=wait)) is not None:
        out.append(record["graph"])
    return out


def random_events(count: int, seed: int) -> list[GraphEvent]:
    """Events for every query of tests/support/events.py, with shared timestamps
    and gaps longer than the kleene query's WITHIN."""
    rng = random.Random(seed)
    kinds = {S1: ["a", "c"], S2: ["b", "a"], OTHER: ["a", "b"]}
    out, t = [], 0
    for i in range(count):
        t += rng.choice([0, 1, 1, 2, 7])
        stream = rng.choice([S1, S1, S1, S2, S2, OTHER])
        out.append(event(t, f"e{i}", stream, rng.choice(["k1", "k2", "k3"]), rng.choice(kinds[stream]),
                         rng.randint(0, 4)))  # fmt: skip
    return out


def test_the_smart_grid_example_gives_the_graphs_of_rsep_run(make_node, kb):
    kb.load(SMART_GRID / "kb.trig")
    node = make_node()
    node.engine.start()
    query = node.register((SMART_GRID / "query.rq").read_text())
    subscription = node.engine.listeners.subscribe(query.id)
    events = smart_grid_events()
    for chunk in (events[:4], events[4:9], events[9:]):
        node.ingest(chunk)
        node.wait(query)
    plan = node.engine.compiler(query)
    numbered = [NumberedEvent(i, n.rank, n.event) for i, n in enumerate(number_events([events]))]
    replayed = Replay(plan, GpmEvaluator(plan.gpms, kb)).run(numbered)  # what `rsep run` prints
    assert replayed
    expected = in_process_graphs(query, node.log, kb)
    assert sorted(expected) == sorted(match_iri(query.id, m) for m in replayed)
    assert graph_iris(kb, query.iri) == sorted(expected)
    for iri, quads in expected.items():
        assert graph_quads(kb, iri) == quads  # bindings, start/end, events, detection time
    assert sorted(drain(subscription, wait=1)) == sorted(expected)
    progress = node.engine.progress(query.id)
    assert (progress.state, progress.position, progress.events) == ("running", len(events), len(events))
    assert progress.matches == len(expected)


def test_interval_events_give_the_graphs_of_the_in_process_engine(make_node, kb):
    """EP-SPARQL over events spanning intervals (test_stages' case, a1 from 0.5): the same graphs
    as the in-process engine, `rsep:start` (the match interval's start, as written) included."""
    node = make_node()
    node.engine.start()
    query = node.register(INTERVAL_SEQ)
    events = [spanning("0.5", 5, "a1"), spanning("3", 8, "c1", kind="c"), spanning("6", 9, "c2", kind="c"),
              event(10, "a2"), spanning("11", 12, "c3", kind="c")]  # fmt: skip
    for chunk in (events[:2], events[2:]):
        node.ingest(chunk)
        node.wait(query)
    expected = in_process_graphs(query, node.log, kb)
    assert len(expected) == 3
    assert graph_iris(kb, query.iri) == sorted(expected)
    for iri, quads in expected.items():
        assert graph_quads(kb, iri) == quads
    starts = sorted(q.split(" ")[2] for quads in expected.values() for q in quads if "rsep#start" in q)
    assert starts == ['"0.5"^^<http://www.w3.org/2001/XMLSchema#decimal>'] * 2 + [
        '"10"^^<http://www.w3.org/2001/XMLSchema#integer>'
    ]


@pytest.mark.parametrize(("seed", "names"), [(3, sorted(QUERIES)), (11, ["kleene", "negation"])])
def test_random_logs_give_the_graphs_of_the_in_process_engine(make_node, kb, seed, names):
    node = make_node()
    node.engine.start()
    queries = [node.register(QUERIES[name], start=0) for name in names]  # concurrent streaming queries
    events = random_events(48, seed)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(events)), 4))
    for start, end in zip([0, *cuts], [*cuts, len(events)], strict=True):
        node.ingest(events[start:end])
        time.sleep(rng.choice([0.0, 0.4]))  # sometimes a batch in between, sometimes not
    node.wait(*queries, timeout=150)
    for query in queries:
        expected = in_process_graphs(query, node.log)
        assert graph_iris(kb, query.iri) == sorted(expected), query.text
        for iri, quads in expected.items():
            assert graph_quads(kb, iri) == quads


def test_watermark_marks_in_the_log_give_the_graphs_of_the_in_process_engine(make_node, kb):
    """A log that the reorder buffer wrote (events released in order, each release followed by
    a watermark mark, an event with no triple on urn:rsep:watermark): the Spark engine skips the
    marks as no query's stream and lets them advance time as the in-process engine does."""
    node = make_node()
    node.engine.start()
    queries = [node.register(QUERIES[name], start=0) for name in ("any", "negation")]
    events = random_events(40, 5)
    rng = random.Random(5)
    cuts = sorted(rng.sample(range(1, len(events)), 6))
    for start, end in zip([0, *cuts], [*cuts, len(events)], strict=True):
        following = events[end].time.seconds if end < len(events) else events[-1].time.seconds + 1
        node.ingest([*events[start:end], watermark_mark(following, True)])
    node.wait(*queries, timeout=150)
    for query in queries:
        expected = in_process_graphs(query, node.log)
        assert expected, query.text
        assert graph_iris(kb, query.iri) == sorted(expected), query.text
        for iri, quads in expected.items():
            assert graph_quads(kb, iri) == quads


def test_a_crash_in_the_middle_of_a_stream_loses_nothing_and_repeats_nothing(make_node, kb):
    events = synthetic_events(40)
    first = make_node()
    first.engine.start()
    query = first.register(QUERIES["any"], start=0)
    pushed_first = first.engine.listeners.subscribe(query.id)
    first.ingest(events[:15])
    first.wait(query)
    assert graph_iris(kb, query.iri)
    first.ingest(events[15:22])
    first.ingest(events[22:28])
    time.sleep(0.3)  # most likely inside a micro-batch
    first.engine.stop(timeout=0)  # no draining: the batch in flight is cut short, as by a crash
    before = set(graph_iris(kb, query.iri))
    pushed = drain(pushed_first)
    assert set(pushed) == before and len(pushed) == len(before)

    second = make_node()
    pushed_second = second.engine.listeners.subscribe(query.id)
    second.engine.start()
    assert second.engine.progress(query.id).matches == len(before)  # recounted from the store
    second.ingest(events[28:])
    second.wait(query)
    expected = sorted(match_iri(query.id, m) for m in reference(plan_of("any"), list(_records(events))))
    assert graph_iris(kb, query.iri) == expected
    later = drain(pushed_second, wait=1)
    assert sorted(later) == sorted(set(expected) - before)  # each graph pushed once, overall
    assert second.engine.progress(query.id).matches == len(expected)


def _records(events):
    return (LogRecord(i, e) for i, e in enumerate(events))


def test_a_driver_checkpoint_of_another_automaton_replays_the_query_from_its_registration(make_node, kb):
    """The driver checkpoint names the automaton the state store's NFA states belong to; one
    of another automaton (an older rsep compiled the query differently, or wrote no
    fingerprint) is dropped, and the query is read again from its registration under a new plan
    id (its old keys are not read again), finding every graph once."""
    events = synthetic_events(30)
    first = make_node()
    first.engine.start()
    query = first.register(QUERIES["any"], start=0)
    first.ingest(events[:15])
    first.wait(query)
    first.engine.stop()
    payload = first.checkpoints.load(query.id)
    assert payload is not None
    driver = checkpoint_format.decode(payload, "spark-driver")
    assert driver["automaton"] == fingerprint(plan_of("any").automaton)
    old_plan = driver["plan"]
    del driver["automaton"]  # as an rsep before fingerprints wrote it, in the format before this one
    driver["plan"] = "elsewhere"  # and the state of another plan id in Spark's offsets
    first.checkpoints.save(query.id, b"rsep-spark-driver/1\n" + pickle.dumps(driver))

    second = make_node()
    second.engine.start()
    assert second.engine.slots.get(query.id).plan_id == old_plan  # the same automaton: the same keys
    second.ingest(events[15:])
    second.wait(query)
    expected = sorted(match_iri(query.id, m) for m in reference(plan_of("any"), list(_records(events))))
    assert graph_iris(kb, query.iri) == expected
    assert second.engine.progress(query.id).matches == len(expected)


def test_a_query_registered_while_events_flow_sees_every_later_event_and_history_too(make_node, kb):
    """One job: registering answers at once (no streaming query starts), a query registered
    between two requests reads every event after its registration, one registered with `from=0`
    the whole log, while the first goes on."""
    events = synthetic_events(40)
    node = make_node()
    node.engine.start()
    first = node.register(QUERIES["any"], start=0)
    node.ingest(events[:12])
    node.wait(first)
    began = time.perf_counter()
    later = node.register(QUERIES["any"])
    history = node.register(QUERIES["strict"], start=0)
    assert time.perf_counter() - began < 1.0
    assert len([q for q in node.engine.session.streams.active]) == 1
    node.ingest(events[12:25])
    node.ingest(events[25:])
    node.wait(first, later, history)
    records = list(_records(events))
    for query, name, start in ((first, "any", 0), (later, "any", 12), (history, "strict", 0)):
        expected = sorted(match_iri(query.id, m) for m in reference(plan_of(name), records[start:]))
        assert graph_iris(kb, query.iri) == expected, name


def test_a_knowledge_base_update_reaches_the_batches_planned_after_it(make_node, kb):
    kb.update("INSERT DATA { GRAPH <urn:kb> { <urn:low> <urn:holds> 1 } }")
    node = make_node()
    node.engine.start()
    query = node.register(KB_QUERY)
    node.ingest([event(1, "a1", val=1), event(2, "c1", kind="c")])
    node.wait(query)
    snapshots = SnapshotFiles(node.checkpoints.root / query.id / "kb")
    before = snapshots.current()
    kb.update("DELETE DATA { GRAPH <urn:kb> { <urn:low> <urn:holds> 1 } } ;"
              "INSERT DATA { GRAPH <urn:kb> { <urn:high> <urn:holds> 1 } }")  # fmt: skip
    wait_for(lambda: snapshots.current() != before, 10)
    node.ingest([event(3, "a2", val=1), event(4, "c2", kind="c")])
    node.wait(query)
    bands = {}
    for iri in graph_iris(kb, query.iri):
        quads = graph_quads(kb, iri)
        band = "high" if any("<urn:high>" in q for q in quads) else "low"
        derived = sorted(q.split()[2] for q in quads if "wasDerivedFrom" in q)
        bands[tuple(derived)] = band
    assert bands == {("<urn:t:a1>", "<urn:t:c1>"): "low", ("<urn:t:a1>", "<urn:t:c2>"): "low",
                     ("<urn:t:a2>", "<urn:t:c2>"): "high"}  # fmt: skip


def test_an_update_answered_before_an_event_is_posted_applies_to_it(make_node, kb):
    """The snapshot is refreshed in the update's own thread (KnowledgeBase.observe), not only by
    the engine's watcher (here it never polls): a batch planned right after the update, before
    any poll, reads it. Without it, an event posted just after an update could be matched under
    the old knowledge (a full test run's Spark schema-update test failed so, under load)."""
    kb.update("INSERT DATA { GRAPH <urn:kb> { <urn:low> <urn:holds> 1 } }")
    node = make_node(kb_poll=3600)
    node.engine.start()
    query = node.register(KB_QUERY)
    snapshots = SnapshotFiles(node.checkpoints.root / query.id / "kb")
    before = snapshots.current()
    kb.update("DELETE DATA { GRAPH <urn:kb> { <urn:low> <urn:holds> 1 } } ;"
              "INSERT DATA { GRAPH <urn:kb> { <urn:high> <urn:holds> 1 } }")  # fmt: skip
    assert snapshots.current() != before  # at once, not at the next poll
    node.ingest([event(3, "a2", val=1), event(4, "c2", kind="c")])
    node.wait(query)
    (iri,) = graph_iris(kb, query.iri)
    assert any("<urn:high>" in quad for quad in graph_quads(kb, iri))


def test_unregistering_stops_the_query_and_deletes_its_checkpoints(make_node, kb):
    node = make_node()
    node.engine.start()
    query = node.register(QUERIES["strict"])
    node.ingest([event(1, "a1", val=1), event(2, "c1", kind="c", val=3)])
    node.wait(query)
    other = node.register(QUERIES["any"])
    assert graph_iris(kb, query.iri) and (node.checkpoints.root / query.id).is_dir()
    node.registry.remove(query.id)
    node.engine.unregister(query.id, purge=True)
    assert node.engine.progress(query.id) is None
    assert not (node.checkpoints.root / query.id).exists()
    assert graph_iris(kb, query.iri) == []
    assert [e.id for e in node.engine.table.read()] == [other.id]
    node.ingest([event(3, "a2", val=1), event(4, "c2", kind="c", val=3)])  # the job goes on
    node.wait(other)
    assert graph_iris(kb, other.iri) and graph_iris(kb, query.iri) == []


def test_keys_without_new_rows_lose_their_expired_runs_in_the_state_store(make_node, kb, spark):
    node = make_node()
    node.engine.start()
    query = node.register(QUERIES["kleene"])  # WITHIN 6 SECONDS
    node.ingest([event(1, "a1", key="k1", val=1), event(2, "b1", S2, key="k1", kind="b"),
                 event(3, "a2", key="k2", val=1)])  # fmt: skip
    node.wait(query)
    checkpoint = node.engine.checkpoint_location

    def keys_are(expected: list[str]) -> bool:  # Spark commits a batch just after foreachBatch
        try:
            rows = spark.read.format("statestore").load(checkpoint).collect()
        except Exception:
            return False
        return sorted(r.key.key for r in rows) == expected

    wait_for(lambda: keys_are(['["<urn:t:k1>"]', '["<urn:t:k2>"]']), 30)
    for t in (20, 21):  # time 20 passes every WITHIN; the batch after it fires the timeouts
        node.ingest([event(t, f"x{t}", OTHER)])
        node.wait(query)
    wait_for(lambda: keys_are([]), 30)
