"""The Spark streaming job's logic without a SparkSession: reading the log from
an offset, reproducible batches, the per-key NFA with pending ranks and
timeouts, background snapshots. `simulation.Job` plays Spark's part."""

from __future__ import annotations

import functools
import itertools
import json
import pickle
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.results import Projector
from rsep.plugin.service.lifecycle import EngineWiring
from rsep.plugin.service.match_graphs import match_graph, match_iri
from rsep.plugin.service.runner import load_keyed
from rsep.plugin.spark.log_source import SnapshotFiles, read_log
from rsep.plugin.spark.stream_stages import (
    CLOCK_ROW,
    GPM_ROW,
    TIME_HIGH,
    TIME_LOW,
    event_time_seconds,
    plan_file,
    time_below_watermark,
    watermark_after,
)
from rsep.plugin.spark.streaming_engine import summary
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase
from tests.spark_streaming.simulation import QID, Job, event_time_micros
from tests.spark_streaming.support import INTERVAL_SEQ, KB_QUERY, spanning
from tests.support.events import OTHER, QUERIES, S1, S2, event, plan_of, records, reference
from tests.support.spark import knowledge_base


def appended(folder: Path, events, cuts=(), segment_size: int = 5) -> EventLog:
    """A log with `events` appended as requests cut at `cuts`."""
    log = EventLog(folder, segment_size=segment_size)
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(events)}), len(events)]
    for start, end in itertools.pairwise(bounds):
        log.append(events[start:end])
    return log


# --------------------------------------------------------------------------- the log


def test_reading_resumes_from_any_offset_across_segments(tmp_path):
    events = [event(i, f"e{i}") for i in range(13)]
    appended(tmp_path, events, cuts=[3, 4, 8, 9], segment_size=4)
    assert len(list(tmp_path.glob("*.jsonl"))) == 3
    everything = read_log(tmp_path, 0)
    assert [r.position for r in everything.records] == list(range(13))
    assert [r.event for r in everything.records] == events
    for cut in range(14):
        head = read_log(tmp_path, 0, stop=cut)
        tail = read_log(tmp_path, head.position, head.segment, head.byte)
        assert head.position == cut
        assert [r.position for r in head.records + tail.records] == list(range(13)), cut
        limited = read_log(tmp_path, cut, limit=2)  # finds the segment itself
        assert [r.position for r in limited.records] == list(range(cut, min(cut + 2, 13)))


def test_a_line_still_being_written_is_not_read(tmp_path):
    log = appended(tmp_path, [event(1, "a"), event(2, "b")], cuts=[1])
    (segment,) = tmp_path.glob("*.jsonl")
    line = '[2, [["urn:t:s1", "<urn:t:c>", 3.0, "3", true, ""]]]\n'
    with open(segment, "a") as handle:
        handle.write(line[:20])
    span = read_log(tmp_path, 0)
    assert span.position == 2 and len(span.records) == 2
    with open(segment, "a") as handle:
        handle.write(line[20:])
    rest = read_log(tmp_path, span.position, span.segment, span.byte)
    assert [(r.position, r.event.name) for r in rest.records] == [(2, "<urn:t:c>")]
    assert log.next_position == 2  # (the writer's own view is not ours to change)


# --------------------------------------------------------------------------- event time


def test_event_times_map_to_positive_pandas_timestamps_in_order():
    times = [TIME_LOW - 5, -1e9, -1.5, 0.0, 0.0005, 1.0, 1.7e9, 4e9, TIME_HIGH + 1]
    values = [event_time_seconds(t) for t in times]
    assert values == sorted(values) and values[0] > 0
    assert max(values) * 1e9 < 2**63  # nanoseconds fit pandas' datetime64[ns]


@pytest.mark.parametrize("seconds", [0.0, 0.0004, 1.0, 17.25, 1.7e9 + 0.123456, -3.5, 4.9e9])
def test_a_watermark_read_back_never_exceeds_the_newest_time(seconds):
    newest_ms = event_time_micros(seconds) // 1000
    for delay in (1,):
        now = time_below_watermark(newest_ms - delay)
        assert now is not None and now <= seconds
        assert seconds - now < 0.01
    timeout = watermark_after(seconds)
    assert time_below_watermark(timeout + 1) > seconds  # past the timeout, `seconds` is history
    assert time_below_watermark(0) is None


# --------------------------------------------------------------------------- the job


