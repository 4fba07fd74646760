"""Negation and optional inside sequences (SPAseq Appendix B and C.4, as
specified in docs/semantics.md)."""

import pytest

from rsep.plugin.compile.nfa_compiler import CompileError
from tests.nfa.patterns import compile_pattern, events_of, run


def test_negation_under_skip_till_next_forbids_the_element_in_the_gap():
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {"C": [{}]}), (4, {"A": [{}]}), (5, {"C": [{}]})]
    assert events_of(run("A ; B! ; C", events)) == [(3, 4)]


def test_negation_only_counts_compatible_occurrences():
    events = [(1, {"A": [{"x": "1"}]}), (2, {"B": [{"x": "2"}]}), (3, {"C": [{"x": "1"}]})]
    assert events_of(run("A ; B! ; C", events)) == [(0, 2)]


def test_negation_at_the_same_timestamp_as_a_neighbour_is_not_in_the_gap():
    events = [(1, {"A": [{}]}), (1, {"B": [{}]}), (2, {"C": [{}]}), (2, {"B": [{}]})]
    assert events_of(run("A ; B! ; C", events)) == [(0, 2)]


def test_negation_between_strict_strategies_allows_one_slot():
    # A, B!, C: C right after A, or after one slot that holds no B.
    events = [(1, {"A": [{}]}), (2, {}), (3, {"C": [{}]})]
    assert events_of(run("A , B! , C", events)) == [(0, 2)]
    events = [(1, {"A": [{}]}), (2, {"B": [{}]}), (3, {"C": [{}]})]
    assert events_of(run("A , B! , C", events)) == []
    events = [(1, {"A": [{}]}), (2, {}), (3, {}), (4, {"C": [{}]})]
    assert events_of(run("A , B! , C", events)) == []
    events = [(1, {"A": [{}]}), (2, {"C": [{}]})]
    assert events_of(run("A , B! , C", events)) == [(0, 1)]


def test_optional_takes_the_element_or_a_gap_without_it():
    events = [(1, {"A": [{}]}), (2, {"B": [{"b": "1"}]}), (3, {"C": [{}]}), (4, {"C": [{}]})]
    matches = run("A ; B? ; C", events)
    assert [(m.events, m.mapping) for m in matches] == [((0, 1, 2), {"b": "1"})]
    events = [(1, {"A": [{}]}), (2, {}), (3, {"C": [{}]})]
    assert events_of(run("A ; B? ; C", events)) == [(0, 2)]


def test_optional_between_strict_strategies():
    events = [(1, {"A": [{}]}), (2, {"A": [{}], "B": [{}]}), (3, {"C": [{}]})]
    assert events_of(run("A , B? , C", events)) == [(0, 1, 2), (1, 2)]


def test_optional_under_skip_till_any():
    events = [(1, {"A": [{}]}), (2, {}), (3, {"B": [{}]}), (4, {"C": [{}]})]
    assert events_of(run("A : B? : C", events)) == [(0, 2, 3)]


def test_two_consecutive_optionals():
    events = [(1, {"A": [{}]}), (2, {"C": [{}]}), (3, {"D": [{}]})]
    assert events_of(run("A , B? , C? , D", events)) == [(0, 1, 2)]
    events = [(1, {"A": [{}]}), (2, {}), (3, {}), (4, {"D": [{}]})]
    assert events_of(run("A , B? , C? , D", events)) == [(0, 3)]


@pytest.mark.parametrize("pattern", ["B! ; A", "B? , A", "A ; B!", "A , B?"])
def test_optional_or_negated_elements_need_both_neighbours(pattern):
    with pytest.raises(CompileError, match="needs an element"):
        compile_pattern(pattern)
