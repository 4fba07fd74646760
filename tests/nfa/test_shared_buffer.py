"""The shared buffer (rsep.plugin.nfa.shared_buffer) against the general runtime: on random
automata it runs (skip-till-any multiplying runs, WITHIN) and random streams, the same matches
in the same order, through the per-key step and its checkpoints too; memory linear in the
window where the general runtime's runs grow as n³; the per-timestamp match limit and its
report. Generators: tests/nfa/random_automata.py."""

from __future__ import annotations

import dataclasses
import pickle
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.buffer_state import BufferState
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, runtime_for
from rsep.plugin.nfa.lean_plan import buffered_eligible
from rsep.plugin.nfa.runs import NfaState, Run
from rsep.plugin.nfa.runtime import Runtime
from rsep.plugin.nfa.shared_buffer import BufferRuntime
from tests.nfa.keyed_steps import chunks, numbered, step_all
from tests.nfa.patterns import Event, compile_pattern, groups_of
from tests.nfa.random_automata import cases, groups, streams

SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@st.composite
def buffered_cases(draw: st.DrawFn):
    case = draw(cases(modifiers=("", "+", "+", "?", "!")))
    automaton = case.automaton
    if automaton.within is None:
        automaton = dataclasses.replace(automaton, within=float(draw(st.integers(2, 8))))
        case = dataclasses.replace(case, automaton=automaton)
    assume(buffered_eligible(automaton))
    return case


@SETTINGS
@given(data=st.data())
def test_the_shared_buffer_finds_the_general_runtimes_matches(data: st.DataObject) -> None:
    case = data.draw(buffered_cases())
    keyed = data.draw(st.booleans())
    events = data.draw(streams(case, ("<urn:k1>",) if keyed else ("<urn:k1>", "<urn:k2>"), size=16))
    general, buffered = Runtime(case.automaton), BufferRuntime(case.automaton, ("k",) if keyed else ())
    mine, theirs = general.new_state(), buffered.new_state()
    for part in chunks(data.draw, groups(case, events)):  # type: ignore[arg-type]
        mine, expected = general.process(mine, part)
        theirs, found = buffered.process(theirs, part)
        assert found == expected
        last = part[-1]
        mine = general.advance_time(mine, last.rank, last.time)
        theirs = buffered.advance_time(theirs, last.rank, last.time)
    assert isinstance(theirs, BufferState) and not theirs.truncated


@SETTINGS
@given(data=st.data())
def test_the_per_key_step_on_the_shared_buffer_finds_the_general_runtimes_matches(
    data: st.DataObject,
) -> None:
    case = data.draw(buffered_cases())
    events = data.draw(streams(case, ("<urn:k1>", "<urn:k2>"), size=18))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=3)))
    save = data.draw(st.none() | st.integers(0, 3))
    general = KeyedNfa(case.automaton, ("k",))
    general.runtime = Runtime(case.automaton)
    buffered = KeyedNfa(case.automaton, ("k",))
    assert isinstance(buffered.runtime, BufferRuntime)
    assert step_all(buffered, events, case, cuts, save) == step_all(general, events, case, cuts, save)


# ---------------------------------------------------------------------- memory


V_SHAPE = "A : B+ : C"


def v_shape(within: float = 1e9, iteration: SelectionStrategy | None = None, limit: int | None = None):
    automaton, index = compile_pattern(
        V_SHAPE, variables={"A": ["a"], "B": ["b"], "C": ["c"]}, within=within, kleene_iteration=iteration
    )
    return dataclasses.replace(automaton, match_limit=limit), index


def a_then_bs(n: int, c: bool = False) -> list[Event]:
    events: list[Event] = [(0.0, {"A": [{"a": "<a>"}]})]
    events += [(float(i), {"B": [{"b": f'"{i}"'}]}) for i in range(1, n + 1)]
    if c:
        events.append((float(n + 1), {"C": [{"c": "<c>"}]}))
    return events


def each_an_a_and_a_b(n: int) -> list[Event]:
    """n events each matching A and B (as every tick of the stock workload matches every GPM)."""
    return [(float(i), {"A": [{"a": f'"{i}"'}], "B": [{"b": f'"{i}"'}]}) for i in range(n)]


def test_the_shared_buffer_holds_the_window_where_runs_grow_as_n_cubed():
    """`SEQ (A: B+: C)` over n events that are each an A and a B, and no C: the general runtime
    holds a run per (A, first B, last B), n³/6, the buffer the 2n rows."""
    automaton, index = v_shape()
    assert buffered_eligible(automaton) and isinstance(runtime_for(automaton), BufferRuntime)
    held, runs = [], []
    for n in (10, 20, 40):
        buffered = BufferRuntime(automaton)
        state, found = buffered.process(buffered.new_state(), groups_of(each_an_a_and_a_b(n), index))
        assert not found and isinstance(state, BufferState) and state.run_count() == 0
        held.append(state.held())
        general = Runtime(automaton)
        runs.append(
            general.process(general.new_state(), groups_of(each_an_a_and_a_b(n), index))[0].run_count()
        )
    assert held == [20, 40, 80]  # linear: the rows
    assert runs[1] > 6 * runs[0] and runs[2] > 7 * runs[1]  # cubic: towards 8x per doubling


