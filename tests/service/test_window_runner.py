"""`WindowRunner`: a window query stepped over the log in random batches (and restored from
random checkpoints) emits exactly `WindowReplay.run`'s evaluations over the same events, up to
the last final evaluation time, and keeps only the items a later window can hold."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyoxigraph as ox
import pytest

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.service.window_runner import MAX_EVALUATIONS_PER_STEP, WindowRunner
from rsep.plugin.store import windows
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.store.windows import OxigraphWindows
from rsep.plugin.vocabulary import MATCHES_GRAPH, RDF_TYPE, RSEP
from rsep.plugin.windows.window_functions import to_ticks
from rsep.plugin.windows.window_plan import WindowPlan
from rsep.plugin.windows.window_replay import Answer, StreamItem, WindowReplay
from tests.service.window_runs import OTHER, S1, S2, graph_of, plan_of, random_log, registered, run_in_batches

CSPARQL = {
    "sliding": f"SELECT * FROM STREAM <{S1}> [RANGE 3s STEP 1s] WHERE {{ ?s ?p ?o }}",
    "tumbling": f"SELECT * FROM STREAM <{S1}> [RANGE 2s TUMBLING] WHERE {{ ?s ?p ?o }}",
    "gaps": f"SELECT * FROM STREAM <{S1}> [RANGE 1s STEP 2s] WHERE {{ ?s ?p ?o }}",
    "count": f"SELECT * FROM STREAM <{S1}> [RANGE TRIPLES 3] WHERE {{ ?s ?p ?o }}",
    "two-streams": f"SELECT * FROM STREAM <{S1}> [RANGE 4s STEP 2s] FROM STREAM <{S2}> [RANGE TRIPLES 2] "
    "WHERE { ?s ?p ?o }",
    "two-steps": f"SELECT * FROM STREAM <{S1}> [RANGE 1s STEP 1s] FROM STREAM <{S2}> [RANGE 5s STEP 2s] "
    "WHERE { ?s ?p ?o }",
    "two-steps-one-stream": f"SELECT * FROM STREAM <{S1}> [RANGE 1s STEP 2s] "
    f"FROM STREAM <{S1}> [RANGE 7s STEP 3s] WHERE {{ ?s ?p ?o }}",
}
CQELS = {
    "range": f"SELECT * WHERE {{ STREAM <{S1}> [RANGE 3s] {{ ?s ?p ?o }} }}",
    "range-slide": f"SELECT * WHERE {{ STREAM <{S1}> [RANGE 4s SLIDE 2s] {{ ?s ?p ?o }} }}",
    "triples": f"SELECT * WHERE {{ STREAM <{S1}> [TRIPLES 2] {{ ?s ?p ?o }} }}",
    "now-all": f"""PREFIX : <http://example.org/>
SELECT * FROM NAMED WINDOW :now ON <{S1}> [NOW] FROM NAMED WINDOW :all ON <{S2}> [ALL]
WHERE {{ WINDOW :now {{ ?s ?p ?o }} WINDOW :all {{ ?a ?b ?c }} }}""",
}


class Contents:
    """A stand-in store whose answer spells out the windows' contents (item times and triples),
    so any difference in what a window holds shows; `quiet` answers nothing for empty windows."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def evaluate(self, contents: Sequence[Sequence[StreamItem]]) -> Answer:
        if self.quiet and not any(contents):
            return Answer()
        row = {
            f"w{i}": repr([(item.ticks, item.triple) for item in items]) for i, items in enumerate(contents)
        }
        return Answer(rows=(row,))


def expected_graphs(
    plan: WindowPlan, evaluator, records: Sequence[LogRecord], done: int | None, t0: float | None = None
):
    streams: dict[str, list[GraphEvent]] = {}
    for record in records:
        streams.setdefault(record.event.stream, []).append(record.event)
    # t0: the registration's time; on an empty log, the first event read, of any stream
    first = min((to_ticks(record.event.time.seconds) for record in records), default=None)
    evaluations = WindowReplay(plan, evaluator).run(streams, t0=first if t0 is None else to_ticks(t0))
    return [graph_of(plan, e) for e in evaluations if done is not None and e.time <= done]


CASES = [(name, text, "c-sparql") for name, text in CSPARQL.items()] + [
    (name, text, "cqels") for name, text in CQELS.items()
]


