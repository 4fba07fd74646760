"""Kleene+ (SPAseq Defs. 13-14, Algorithm 3, Example 9)."""

from rsep.plugin.algebra.events import SelectionStrategy
from tests.nfa.patterns import events_of, run

# Example 9: power events on S1 at 10 and 25, weather events on S2 at 15 and 20.
EX9 = [
    (10, {"P1": [{"h": ":H1", "p": ":Pw1", "l": ":L1"}]}),
    (15, {"P2": [{"w": ":W1", "v": ":Vl1", "l": ":L1"}]}),
    (20, {"P2": [{"w": ":W2", "v": ":Vl2", "l": ":L1"}]}),
    (25, {"P1": [{"h": ":H2", "p": ":Pw2", "l": ":L2"}]}),
]
VARS = {"P1": ("h", "p", "l"), "P2": ("w", "v", "l")}


def test_example9_kleene_rebinds_its_own_variables():
    matches = run("P1 ; P2+", EX9, variables=VARS)
    assert [(m.end_time, m.mapping["h"], m.mapping["w"], m.mapping["v"]) for m in matches] == [
        (15, ":H1", ":W1", ":Vl1"),
        (20, ":H1", ":W2", ":Vl2"),
    ]
    assert events_of(matches) == [(0, 1), (0, 1, 2)]


def test_variables_shared_with_earlier_elements_stay_compatible():
    events = [
        (1, {"A": [{"l": ":L1"}]}),
        (2, {"B": [{"l": ":L1", "w": "1"}]}),
        (3, {"B": [{"l": ":L2", "w": "2"}]}),
    ]
    matches = run("A ; B+", events, variables={"A": ("l",), "B": ("l", "w")})
    assert events_of(matches) == [(0, 1)]


def test_every_number_of_occurrences_is_reported():
    events = [(1, {"A": [{}]})] + [(t, {"B": [{}]}) for t in (2, 3, 4)] + [(5, {"C": [{}]})]
    assert events_of(run("A , B+ , C", events)) == [(0, 1, 2, 3, 4)]
    assert events_of(run("A , B+ ; C", events)) == [(0, 1, 2, 3, 4), (0, 1, 2, 4), (0, 1, 4)]


def test_occurrences_inside_a_sequence_are_strictly_contiguous_def14():
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {}), (4, {"B": [{}]}), (5, {"C": [{}]})]
    assert events_of(run("A ; B+ ; C", events)) == [(0, 1, 4)]


def test_leading_kleene_occurrences_skip_till_next_def13():
    events = [(1, {"B": [{}]}), (2, {}), (3, {"B": [{}]}), (4, {"C": [{}]})]
    assert events_of(run("B+ , C", events)) == [(0, 2, 3), (2, 3)]


def test_iteration_strategy_is_a_parameter_of_the_algebra():
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {}), (4, {"B": [{}]}), (5, {"C": [{}]})]
    matches = run("A ; B+ ; C", events, kleene_iteration=SelectionStrategy.SKIP_TILL_NEXT)
    assert events_of(matches) == [(0, 1, 3, 4), (0, 1, 4)]


def test_kleene_as_last_element_reports_each_prefix():
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {"B": [{}]})]
    assert events_of(run("A , B+", events)) == [(0, 1), (0, 1, 2)]


def test_partition_key_variables_are_not_rebound_in_a_leading_kleene():
    events = [
        (1, {"B": [{"k": "1", "x": "a"}]}),
        (2, {"B": [{"k": "2", "x": "b"}]}),
        (3, {"C": [{"k": "2"}]}),
    ]
    options = {"variables": {"B": ("k", "x"), "C": ("k",)}}
    assert events_of(run("B+ ; C", events, key=("k",), **options)) == [(1, 2)]