def test_the_window_lets_the_buffer_forget():
    automaton, index = v_shape(within=5.0)
    buffered = BufferRuntime(automaton)
    state = buffered.new_state()
    for group in groups_of(a_then_bs(50), index):
        state, _ = buffered.process(state, [group])
        state = buffered.advance_time(state, group.rank, group.time)
    assert isinstance(state, BufferState) and state.held() == 6  # times 45..50


# ---------------------------------------------------------------------- the limit


def test_a_timestamp_reports_at_most_the_limit_and_says_so(caplog):
    automaton, index = v_shape(limit=5)
    events = a_then_bs(6, c=True)
    general = Runtime(automaton)
    everything = general.process(general.new_state(), groups_of(events, index))[1]
    assert len(everything) == 21  # 6 + 5 + ... + 1 ways to pick the B's
    keyed = KeyedNfa(automaton, ())
    state = KeyedState()
    rows, numbered = _rows(events, index)
    found = keyed.step(state, rows, numbered, len(events) - 1, float(len(events) - 1))
    assert len(found) == 5 and all(m in everything for m in found)
    assert found == sorted(found, key=lambda m: everything.index(m))  # in detection order
    ((key, truncated),) = state.truncated
    assert (key, truncated.rank, truncated.reported) == ((), len(events) - 1, 5)
    (warning,) = [r for r in caplog.records if r.name == "rsep.nfa"]
    assert "5 matches reported, the limit per timestamp" in warning.getMessage()


def test_subsets_of_skip_till_any_occurrences_stay_bounded_by_the_limit():
    """Skip-till-any between Kleene+ occurrences: every subset of the 60 B's is a match with the
    C (about 2^60); the buffer reports the limit, quickly."""
    automaton, index = v_shape(iteration=SelectionStrategy.SKIP_TILL_ANY, limit=100)
    buffered = BufferRuntime(automaton)
    started = time.process_time()
    state, found = buffered.process(buffered.new_state(), groups_of(a_then_bs(60, c=True), index))
    assert len(found) == 100 and isinstance(state, BufferState) and len(state.truncated) == 1
    assert time.process_time() - started < 10


# ---------------------------------------------------------------------- checkpoints and fallback


def test_a_buffer_checkpoint_round_trips_and_goes_on():
    automaton, index = v_shape(within=100.0)
    events = a_then_bs(8, c=True)
    groups = groups_of(events, index)
    general = Runtime(automaton)
    expected = general.process(general.new_state(), groups)[1]
    buffered = BufferRuntime(automaton)
    state, _ = buffered.process(buffered.new_state(), groups[:5])
    data = pickle.loads(pickle.dumps(snapshot.encode({"k": state}, automaton)))
    assert data[0] == 6
    restored = snapshot.decode(data, automaton)["k"]
    assert isinstance(restored, BufferState)
    resumed = BufferRuntime(automaton)
    _, found = resumed.process(restored, groups[5:])
    assert found == [m for m in expected if m.end_rank >= groups[5].rank]


def test_runs_saved_before_the_shared_buffer_are_refused():
    automaton, _ = v_shape()
    state = NfaState(runs={1: [Run(1, {"a": "<a>"}, 0.0, 0, 0, ((0,), None))]})
    data = snapshot.encode({"k": state}, automaton)
    with pytest.raises(snapshot.StateMismatch, match="shared buffer"):
        snapshot.decode(data, automaton)
    assert snapshot.decode(snapshot.encode({"k": NfaState()}, automaton), automaton)["k"].last_rank == -1


def test_rows_the_plan_does_not_cover_replay_the_buffer_on_the_general_runtime():
    automaton, index = v_shape()
    events = a_then_bs(4)
    events.append((5.0, {"C": [{"c": "<c>", "surprise": "<s>"}]}))
    groups = groups_of(events, index)
    general = Runtime(automaton)
    expected = general.process(general.new_state(), groups)[1]
    buffered = BufferRuntime(automaton)
    state, first = buffered.process(buffered.new_state(), groups[:-1])
    state, found = buffered.process(state, groups[-1:])
    assert buffered.degraded and not first and found == expected and len(found) == 10


def _rows(events: list[Event], index: dict[str, int]):
    found, per_event = numbered(events, index)
    rows: dict[int, list] = {}
    for item in per_event:
        for gpm, items in item.items():
            rows.setdefault(gpm, []).extend(items)
    return rows, found
