"""One versioned checkpoint format (rsep.plugin.service.checkpoints): plain data for every kind,
and the formats before it still read, so that existing data directories keep working."""

from __future__ import annotations

import pickle
from dataclasses import asdict
from pathlib import Path

import pytest

from rsep.plugin.service import checkpoints
from rsep.plugin.service.runner import dump_keyed, load_keyed, load_state
from rsep.plugin.service.window_runner import WindowState, dump_window_state, load_window_state
from tests.support.events import event, plan_of, records, runner_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"


def test_a_runner_checkpoint_is_plain_data_that_round_trips():
    runner = runner_for("any")
    runner.step(records([event(1, "a1", val=1), event(2, "c1", kind="c", val=2)]))
    payload = runner.snapshot()
    assert payload.startswith(checkpoints.HEADER) and b"rsep.plugin" not in payload  # no class names
    state = load_state(payload, runner.plan.automaton)
    assert (state.position, state.last_rank, state.event_count) == (2, 1, 2)
    assert state.keyed.pending.keys() == runner.state.keyed.pending.keys()
    assert state.events.keys() == runner.state.events.keys()
    assert load_state(state_payload := runner.snapshot()).position == 2 and state_payload == payload


def test_a_keyed_checkpoint_round_trips():
    runner = runner_for("any")
    runner.step(records([event(1, "a1", val=1), event(2, "a2", val=2)]))
    keyed, events = load_keyed(
        dump_keyed(runner.state.keyed, runner.state.events, runner.plan.automaton), None
    )
    assert keyed.closed_rank == runner.state.keyed.closed_rank
    assert keyed.run_count() == runner.state.keyed.run_count()
    assert events.keys() == runner.state.events.keys()


def test_a_payload_that_names_a_class_is_refused():
    sneaky = checkpoints.HEADER + pickle.dumps((checkpoints.FORMAT, "runner", {"x": Path("/")}))
    with pytest.raises(checkpoints.CheckpointFormatError, match="unreadable runner checkpoint"):
        checkpoints.decode(sneaky, "runner")


def test_a_payload_of_another_kind_is_refused():
    payload = dump_window_state(WindowState(3, 3))
    with pytest.raises(checkpoints.CheckpointFormatError, match="a window checkpoint, not a runner one"):
        load_state(payload)


def test_the_window_format_before_this_one_is_read():
    fields = asdict(WindowState(7, 9, first=1, done=2, event_count=4))
    older = pickle.dumps(("rsep-window-runner", 1, fields))
    assert load_window_state(older) == WindowState(7, 9, first=1, done=2, event_count=4)


def test_a_runner_checkpoint_of_the_format_before_this_one_is_read():
    """The fixture (tests/fixtures/checkpoints/README.md) is what rsep at 20a54a4 wrote: format 2,
    rsep's own classes pickled. Without an automaton to check it against, it reads whole."""
    state = load_state((FIXTURES / "epsparql-bgp-chronological-format4.ckpt").read_bytes())
    assert state.position == 2 and state.event_count == 2
    assert {n.event.name for n in state.events.values()} == {
        "<http://example.org/g0>",
        "<http://example.org/g1>",
    }
    assert state.keyed.run_count() > 0


def test_an_older_checkpoint_names_modules_that_moved_and_nothing_else():
    older = pickle.dumps(plan_of("any").automaton)  # classes of today's modules: allowed
    assert checkpoints.load_pickle(older) == plan_of("any").automaton
    with pytest.raises(pickle.UnpicklingError, match="never pickles"):
        checkpoints.load_pickle(pickle.dumps(Path("/")))