_KINDS = {S1: ["a", "c", "c"], S2: ["b", "b", "a"], OTHER: ["a", "b", "c"]}
_event = st.tuples(
    st.sampled_from([0, 0, 1, 1, 2, 9]),  # time increment: 0 repeats a timestamp, 9 outlives WITHIN
    st.sampled_from([S1, S1, S2, S2, OTHER]),
    st.sampled_from(["k1", "k1", "k2", "k3"]),
    st.integers(0, 2),
    st.integers(0, 4),
)


def _events(spec, start=0):
    time, out = start, []
    for i, (step, stream, key, kind, val) in enumerate(spec):
        time += step
        out.append(event(time, f"e{i}", stream, key, _KINDS[stream][kind], val))
    return out


def run_job(job: Job, log: EventLog, events, cuts, crashes=frozenset()):
    """Append `events` in requests cut at `cuts`, running every batch the job
    plans after each request; batches numbered in `crashes` are cut short
    once (run without commit, then run again by a new planner)."""
    found = {}
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(events)}), len(events)]
    for start, end in itertools.pairwise(bounds):
        log.append(events[start:end])
        while (offset := job.plan_batch()) is not None:
            if job.batches in crashes:
                job.run_batch(offset, commit=False)
                job.new_reader()
            matches, _ = job.run_batch(offset)
            for match, refs in matches:
                found[match_iri(QID, match)] = (match, refs)
    return found


@functools.cache
def plan_with(name: str, policy: str | None) -> QueryPlan:
    query = parse_event_query(QUERIES[name])
    return compile_query(query if policy is None else replace(query, consumption=ConsumptionPolicy(policy)))


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.lists(_event, min_size=1, max_size=22),
    cuts=st.lists(st.integers(1, 21), max_size=6),
    max_records=st.sampled_from([2, 3, 10_000]),
    crashes=st.sets(st.integers(0, 12), max_size=3),
    policy=st.sampled_from([None, None, "chronological", "recent"]),
)
def test_any_split_and_any_replayed_batch_give_the_matches_of_replay(
    name, spec, cuts, max_records, crashes, policy
):
    events = _events(spec)
    plan = plan_with(name, policy)
    expected = {match_iri(QID, m): m for m in reference(plan, records(events))}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log", segment_size=7)
        job = Job(plan, root / "log", root / "kb", max_records=max_records)
        found = run_job(job, log, events, cuts, crashes)
    assert sorted(found) == sorted(expected)
    for iri, (match, refs) in found.items():
        assert match.events == expected[iri].events
        assert [(r.position, r.name, r.time) for r in refs] == [
            (i, events[i].name, events[i].time) for i in match.events
        ]


def test_a_match_at_the_newest_timestamp_is_found_at_once():
    plan = plan_of("any")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log")
        job = Job(plan, root / "log", root / "kb")
        log.append([event(1, "a1", val=1), event(2, "c1", kind="c", val=2)])
        matches, end = job.run_batch(job.plan_batch())
        assert end == 2 and [refs[-1].name for _, refs in matches] == ["<urn:t:c1>"]
        log.append([event(2, "c2", kind="c", val=3)])  # the same timestamp, a later request
        matches, _ = job.run_batch(job.plan_batch())
        assert sorted(refs[-1].name for _, refs in matches) == ["<urn:t:c1>", "<urn:t:c2>"]
        assert [k for (_, k), v in job.state.items() if load_keyed(v, plan.automaton)[0].pending] == [
            '["<urn:t:k1>"]'
        ]


def test_keys_without_new_rows_expire_their_runs_and_close_their_pending_rank():
    plan = plan_of("kleene")  # WITHIN 6 SECONDS
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log")
        job = Job(plan, root / "log", root / "kb")
        log.append([event(1, "a1", key="k1", val=1), event(2, "b1", S2, key="k1", kind="b"),
                    event(3, "a2", key="k2", val=1)])  # fmt: skip
        job.run_batch(job.plan_batch())
        assert job.keys() == {'["<urn:t:k1>"]', '["<urn:t:k2>"]'}  # k2 only pending (rank 2 open)
        log.append([event(5, "x", OTHER)])
        job.run_batch(job.plan_batch())  # k2 gets no rows: its pending rank closes on its timeout...
        assert set(job.timeouts) == set(job.state)
        log.append([event(20, "y", OTHER)])
        job.run_batch(job.plan_batch())  # ... and once time 20 is seen, both keys' runs are past WITHIN
        log.append([event(21, "z", OTHER)])
        job.run_batch(job.plan_batch())
        assert job.state == {} and job.timeouts == {}


