"""QueryRunner: incremental numbering, batch-split independence, the open
rank, snapshots (long paths, DISTINCT), pruning."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.numbering import number_events, number_records
from rsep.plugin.service.match_graphs import MatchGraph, match_iri
from rsep.plugin.service.runner import QueryRunner, load_state
from tests.support.events import OTHER, QUERIES, S1, S2, clock, event, plan_of, records, reference, runner_for


def run_in_batches(runner: QueryRunner, log, cuts, restore_at=()) -> list[MatchGraph]:
    """Step through `log` cut at `cuts`; after the batches in `restore_at`,
    continue with a runner restored from a snapshot. Returns the distinct
    graphs, first occurrence kept (what the writer would create)."""
    created: dict[str, MatchGraph] = {}
    bounds = [0, *sorted(set(cuts)), len(log)]
    for index, (start, end) in enumerate(pairwise(bounds)):
        if start == end:
            continue
        for graph in runner.step(log[start:end]):
            created.setdefault(graph.iri, graph)
        if index in restore_at:
            runner = QueryRunner.restore(
                runner.query, runner.plan, runner.evaluator, runner.snapshot(), clock
            )
    return list(created.values())


# --------------------------------------------------------------------------- numbering


def test_rank_numbering_across_batches_equals_number_events():
    events = [
        event(1, "a", S1), event(1, "b", S2), event(2, "c", OTHER), event(3, "d", S2),
        event(3, "e", S1), event(3, "f", S1), event(7, "g", OTHER), event(8, "h", S1),
    ]  # fmt: skip
    log = records(events)
    expected = number_events([[e for e in events if e.stream != OTHER]])
    numbered, rank, time = [], -1, None
    for batch in (log[:1], log[1:4], log[4:5], log[5:]):
        found, rank, time = number_records(batch, {S1, S2}, rank, time)
        numbered.extend(found)
    assert [(n.rank, n.event.name) for n in numbered] == [(n.rank, n.event.name) for n in expected]
    assert [n.id for n in numbered] == [0, 1, 3, 4, 5, 7]  # log positions
    assert (rank, time) == (2, 8.0)


def test_numbering_rejects_time_going_backwards():
    with pytest.raises(ValueError, match="older"):
        number_records(records([event(2, "a"), event(1, "b")]), {S1}, -1, None)


# --------------------------------------------------------------------------- split independence

_KINDS = {S1: ["a", "c", "c"], S2: ["b", "b", "a"], OTHER: ["a", "b", "c"]}
_event = st.tuples(
    st.sampled_from([0, 0, 1, 1, 2]),  # time increment: 0 repeats a timestamp
    st.sampled_from([S1, S1, S2, S2, OTHER]),
    st.sampled_from(["k1", "k1", "k1", "k2"]),
    st.integers(0, 2),  # the kind, among those likely on the stream
    st.integers(0, 4),
)


def _events(spec):
    time, out = 0, []
    for i, (step, stream, key, kind, val) in enumerate(spec):
        time += step
        out.append(event(time, f"e{i}", stream, key, _KINDS[stream][kind], val))
    return out


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.lists(_event, min_size=1, max_size=24),
    cuts=st.lists(st.integers(0, 24), max_size=8),
    restore_at=st.sets(st.integers(0, 8), max_size=3),
)
def test_any_batch_split_gives_the_matches_of_replay(name, spec, cuts, restore_at):
    log = records(_events(spec))
    plan = plan_of(name)
    expected = {match_iri("0123456789abcdef", m): m for m in reference(plan, log)}
    found = run_in_batches(runner_for(name), log, [c for c in cuts if c <= len(log)], restore_at)
    assert sorted(g.iri for g in found) == sorted(expected)
    for graph in found:
        match = expected[graph.iri]
        assert graph.start.seconds == match.start_time and graph.end.seconds == match.end_time
        assert dict(graph.bindings) == {k: v for k, v in match.mapping.items() if k in graph.variables}


def _dense_log():
    return records([
        event(1, "a1", S1, "k1", "a", 1), event(1, "b1", S2, "k1", "b"), event(1, "a2", S1, "k2", "a", 0),
        event(2, "b2", S2, "k1", "b"), event(2, "b3", S2, "k2", "b"), event(2, "x1", OTHER),
        event(3, "c1", S1, "k1", "c", 3), event(3, "a3", S1, "k1", "a", 2), event(3, "b4", S2, "k1", "b"),
        event(4, "c2", S1, "k2", "c", 1), event(4, "c3", S1, "k1", "c", 4),
        event(5, "c4", S1, "k1", "c", 5), event(5, "x2", OTHER),
    ])  # fmt: skip


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_one_or_two_cuts_of_a_dense_log_give_the_matches_of_replay(name):
    log = _dense_log()
    expected = sorted(match_iri("0123456789abcdef", m) for m in reference(plan_of(name), log))
    assert expected
    splits = [[i] for i in range(1, len(log))] + [
        [i, j] for i in range(1, len(log)) for j in range(i + 2, len(log), 3)
    ]
    for cuts in splits:
        found = run_in_batches(runner_for(name), log, cuts, restore_at={0})
        assert sorted(g.iri for g in found) == expected, cuts


# --------------------------------------------------------------------------- the open rank


def test_the_newest_timestamp_is_reported_at_once_and_completed_later():
    runner = runner_for("any")
    first = runner.step(records([event(1, "a1", val=1), event(2, "c1", kind="c", val=2)]))
    assert [g.derived_from for g in first] == [("urn:t:a1", "urn:t:c1")]  # no need to wait for time 3
    assert runner.state.keyed.closed_rank == 0 and runner.state.last_rank == 1  # rank 1 is still open
    # another event at time 2 arrives in a later request: rank 1 grows
    second = runner.step(records([event(2, "c2", kind="c", val=3)], first=2))
    assert sorted(g.derived_from for g in second) == [("urn:t:a1", "urn:t:c1"), ("urn:t:a1", "urn:t:c2")]
    assert {g.iri for g in first} <= {g.iri for g in second}  # reported again, same graph
    # an event of a stream the query does not read closes rank 1
    runner.step(records([event(3, "x", OTHER)], first=3))
    assert runner.state.keyed.closed_rank == 1 and runner.state.keyed.pending == {}


def test_tentative_processing_does_not_change_the_committed_states():
    open_runner = runner_for("any")
    open_runner.step(records([event(1, "a1", val=1), event(2, "a2", val=2), event(3, "c1", kind="c", val=5)]))
    assert len(open_runner.state.keyed.pending) == 1  # time 3 was processed tentatively (two matches)
    closed_runner = runner_for("any")
    closed_runner.step(records([event(1, "a1", val=1), event(2, "a2", val=2), event(2.5, "x", OTHER)]))
    assert closed_runner.state.keyed.closed_rank == open_runner.state.keyed.closed_rank == 1
    assert _runs(open_runner) == _runs(closed_runner)


def _runs(runner):
    return {
        key: sorted(
            (r.state, sorted(r.mapping.items()), r.start_rank, r.last_rank)
            for rs in nfa.runs.values()
            for r in rs
        )
        for key, nfa in runner.state.keyed.states.items()
    }


def test_step_must_continue_where_the_runner_stopped():
    runner = runner_for("any")
    runner.step(records([event(1, "a")]))
    with pytest.raises(ValueError, match="expected log position 1, got 5"):
        runner.step(records([event(2, "b")], first=5))


# --------------------------------------------------------------------------- snapshots


def test_a_snapshot_holds_kleene_runs_longer_than_pickle_can_recurse():
    text = QUERIES["kleene"].replace("WITHIN 6 SECONDS\n", "")
    plan = compile_query(parse_event_query(text))
    runner = runner_for("kleene", plan)
    bs = [event(i, f"b{i}", S2, kind="b") for i in range(1, 2501)]
    log = records([event(0, "a", val=1), *bs])
    runner.step(log)
    restored = QueryRunner.restore(runner.query, plan, runner.evaluator, runner.snapshot(), clock)
    end = records([event(2501, "c", kind="c", val=3)], first=len(log))
    (graph,) = restored.step(end)
    assert len(graph.derived_from) == 2502
    assert graph.bindings == {"k": "<urn:t:k1>", "v1": f'"1"^^<{XSD}integer>', "v2": f'"3"^^<{XSD}integer>'}


XSD = "http://www.w3.org/2001/XMLSchema#"


def test_distinct_rows_stay_reported_across_a_restore():
    text = QUERIES["any"].replace("SELECT ?k ?v1 ?v2", "SELECT DISTINCT ?k")
    plan = compile_query(parse_event_query(text))
    runner = runner_for("any", plan)
    first = runner.step(records([event(1, "a1"), event(2, "c1", kind="c", val=1), event(3, "x", OTHER)]))
    restored = QueryRunner.restore(runner.query, plan, runner.evaluator, runner.snapshot(), clock)
    second = restored.step(records([event(4, "c2", kind="c", val=2), event(5, "y", OTHER)], first=3))
    assert [g.bindings for g in first] == [{"k": "<urn:t:k1>"}]
    assert second == []


def test_limit_and_offset_count_answers_across_steps_restores_and_an_open_rank():
    """EP-SPARQL's LIMIT/OFFSET on the endpoint: the answers numbered 2 and 3 in detection
    order, with a restore in between and the open rank 2 re-reported once closed (its
    answer keeps its number: rsep.plugin.results.Slice)."""
    text = 'SELECT ?k WHERE { ?k <urn:t:kind> "c" } LIMIT 2 OFFSET 1'
    plan = compile_query(parse_event_query(text, dialect="ep-sparql"))
    runner = runner_for("any", plan)
    first = runner.step(records([event(1, "c1", key="k1", kind="c"), event(2, "c2", key="k2", kind="c")]))
    restored = QueryRunner.restore(runner.query, plan, runner.evaluator, runner.snapshot(), clock)
    later = [event(2, "c3", key="k3", kind="c"), event(3, "c4", key="k4", kind="c"), event(4, "x", OTHER)]
    second = restored.step(records(later, first=2))
    assert [g.bindings["k"] for g in first] == ["<urn:t:k2>"]
    assert [g.bindings["k"] for g in second] == ["<urn:t:k2>", "<urn:t:k3>"]  # the writer skips k2's again
    assert len(load_state(restored.snapshot()).numbered) == 3


def test_events_a_join_group_remembers_are_not_forgotten():
    """An EP-SPARQL BGP is a join group: an occurrence may join with one that comes many
    steps later, so pruning keeps the events the group remembers (the "a" at 2400 meets the
    "z" at 2450) while those the window let it forget go."""
    window = 'FILTER(getDURATION() < "PT100S"^^<http://www.w3.org/2001/XMLSchema#dayTimeDuration>)'
    text = f'SELECT ?k WHERE {{ ?k <urn:t:kind> "a" . ?k <urn:t:val> ?v . ?k <urn:t:kind> "z" {window} }}'
    plan = compile_query(parse_event_query(text, dialect="ep-sparql"))
    runner = runner_for("any", plan)
    log = records(
        [*(event(i, f"b{i}", key=f"b{i}", kind="b") for i in range(2400)), event(2400, "a", key="k0"),
         event(2450, "z", key="k0", kind="z"), event(2451, "end", OTHER, kind="b")]
    )  # fmt: skip
    found = [graph for start in range(0, len(log), 500) for graph in runner.step(log[start : start + 500])]
    assert runner.state.kept_after_prune < 200  # the window's occurrences, when last pruned
    assert [(g.bindings, [ref.split(":")[-1].rstrip(">") for ref in g.derived_from]) for g in found] == [
        ({"k": "<urn:t:k0>"}, ["a", "z"])
    ]


def test_snapshot_round_trip_keeps_counts_and_position():
    runner = runner_for("strict")
    runner.step(records([event(1, "a1"), event(2, "c1", kind="c", val=1)]))
    runner.created(1)
    state = load_state(runner.snapshot())
    assert (state.position, state.event_count, state.match_count) == (2, 2, 1)
    assert state.keyed.pending.keys() == runner.state.keyed.pending.keys()


def test_events_no_run_refers_to_are_forgotten():
    runner = runner_for("strict")  # SEQ (A, C): every "a" starts a run that the next event ends
    log = records([event(i, f"a{i}", val=i) for i in range(5000)])
    for start in range(0, len(log), 500):
        runner.step(log[start : start + 500])
    assert len(runner.state.events) < 2100
    assert runner.state.event_count == 5000
