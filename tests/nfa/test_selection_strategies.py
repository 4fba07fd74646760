"""Sequences under the three selection strategies (SPAseq Defs. 10-12, Fig. 1,
Examples 6-8), with exact match sets."""

from tests.nfa.patterns import events_of, run

# Fig. 1 (a): a1 b1 c1 a2 a3 b2 c2 at times 1..7; event ids are list positions.
FIG1 = [
    (1, {"A": [{}]}),
    (2, {"B": [{}]}),
    (3, {"C": [{}]}),
    (4, {"A": [{}]}),
    (5, {"A": [{}]}),
    (6, {"B": [{}]}),
    (7, {"C": [{}]}),
]


def test_fig1_strict_contiguity_follows_def12():
    # The figure lists only {a1,b1,c1}; Def. 12 also admits {a3,b2,c2} (5, 6, 7
    # are contiguous). We follow the definition (docs/semantics.md).
    assert events_of(run("A, B, C", FIG1)) == [(0, 1, 2), (4, 5, 6)]


def test_fig1_skip_till_next():
    assert events_of(run("A; B; C", FIG1)) == [(0, 1, 2), (3, 5, 6), (4, 5, 6)]


def test_fig1_skip_till_any_follows_def10():
    # The figure omits {a1,b1,c2}, which Def. 10 admits (1 < 2 < 7).
    assert events_of(run("A: B: C", FIG1)) == [(0, 1, 2), (0, 1, 6), (0, 5, 6), (3, 5, 6), (4, 5, 6)]


H1 = {"h": ":H1", "p": ":Pw1", "l": ":L1"}
H2 = {"h": ":H2", "p": ":Pw2", "l": ":L1"}
W1_L2 = {"w": ":W1", "v": ":Vl1", "l": ":L2"}
W1_L1 = {"w": ":W1", "v": ":Vl1", "l": ":L1"}
W2_L1 = {"w": ":W2", "v": ":Vl2", "l": ":L1"}
# Examples 6-8: power events on S1 at 10 and 15, weather events on S2 at 15, 20, 25.
EX6 = [
    (10, {"P1": [H1]}),
    (15, {"P1": [H2]}),
    (15, {"P2": [W1_L2]}),
    (20, {"P2": [W1_L1]}),
    (25, {"P2": [W2_L1]}),
]


def _rows(matches):
    return [(m.end_time, m.mapping["h"], m.mapping["w"], m.mapping["v"]) for m in matches]


def test_example6_skip_till_any_follows_def10():
    # The paper's last row shows :W1/:Vl1 at 25; the event at 25 is :W2/:Vl2.
    assert sorted(_rows(run("P1 : P2", EX6))) == [
        (20, ":H1", ":W1", ":Vl1"),
        (20, ":H2", ":W1", ":Vl1"),
        (25, ":H1", ":W2", ":Vl2"),
        (25, ":H2", ":W2", ":Vl2"),
    ]


def test_example7_skip_till_next_takes_first_compatible():
    # W1 at 15 has ?l = :L2, incompatible with both power events: skipped.
    assert _rows(run("P1 ; P2", EX6)) == [(20, ":H1", ":W1", ":Vl1"), (20, ":H2", ":W1", ":Vl1")]


def test_example8_strict_contiguity_over_the_streamset():
    # H1 at 10 is followed (at 15) by an incompatible weather event: no match.
    assert _rows(run("P1 , P2", EX6)) == [(20, ":H2", ":W1", ":Vl1")]


def test_strict_contiguity_is_broken_by_an_event_that_matches_nothing():
    events = [(1, {"A": [{}]}), (2, {}), (3, {"B": [{}]})]
    assert events_of(run("A, B", events)) == []
    assert events_of(run("A; B", events)) == [(0, 2)]


def test_events_at_the_same_timestamp_do_not_break_contiguity():
    events = [(1, {"A": [{}]}), (1, {}), (2, {}), (2, {"B": [{}]})]
    assert events_of(run("A, B", events)) == [(0, 3)]