def test_events_at_time_zero_and_before_1970_are_not_dropped_as_late():
    plan = plan_of("any")
    events = [event(-5, "a0", val=0), event(0, "a1", val=1), event(0, "c0", kind="c", val=3),
              event(0, "c1", kind="c", val=2)]  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        job = Job(plan, root / "log", root / "kb")
        found = run_job(job, EventLog(root / "log"), events, cuts=[1, 2, 3])
    assert sorted(found) == sorted(match_iri(QID, m) for m in reference(plan, records(events)))
    assert len(found) == 2  # a0 with c0 and c1 (a1 shares their timestamp)


# --------------------------------------------------------------------------- background knowledge


def test_batches_follow_the_snapshot_their_offsets_name_also_when_replayed():
    plan = compile_query(parse_event_query(KB_QUERY))
    assert plan.gpms[0].kb_query is not None
    low = knowledge_base("<urn:low> <urn:holds> 1").snapshot(plan.gpms)
    high = knowledge_base("<urn:high> <urn:holds> 1").snapshot(plan.gpms)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = SnapshotFiles(root / "ck" / QID / "kb")
        log = EventLog(root / "log")
        job = Job(plan, root / "log", root / "ck")
        first = files.publish(pickle.dumps(low), "a" * 64, lambda i, _: job.ship_snapshot(QID, i, low))
        log.append([event(1, "a1", val=1), event(2, "c1", kind="c")])
        matches, _ = job.run_batch(job.plan_batch())
        assert [m.mapping["band"] for m, _ in matches] == ["<urn:low>"]
        log.append([event(3, "a2", val=1), event(4, "c2", kind="c")])
        end = job.plan_batch()
        second = files.publish(pickle.dumps(high), "b" * 64, lambda i, _: job.ship_snapshot(QID, i, high))
        assert (
            end["queries"][QID]["kb"] == first and files.current() == second
        )  # the KB changed after planning
        replayed, _ = job.run_batch(end, commit=False)
        job.new_reader()
        matches, _ = job.run_batch(end)
        assert [m.mapping["band"] for m, _ in replayed] == [m.mapping["band"] for m, _ in matches]
        log.append([event(5, "a3", val=1), event(6, "c3", kind="c")])
        matches, _ = job.run_batch(job.plan_batch())  # planned after: the new snapshot
        assert sorted({m.mapping["band"] for m, _ in matches}) == ["<urn:high>", "<urn:low>"]
        assert {m.events[0] for m, _ in matches if m.mapping["band"] == "<urn:high>"} == {4}
        assert files.ids() == [second]  # collected on commit


def test_no_snapshot_files_for_a_query_without_background():
    plan = plan_of("any")
    from rsep.plugin.spark.streaming_engine import KbPublisher

    with tempfile.TemporaryDirectory() as folder:
        publisher = KbPublisher(KnowledgeBase(), plan, Path(folder) / "kb")
        publisher.refresh()
        assert not publisher.needed and publisher.current_id == "" and not (Path(folder) / "kb").exists()


def test_a_publisher_writes_a_snapshot_only_when_the_answers_change(tmp_path):
    from rsep.plugin.spark.streaming_engine import KbPublisher

    plan = compile_query(parse_event_query(KB_QUERY))
    kb = knowledge_base("<urn:low> <urn:holds> 1")
    publisher = KbPublisher(kb, plan, tmp_path / "kb")
    publisher.refresh()
    first = publisher.current_id
    with kb.writing(default_graph=False):  # e.g. a match graph written: the version moves, the answers do not
        pass
    publisher.refresh()
    assert publisher.current_id == first
    kb.update("INSERT DATA { GRAPH <urn:kb> { <urn:two> <urn:holds> 2 } }")
    publisher.refresh()
    assert publisher.current_id != first and SnapshotFiles(tmp_path / "kb").current() == publisher.current_id
    again = KbPublisher(kb, plan, tmp_path / "kb")  # after a restart: the same content is not republished
    again.refresh()
    assert again.current_id == publisher.current_id


