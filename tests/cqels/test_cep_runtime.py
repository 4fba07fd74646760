"""CQELS-CEP's negated SEQ elements on the NFA runtime (rsep.plugin.compile.interval_patterns), driven
directly with explicit event groups: SEQ_WO, NO_HEAD and NO_TAIL as §4.2 defines them, with the
negative event on each boundary, and NO_TAIL settled at an evaluation time."""

from __future__ import annotations

import pytest

from rsep.plugin.algebra.events import (
    EventJoin,
    EventPattern,
    GraphPatternEvent,
    Negation,
    SelectionStrategy,
    Sequence,
)
from rsep.plugin.algebra.sparql import GroupPattern
from rsep.plugin.compile.interval_patterns import compile_interval_automaton
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.query_plan import collect_gpms
from rsep.plugin.nfa.runtime import Group, NfaState, Runtime

ANY = SelectionStrategy.SKIP_TILL_ANY
K = {"x": "<k>"}


def g(name: str) -> GraphPatternEvent:
    return GraphPatternEvent(name, ("w",), GroupPattern())


def seq(*elements: EventPattern) -> Sequence:
    return Sequence(elements, tuple(ANY for _ in elements[1:]))


class Driver:
    """Compiles a pattern over GPMs named A, B, N, ... and feeds (time, GPM, mapping) events."""

    def __init__(self, pattern: EventPattern) -> None:
        names = [gpm.name for gpm in collect_gpms(pattern)]
        self.index = {name: i for i, name in enumerate(names)}
        self.runtime = Runtime(compile_interval_automaton(pattern, self.index, tuple(() for _ in names)))
        self.state: NfaState = self.runtime.new_state()
        self.rank = -1
        self.ids = 0

    def feed(self, time: float, *events: tuple[str, dict[str, str]]) -> set[tuple[float, float]]:
        self.rank += 1
        rows: dict[int, list[tuple[int, dict[str, str]]]] = {}
        for name, mapping in events:
            rows.setdefault(self.index[name], []).append((self.ids, mapping))
            self.ids += 1
        self.state, matches = self.runtime.process(self.state, [Group(self.rank, time, rows)])
        return {(m.start_time, m.end_time) for m in matches}

    def settle(self, time: float) -> set[tuple[float, float]]:
        return {(m.start_time, m.end_time) for m in self.runtime.settle(self.state, time)}


def replay(
    pattern: EventPattern, events: list[tuple[float, str, dict[str, str]]]
) -> set[tuple[float, float]]:
    driver = Driver(pattern)
    found: set[tuple[float, float]] = set()
    for time in sorted({t for t, _, _ in events}):
        found |= driver.feed(time, *((name, m) for t, name, m in events if t == time))
    return found


@pytest.mark.parametrize(
    ("negative", "blocked"),
    [(1, False), (2, True), (4, True), (6, True), (7, False)],
    ids=["before-t2", "at-t2", "between", "at-t5", "after-t5"],
)
def test_seq_wo_forbids_a_negative_within_the_closed_gap(negative, blocked):
    """SEQ_WO(Ω1, Ω2, Ω3): no compatible µ2 with [t3, t4] ⊆ [t2, t5] (A ends at 2, B starts at 6)."""
    pattern = seq(g("A"), Negation(g("N")), g("B"))
    found = replay(pattern, [(2, "A", K), (negative, "N", K), (6, "B", K)])
    assert found == (set() if blocked else {(2, 6)})


def test_seq_wo_checks_compatibility_with_both_sides():
    """µ2 must be compatible with µ1 ∪ µ3: here ?y is bound by B only."""
    pattern = seq(g("A"), Negation(g("N")), g("B"))
    left, right = {"x": "<k>"}, {"x": "<k>", "y": "<1>"}
    other = replay(pattern, [(2, "A", left), (4, "N", {"y": "<2>"}), (6, "B", right)])
    same = replay(pattern, [(2, "A", left), (4, "N", {"y": "<1>"}), (6, "B", right)])
    assert other == {(2, 6)} and same == set()


@pytest.mark.parametrize(("negative", "blocked"), [(1, True), (2, False), (3, False)])
def test_no_head_forbids_a_negative_ending_before_the_start(negative, blocked):
    """NO_HEAD(Ω1, Ω2): no compatible µ1 with t2 < t3 (the sequence starts at 2)."""
    pattern = seq(Negation(g("N")), g("A"), g("B"))
    found = replay(pattern, [(negative, "N", K), (2, "A", K), (4, "B", K)])
    assert found == (set() if blocked else {(2, 4)})


def test_no_tail_is_settled_at_evaluation_time_not_at_detection():
    """NO_TAIL(Ω1, Ω2, t): no compatible µ2 with t2 < t3 and t4 <= t (the sequence ends at 4)."""
    driver = Driver(seq(g("A"), g("B"), Negation(g("N"))))
    assert driver.feed(2, ("A", K)) == set()
    assert driver.feed(4, ("B", K), ("N", K)) == set()  # complete, but only settle() decides
    assert driver.settle(4) == {(2, 4)}  # a negative at the end itself is not after it
    assert driver.feed(6, ("N", {"x": "<other>"})) == set()
    assert driver.settle(6) == {(2, 4)}  # incompatible
    driver.feed(7, ("N", K))
    assert driver.settle(6.5) == {(2, 4)}  # the negative at 7 is after t = 6.5
    assert driver.settle(7) == set()
    assert driver.state.pending == []  # blocked for good


def test_no_tail_ignores_a_negative_inside_the_sequence():
    driver = Driver(seq(g("A"), g("B"), Negation(g("N"))))
    for time, event in [(2, ("A", K)), (3, ("N", K)), (4, ("B", K))]:
        driver.feed(time, event)
    assert driver.settle(4) == {(2, 4)}


def test_a_positive_sequence_needs_strictly_later_intervals():
    """SEQ(Ω1, Ω2): t2 < t3; two events at one time are not in sequence."""
    assert replay(seq(g("A"), g("B")), [(2, "A", K), (2, "B", K)]) == set()
    assert replay(seq(g("A"), g("B")), [(2, "A", K), (3, "B", K)]) == {(2, 3)}


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (seq(g("A"), Negation(g("N")), Negation(g("M")), g("B")), "at most one negated element"),
        (Sequence((Negation(g("N")),), ()), "needs a positive element"),
        (Negation(g("N")), "is an element of a SEQ"),
        (seq(g("A"), Negation(seq(g("B"), Negation(g("N")))), g("C")), "cannot itself hold"),
        (EventJoin((g("A"), g("B")), intersect=True), "evaluated by the window runtime"),
    ],
)
def test_patterns_the_compiler_rejects(pattern, message):
    index = {gpm.name: i for i, gpm in enumerate(collect_gpms(pattern))}
    with pytest.raises(CompileError, match=message):
        compile_interval_automaton(pattern, index, tuple(() for _ in index))