@pytest.mark.parametrize(("name", "text", "dialect"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("quiet", [False, True], ids=["answers-empty-windows", "quiet"])
def test_batches_and_restores_give_the_replay(name, text, dialect, quiet):
    plan = plan_of(text, dialect)
    rng = random.Random(f"{name}-{quiet}")
    for _ in range(25):
        records = random_log(rng, plan.streams)
        # registered on an empty log, or at a time at or before the first event (the log's then)
        earlier = rng.choice([None, 0, 0.5, 3, 10])
        t0 = None if earlier is None or not records else records[0].event.time.seconds - earlier
        found, runner = run_in_batches(plan, lambda: Contents(quiet), records, rng, t0)
        expected = expected_graphs(plan, Contents(quiet), records, runner.state.done, t0)
        assert list(found.values()) == expected
        if records and runner.state.done is not None:  # everything before the last event is final
            last = to_ticks(records[-1].event.time.seconds)
            later = [r for r in records if r.event.time.seconds < records[-1].event.time.seconds]
            if later and plan.report.value == "content-change":
                assert runner.state.done == last - 1


def test_with_oxigraph_and_an_aggregate():
    text = f"SELECT (COUNT(*) AS ?n) FROM STREAM <{S1}> [RANGE 3s STEP 1s] WHERE {{ ?s ?p ?o }}"
    plan = plan_of(text, "c-sparql")
    rng = random.Random(7)
    kb = KnowledgeBase()
    for _ in range(5):
        records = random_log(rng, plan.streams)
        found, runner = run_in_batches(plan, lambda: OxigraphWindows(plan, kb), records, rng)
        expected = expected_graphs(plan, OxigraphWindows(plan, kb), records, runner.state.done)
        assert list(found.values()) == expected


def test_only_the_items_a_later_window_holds_are_kept():
    plan = plan_of(CSPARQL["sliding"], "c-sparql")
    runner = WindowRunner(registered(plan), plan, Contents(quiet=True))
    for position in range(1000):
        event = GraphEvent(S1, f"<urn:e:{position}>", Timestamp(position / 2, str(position / 2), True),
                           f"<urn:x{position}> <urn:p> <urn:o> .\n")  # fmt: skip
        runner.step([LogRecord(position, event)])
    kept = runner._streams[S1].items
    assert 0 < len(kept) <= 8  # 3 s of events at 2 per second, plus the not yet final ones
    assert (
        WindowRunner.restore(registered(plan), plan, Contents(True), runner.snapshot()).position
        == kept[0].event
    )


def test_a_close_after_the_last_item_waits_for_the_item_that_makes_it_an_evaluation_time():
    plan = plan_of(CSPARQL["sliding"], "c-sparql")
    # registered at 0: the windows holding the item at 10, closing at 10, 11 and 12, open after t0
    runner = WindowRunner(replace(registered(plan), t0=0.0), plan, Contents(quiet=False))

    def record(position: int, t: float, stream: str = S1) -> LogRecord:
        return LogRecord(position, GraphEvent(stream, f"<urn:e:{position}>", Timestamp(t, str(t), True),
                                              "<urn:x> <urn:p> <urn:o> .\n"))  # fmt: skip

    graphs = runner.step([record(0, 10), record(1, 20, OTHER)])
    assert [g.time.seconds for g in graphs] == [10, 11, 12]  # the item at 10 leaves at 13
    graphs = runner.step([record(2, 30)])  # closes 13 ... 29 over empty windows are evaluation times now
    assert [g.time.seconds for g in graphs] == list(range(13, 30))


def test_a_long_gap_is_evaluated_a_bounded_number_of_closes_per_step():
    """Every close of a gap becomes final with the event after it: one step made all of them
    (12 days under a 5 s step: 200,000 evaluations and their graphs in memory, 5 GB, while the
    engine's other queries waited). Now a step makes at most MAX_EVALUATIONS_PER_STEP, the
    query's progress stays before the record until the backlog is done, and a restore in the
    middle of it goes on from its checkpoint: the graphs are the replay's, each once."""
    plan = plan_of(CSPARQL["sliding"], "c-sparql")
    query = replace(registered(plan), t0=0.0)
    triple = "<urn:x> <urn:p> <urn:o> .\n"
    records = [LogRecord(i, GraphEvent(S1, f"<urn:e:{i}>", Timestamp(t, str(t), True), triple))
               for i, t in enumerate([0, 2500, 2500.5])]  # fmt: skip
    runner = WindowRunner(query, plan, Contents(quiet=False), clock=lambda: "D")
    found: Counter[str] = Counter()
    sizes = []

    def step(batch: Sequence[LogRecord]) -> None:
        graphs = runner.step(batch)
        sizes.append(len(graphs))
        found.update(g.iri for g in graphs)

    step(records[:2])
    assert runner.backlog and runner.position == 2 and runner.settled == 1
    step([])
    runner = WindowRunner.restore(query, plan, Contents(quiet=False), runner.snapshot(), lambda: "D")
    step(records[runner.position : 2])
    while runner.backlog:
        step([])
    assert runner.settled == 2
    step(records[2:])
    assert max(sizes) <= MAX_EVALUATIONS_PER_STEP and len(sizes) > 3
    expected = expected_graphs(plan, Contents(quiet=False), records, runner.state.done, 0.0)
    assert len(expected) > 2 * MAX_EVALUATIONS_PER_STEP and set(found) == {g.iri for g in expected}
    assert max(found.values()) <= 2  # a restore repeats at most the evaluations after its checkpoint


def test_a_window_store_that_windows_slide_through_is_rebuilt_with_the_same_answers(monkeypatch):
    """Oxigraph's in-memory store keeps memory for every quad it ever held: the soak's creep on
    window queries (issue 15). Past REBUILD_FROM quads added, and 4x what it holds, it starts afresh."""
    monkeypatch.setattr(windows, "REBUILD_FROM", 40)
    kb = KnowledgeBase()
    kb.store.add(ox.Quad(ox.NamedNode("urn:x0"), ox.NamedNode("urn:kb"), ox.Literal("static")))
    plan = plan_of(CSPARQL["sliding"], "c-sparql")
    evaluator = OxigraphWindows(plan, kb)
    stores = set()
    for step in range(200):
        window = [StreamItem(n, Timestamp(n, str(n), True), f"<urn:x{n}> <urn:p> <urn:o{n}> .", n)
                  for n in range(step, step + 3)]  # fmt: skip
        answer = evaluator.evaluate([window])
        assert sorted(row["s"] for row in answer.rows) == sorted(f"<urn:x{n}>" for n in range(step, step + 3))
        stores.add(id(evaluator.store))
        assert len(evaluator.store) == 1 + 3  # the knowledge base's quad and the window's
    assert len(stores) > 1


class _CountingStore:
    """The endpoint's store, counting the whole graphs read from it (`quads_for_pattern` with no
    subject, predicate or object), by graph ("*" for all of the store)."""

    def __init__(self) -> None:
        self.store = ox.Store()
        self.reads: Counter[str] = Counter()

    def quads_for_pattern(self, *pattern: object) -> object:
        if all(term is None for term in pattern[:3]):
            self.reads["*" if pattern[3] is None else str(pattern[3])] += 1
        return self.store.quads_for_pattern(*pattern)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


@dataclass(frozen=True)
class _Match:
    """A continuous query's result graph, as the match sink writes it (metadata and one quad)."""

    number: int

    @property
    def iri(self) -> str:
        return f"urn:rsep:match:q:{self.number}"

    def nquads(self) -> str:
        iri = f"<{self.iri}>"
        return (f"{iri} <{RDF_TYPE}> <{RSEP}Match> <{MATCHES_GRAPH}> .\n"
                f"<urn:e{self.number}> <urn:p> \"{self.number}\" {iri} .\n")  # fmt: skip


def test_window_stores_copy_the_knowledge_base_without_reading_the_match_graphs(monkeypatch):
    """The soak's creep once match graphs pile up (issue 15): every rebuild of a worn window store
    copied the knowledge base by reading the endpoint's whole store, every match graph included
    (RocksDB's caches filled with it). The copy now reads the knowledge base's graphs only, and a
    worn store is rebuilt from its own copy while only result graphs were written since; a write
    of background data (here a named graph) is read again at the next rebuild, as before."""
    monkeypatch.setattr(windows, "REBUILD_FROM", 40)
    endpoint = _CountingStore()
    kb = KnowledgeBase(endpoint)  # type: ignore[arg-type]
    kb.update("INSERT DATA { <urn:x0> <urn:kb> 'static' . GRAPH <urn:g> { <urn:x0> <urn:in> <urn:g> } }")
    sink = OxigraphMatchSink(kb)
    assert sink.write([_Match(-1)])  # a match graph before the query starts
    evaluator = OxigraphWindows(plan_of(CSPARQL["sliding"], "c-sparql"), kb)
    stores = [evaluator.store]  # kept alive: ids of freed stores come back

    def run(steps: range) -> None:
        for step in steps:
            assert sink.write([_Match(step)])  # the endpoint's store grows by a graph a step
            window = [StreamItem(n, Timestamp(n, str(n), True), f"<urn:x{n}> <urn:p> <urn:o{n}> .", n)
                      for n in range(step, step + 3)]  # fmt: skip
            answer = evaluator.evaluate([window])
            assert sorted(row["s"] for row in answer.rows) == sorted(
                f"<urn:x{n}>" for n in range(step, step + 3)
            )
            if evaluator.store is not stores[-1]:
                stores.append(evaluator.store)

    def results_read() -> list[str]:
        return [graph for graph in endpoint.reads if graph == "*" or graph.startswith("<urn:rsep:")]

    run(range(100))
    assert len(stores) > 2  # rebuilt ...
    assert endpoint.reads["<urn:g>"] == 1 and not results_read()  # ... never from the endpoint's store
    assert not [q for q in evaluator.store if str(q.graph_name).startswith("<urn:rsep:")]  # no result copied
    x0, g = ox.NamedNode("urn:x0"), ox.NamedNode("urn:g")
    assert ox.Quad(x0, ox.NamedNode("urn:kb"), ox.Literal("static")) in evaluator.store
    assert ox.Quad(x0, ox.NamedNode("urn:in"), g, g) in evaluator.store
    h = ox.NamedNode("urn:h")
    with kb.writing(default_graph=False) as store:  # a Graph Store write of a named graph
        store.add(ox.Quad(ox.NamedNode("urn:y"), ox.NamedNode("urn:in"), h, h))
    run(range(100, 200))
    assert endpoint.reads["<urn:g>"] == 2 and not results_read()
    assert h in set(evaluator.store.named_graphs())