def test_a_snapshot_that_could_not_be_published_is_published_at_the_next_refresh(tmp_path):
    """A refresh that fails (a full disk, executors not reachable) leaves the version unread:
    the next refresh (the watcher's poll, the next write) publishes it, not the old one for ever."""
    from rsep.plugin.spark.streaming_engine import KbPublisher

    plan = compile_query(parse_event_query(KB_QUERY))
    kb = knowledge_base("<urn:low> <urn:holds> 1")
    failures: list[OSError] = []

    def ship(snapshot: str, path: Path) -> None:
        if failures:
            raise failures.pop()

    publisher = KbPublisher(kb, plan, tmp_path / "kb", ship)
    publisher.refresh()
    first = publisher.current_id
    kb.update("INSERT DATA { GRAPH <urn:kb> { <urn:two> <urn:holds> 2 } }")
    failures.append(OSError(28, "No space left on device"))
    with pytest.raises(OSError):
        publisher.refresh()
    publisher.refresh()
    assert publisher.current_id != first and SnapshotFiles(tmp_path / "kb").current() == publisher.current_id


def test_a_failure_is_summed_up_by_the_python_exception_line():
    message = (
        "An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
        '  File "x.py", line 3, in f\n    raise ValueError("bad")\nValueError: bad\n\n'
        "\tat py4j.Protocol.getReturnValue(Protocol.java:476)\n"
        "Caused by: org.apache.spark.SparkException: whatever\n"
    )
    assert summary(message) == "ValueError: bad"
    assert summary("just one line") == "just one line"


def test_a_query_without_within_keeps_its_runs_without_timeouts():
    plan = compile_query(parse_event_query(QUERIES["kleene"].replace("WITHIN 6 SECONDS\n", "")))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        job = Job(plan, root / "log", root / "kb")
        log = EventLog(root / "log")
        log.append([event(1, "a1", val=1), event(2, "x", OTHER)])
        job.run_batch(job.plan_batch())
        assert job.keys() == {'["<urn:t:k1>"]'} and job.timeouts == {}


def test_the_clock_range_constants_are_ordered():
    assert TIME_LOW < 0 < TIME_HIGH


def test_log_records_of_other_streams_still_move_the_position():
    plan = plan_of("any")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log")
        job = Job(plan, root / "log", root / "kb")
        log.append([event(1, "x", OTHER), event(2, "y", OTHER)])
        _, end = job.run_batch(job.plan_batch())
        assert end == 2 and job.offset["queries"][QID]["events"] == 0
        assert LogRecord(0, event(1, "x", OTHER)).position == 0


# --------------------------------------------------------------------------- the driver's half