def test_sequence_needs_strictly_later_events():
    events = [(1, {"A": [{}], "B": [{}]})]
    assert run("A ; B", events) == []
    assert run("A : B", events) == []


def test_skip_till_next_compatibility_includes_shared_variables():
    events = [
        (1, {"A": [{"x": "1"}]}),
        (2, {"B": [{"x": "2"}]}),
        (3, {"B": [{"x": "1"}]}),
        (4, {"B": [{"x": "1"}]}),
    ]
    assert events_of(run("A ; B", events)) == [(0, 2)]
    assert events_of(run("A : B", events)) == [(0, 2), (0, 3)]


def test_one_run_per_mapping():
    # An event yielding two incompatible mappings starts two independent runs.
    events = [
        (1, {"A": [{"x": "1"}, {"x": "2"}]}),
        (2, {"B": [{"x": "2"}]}),
        (3, {"B": [{"x": "1"}]}),
    ]
    assert [(m.events, m.mapping["x"]) for m in run("A ; B", events)] == [((0, 1), "2"), ((0, 2), "1")]


def test_within_bounds_end_minus_start():
    events = [(0, {"A": [{}]}), (5, {"B": [{}]}), (10, {"C": [{}]}), (11, {"C": [{}]})]
    assert events_of(run("A : B : C", events, within=10)) == [(0, 1, 2)]
    assert events_of(run("A : B : C", events, within=11)) == [(0, 1, 2), (0, 1, 3)]


def test_consuming_policies_take_inputs_of_one_timestamp_in_arrival_order():
    """Two A at 1 and two C at 2: the first C to arrive goes to the chronologically first A,
    whatever order the GPM stage returned the rows in (Oxigraph's order is unspecified)."""
    from dataclasses import replace

    from rsep.plugin.algebra.events import ConsumptionPolicy
    from rsep.plugin.nfa.runtime import Group, Runtime
    from tests.nfa.patterns import compile_pattern

    automaton, index = compile_pattern("A: C")
    for policy, expected in [
        (ConsumptionPolicy.CHRONOLOGICAL, [(0, 2), (1, 3)]),
        (ConsumptionPolicy.RECENT, [(0, 3), (1, 2)]),
    ]:
        runtime = Runtime(replace(automaton, policy=policy))
        for c_rows in ([(2, {}), (3, {})], [(3, {}), (2, {})]):
            groups = [
                Group(0, 1.0, {index["A"]: [(0, {}), (1, {})]}),
                Group(1, 2.0, {index["C"]: c_rows}),
            ]
            _, matches = runtime.process(runtime.new_state(), groups)
            assert sorted(events_of(matches)) == expected, (policy, c_rows)


def test_consuming_policies_do_not_depend_on_the_order_of_the_gpms_in_a_group():
    """Event 2 matches both B (a Kleene iteration) and C: whichever GPM's rows come first in
    the group, the states are visited in one order, so the same run takes it."""
    from dataclasses import replace

    from rsep.plugin.algebra.events import ConsumptionPolicy
    from rsep.plugin.nfa.runtime import Group, Runtime
    from tests.nfa.patterns import compile_pattern

    automaton, index = compile_pattern("A; B+; C")
    b, c = index["B"], index["C"]
    for policy, expected in [
        (ConsumptionPolicy.CHRONOLOGICAL, [(0, 1, 3)]),
        (ConsumptionPolicy.RECENT, [(0, 1, 2, 3)]),
    ]:
        for order in ((b, c), (c, b)):
            runtime = Runtime(replace(automaton, policy=policy))
            groups = [
                Group(0, 1.0, {index["A"]: [(0, {})]}),
                Group(1, 2.0, {b: [(1, {})]}),
                Group(2, 3.0, {gpm: [(2, {})] for gpm in order}),
                Group(3, 4.0, {c: [(3, {})]}),
            ]
            _, matches = runtime.process(runtime.new_state(), groups)
            assert sorted(events_of(matches)) == expected, (policy, order)
