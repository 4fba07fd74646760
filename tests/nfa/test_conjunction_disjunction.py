"""Conjunction (Def. 8, same timestamp) and disjunction (Def. 9)."""

from tests.nfa.patterns import events_of, run

# Example 4: S1 power events at 10 and 25, S2 weather events at 10 and 20.
EX4 = [
    (10, {"P1": [{"h": ":H1", "l": ":L1"}]}),
    (10, {"P2": [{"w": ":W1", "l": ":L1"}]}),
    (20, {"P2": [{"w": ":W2", "l": ":L1"}]}),
    (25, {"P1": [{"h": ":H3", "l": ":L2"}]}),
]


def test_example4_conjunction_needs_the_same_timestamp():
    matches = run("P1 & P2", EX4)
    assert [(m.end_time, m.mapping) for m in matches] == [(10, {"h": ":H1", "l": ":L1", "w": ":W1"})]
    assert events_of(matches) == [(0, 1)]


def test_conjunction_operands_must_be_compatible():
    events = [(10, {"P1": [{"l": ":L1"}]}), (10, {"P2": [{"l": ":L2"}]})]
    assert run("P1 & P2", events) == []


def test_one_event_may_satisfy_several_operands():
    events = [(10, {"P1": [{"a": "1"}], "P2": [{"b": "2"}]})]
    assert events_of(run("P1 & P2", events)) == [(0,)]


def test_conjunction_inside_a_sequence():
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (2, {"C": [{}]}), (3, {"D": [{}]})]
    assert events_of(run("A, (B & C), D", events)) == [(0, 1, 2, 3)]
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {"C": [{}]}), (4, {"D": [{}]})]
    assert run("A; (B & C); D", events) == []


def test_example5_disjunction_is_the_union():
    matches = run("P1 | P2", EX4)
    assert [(m.end_time, m.events) for m in matches] == [(10, (0,)), (10, (1,)), (20, (2,)), (25, (3,))]


def test_disjunction_inside_a_sequence():
    events = [(1, {"A": [{}]}), (2, {"C": [{}]}), (3, {"D": [{}]}), (4, {"B": [{}]}), (5, {"D": [{}]})]
    assert events_of(run("A ; (B | C) ; D", events)) == [(0, 1, 2)]
    assert events_of(run("A : (B | C) : D", events)) == [(0, 1, 2), (0, 1, 4), (0, 3, 4)]


def test_identical_disjunct_matches_are_reported_once():
    events = [(1, {"A": [{}]}), (2, {"B": [{"x": "1"}], "C": [{"x": "1"}]})]
    assert events_of(run("A , (B | C)", events)) == [(0, 1)]