class _Rows:
    """What `foreachBatch` gets, as far as the driver reads it (`toArrow().to_pylist()`)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def toArrow(self) -> _Rows:
        return self

    def to_pylist(self) -> list[dict]:
        return self.rows


def _match_row(plan: str, events: list[tuple[int, str, int]], mapping: dict[str, str]) -> dict:
    refs = [[position, f"<urn:t:{name}>", float(t), str(t), True] for position, name, t in events]
    return {"plan": plan, "kind": GPM_ROW, "events": [e[0] for e in events],
            "start_time": float(events[0][2]), "end_time": float(events[-1][2]), "start_rank": 0,
            "end_rank": len(events) - 1,
            "mapping": mapping, "refs": json.dumps(refs), "facts": None}  # fmt: skip


def _batch_row(plan: str, end: int, count: int) -> dict:
    return {"plan": "", "kind": CLOCK_ROW, "events": [], "start_time": 0.0, "end_time": 0.0,
            "start_rank": 0, "end_rank": 0, "mapping": {}, "refs": "[]",
            "facts": json.dumps({plan: [end, count]})}  # fmt: skip


def _driver(tmp_path: Path, kb: KnowledgeBase):
    """A Spark streaming engine that is never started (no Spark: only the driver's half),
    over state in `tmp_path`; a second one over the same folder is a restart."""
    from rsep.plugin.service.checkpoints import CheckpointStore
    from rsep.plugin.service.registry import Registry
    from rsep.plugin.spark.streaming_engine import SparkStreamingEngine
    from rsep.plugin.store.match_sink import OxigraphMatchSink

    parts = (EventLog(tmp_path / "log"), Registry(tmp_path / "queries"), CheckpointStore(tmp_path / "ck"))
    compiler = lambda q: compile_query(parse_event_query(q.text))  # noqa: E731
    return SparkStreamingEngine(
        EngineWiring(*parts, OxigraphMatchSink(kb), clock=lambda: "2026-01-01T00:00:00Z"), compiler, kb
    )


def test_select_distinct_rows_stay_reported_across_a_restart_of_the_driver(tmp_path):
    kb = KnowledgeBase()
    text = QUERIES["any"].replace("SELECT ?k ?v1 ?v2", "SELECT DISTINCT ?k")

    def engine():
        return _driver(tmp_path, kb)

    first = engine()
    query = first.wiring.registry.create(text, "spaseq", plan_of("any").streams, 0, {})
    first.register(query)
    subscription = first.listeners.subscribe(query.id)
    k1 = {"k": "<urn:t:k1>", "v1": '"1"', "v2": '"2"'}
    plan = first.slots.get(query.id).plan_id
    rows = [_match_row(plan, [(0, "a1", 1), (1, "c1", 2)], k1),
            _match_row(plan, [(0, "a1", 1), (2, "c2", 2)], k1), _batch_row(plan, 3, 3)]  # fmt: skip
    first._on_batch(_Rows(rows), 0)
    record = subscription.get(timeout=0)
    assert record is not None and record["bindings"] == {"k": "<urn:t:k1>"}
    assert subscription.get(timeout=0) is None  # the second match has the same row
    assert counts(first, query.id) == (3, 3, 1)  # position, events, matches

    second = engine()  # a restart: the driver's checkpoint holds DISTINCT's memory
    second.slots.load()
    assert counts(second, query.id) == (3, 3, 1)
    assert second.slots.get(query.id).plan_id == plan
    later = [_match_row(plan, [(0, "a1", 1), (4, "c3", 5)], {**k1, "v2": '"3"'}), _batch_row(plan, 5, 5)]
    second._on_batch(_Rows(later), 1)
    assert counts(second, query.id) == (5, 5, 1)
    assert len(graph_names(kb)) == 1


def test_limit_and_offset_keep_counting_across_a_restart_of_the_driver(tmp_path):
    """EP-SPARQL's LIMIT 2 OFFSET 1 on the Spark engine: the driver numbers the answers
    (rsep.plugin.results.Slice) and checkpoints the numbers, so after a restart the third
    answer is the last reported (forgetting them would skip it and report the fourth)."""
    kb = KnowledgeBase()
    text = 'SELECT ?k WHERE { ?k <urn:t:kind> "c" } LIMIT 2 OFFSET 1'

    def answer(position: int) -> dict:
        return _match_row(plan, [(position, f"c{position}", position)], {"k": f"<urn:t:k{position}>"})

    first = _driver(tmp_path, kb)
    query = first.wiring.registry.create(text, "ep-sparql", (), 0, {})
    first.register(query)
    plan = first.slots.get(query.id).plan_id
    subscription = first.listeners.subscribe(query.id)
    first._on_batch(_Rows([answer(1), answer(2), _batch_row(plan, 3, 2)]), 0)
    record = subscription.get(timeout=0)
    assert record is not None and record["bindings"] == {"k": "<urn:t:k2>"}
    assert subscription.get(timeout=0) is None

    second = _driver(tmp_path, kb)  # a restart: the driver's checkpoint holds the numbered answers
    second.slots.load()
    subscription = second.listeners.subscribe(query.id)
    second._on_batch(_Rows([answer(3), answer(4), _batch_row(plan, 5, 4)]), 1)
    record = subscription.get(timeout=0)
    assert record is not None and record["bindings"] == {"k": "<urn:t:k3>"}
    assert subscription.get(timeout=0) is None
    assert len(graph_names(kb)) == 2


def counts(engine, query_id: str) -> tuple[int, int, int]:
    progress = engine.progress(query_id)
    return progress.position, progress.events, progress.matches


def graph_names(kb: KnowledgeBase) -> list[str]:
    return [g for g in (str(n) for n in kb.store.named_graphs()) if "urn:rsep:match:" in g]


@pytest.mark.parametrize("max_records", [2, 10_000])
def test_interval_events_reach_the_keyed_nfa_and_the_match_graphs(max_records):
    """EP-SPARQL SEQ over a1 [1, 5], c1 [3, 8] (overlaps a1: no sequence, as points it would
    be one), c2 [6, 9], a2 at 10 and c3 [11, 12]: the streaming job finds the replay's matches,
    with the replay's interval starts, and its graphs start where the match does, as written."""
    plan = compile_query(parse_event_query(INTERVAL_SEQ, dialect="ep-sparql"))
    events = [spanning("1.0", 5, "a1", val=1), spanning("3", 8, "c1", kind="c", val=2),
              spanning("6", 9, "c2", kind="c", val=3), event(10, "a2", val=4),
              spanning("11", 12, "c3", kind="c", val=5)]  # fmt: skip
    expected = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase())).run(number_events([events]))
    assert [(m.events, m.start_time, m.end_time) for m in expected] == [
        ((0, 2), 1.0, 9.0),
        ((0, 4), 1.0, 12.0),
        ((3, 4), 10.0, 12.0),
    ]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log", segment_size=3)
        job = Job(plan, root / "log", root / "kb", max_records=max_records)
        found = run_job(job, log, events, cuts=[2, 4])
    assert sorted((match for match, _ in found.values()), key=Match.key) == expected
    projector = Projector.for_plan(plan)
    starts = {}
    for match, refs in found.values():
        assert [r.start for r in refs] == [events[i].start for i in match.events]
        graph = match_graph(QID, "urn:q", match, refs, projector, projector.project(match), "")
        starts[match.events] = graph.start.lexical
    assert starts == {(0, 2): "1.0", (0, 4): "1.0", (3, 4): "10"}


# --------------------------------------------------------------------------- one job, many queries


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.lists(_event, min_size=1, max_size=24),
    cuts=st.lists(st.integers(1, 23), max_size=6),
    joins=st.lists(
        st.tuples(st.sampled_from(sorted(QUERIES)), st.integers(0, 24), st.booleans()), min_size=1, max_size=4
    ),
    max_records=st.sampled_from([2, 3, 10_000]),
    crashes=st.sets(st.integers(0, 14), max_size=3),
)
def test_queries_registered_at_any_time_in_one_job_give_the_matches_of_replay(
    spec, cuts, joins, max_records, crashes
):
    """Queries join the running job after any request, each reading from the head of the log at
    its registration or from the start of the log (`from=0`, while the others stay at the head);
    batches are cut short and replayed: each finds `Replay`'s matches over its own events."""
    events = _events(spec)
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(events)}), len(events)]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log", segment_size=5)
        job = Job(None, root / "log", root / "ck", max_records=max_records)
        found: dict[str, set[str]] = {}
        starts: dict[str, tuple[str, int]] = {}
        for request, (start, end) in enumerate(itertools.pairwise(bounds)):
            for number, (name, after, history) in enumerate(joins):
                if min(after, len(bounds) - 2) == request:
                    query_id = f"q{number}"
                    starts[query_id] = (name, 0 if history else log.next_position)
                    plan_id = job.add(query_id, plan_of(name), starts[query_id][1])
                    found[plan_id] = set()
            log.append(events[start:end])
            while (offset := job.plan_batch()) is not None:
                if job.batches in crashes:
                    job.run_all(offset, commit=False)
                    job.new_reader()
                matches, _, errors = job.run_all(offset)
                assert not errors
                for plan_id, pairs in matches.items():
                    found[plan_id].update(match_iri(QID, m) for m, _ in pairs)
    for query_id, (name, start) in starts.items():
        expected = {match_iri(QID, m) for m in reference(plan_of(name), records(events)[start:])}
        assert found[job.entries[query_id].plan] == expected, (query_id, name, start)


def test_a_query_that_fails_is_failed_alone_and_an_unregistered_one_leaves_the_batches():
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        log = EventLog(root / "log")
        job = Job(plan_of("any"), root / "log", root / "ck")
        broken = job.add("broken", plan_of("strict"))
        leaving = job.add("leaving", plan_of("kleene"))
        job.files[plan_file(broken)] = b"not a plan"
        log.append([event(1, "a1", val=1), event(2, "c1", kind="c", val=2)])
        found, ends, errors = job.run_all(job.plan_batch())
        assert list(errors) == [broken] and "UnpicklingError" in errors[broken]
        assert len(found[job.entries[QID].plan]) == 1 and set(ends) == {
            job.entries[QID].plan,
            broken,
            leaving,
        }
        job.remove("leaving")
        job.remove("broken")  # what the driver does with a failed query
        log.append([event(3, "a2", val=1), event(4, "c2", kind="c", val=2)])
        found, ends, errors = job.run_all(job.plan_batch())
        assert not errors and set(ends) == {job.entries[QID].plan}
        assert set(job.offset["queries"]) == {QID}
