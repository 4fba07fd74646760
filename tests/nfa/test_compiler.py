"""The compiler's automata, as (state, action, target) sets (SPAseq §6.2, Figs. 3-10)."""

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.nfa.automaton import Action, ConjunctionAtom, GpmAtom
from tests.nfa.patterns import compile_pattern

TAKE, IGNORE = Action.TAKE, Action.IGNORE


def edges(text: str, **options):
    """(state label, action, target label or "accept") triples, and the automaton."""
    automaton, _ = compile_pattern(text, **options)
    label = {s.id: s.label for s in automaton.states}
    found = {
        (s.label, action, "accept" if target is None else label[target])
        for s in automaton.states
        for action, target in s.edges()
    }
    return found, automaton


def state(automaton, label):
    (found,) = [s for s in automaton.states if s.label == label]
    return found


def test_fig3_sequence_with_kleene():
    found, automaton = edges("A , B+ , C")
    assert [automaton.states[i].label for i in automaton.initial] == ["g0"]
    assert found == {
        ("g0", TAKE, "g1+"), ("g0", IGNORE, "g0"),  # any event may start a run
        ("g1+", TAKE, "g2"), ("g1+", TAKE, "g1+ (again)"),  # first B: go on to C, or iterate
        ("g1+ (again)", TAKE, "g2"), ("g1+ (again)", TAKE, "g1+ (again)"),  # B again, strictly next
        ("g2", TAKE, "accept"),  # C completes the match
    }  # fmt: skip


def test_fig7_skip_till_next_ignores():
    found, automaton = edges("A ; B")
    assert ("g1", IGNORE, "g1") in found
    assert state(automaton, "g1").strategy is SelectionStrategy.SKIP_TILL_NEXT


def test_strict_contiguity_has_no_ignore_edge():
    found, _ = edges("A , B")
    assert {(s, a, t) for s, a, t in found if s == "g1"} == {("g1", TAKE, "accept")}


def test_fig8_conjunction_is_one_atom_with_both_predicates():
    _, automaton = edges("A , (B & C)")
    assert state(automaton, "(g1 & g2)").atom == ConjunctionAtom((GpmAtom(1), GpmAtom(2)))


def test_negation_becomes_a_guard_and_widens_the_strict_gap():
    _, automaton = edges("A , B! , C")
    wait_c = state(automaton, "g2")
    assert wait_c.guards == (GpmAtom(1),)
    assert wait_c.max_gap == 2


def test_optional_offers_both_paths():
    _, automaton = edges("A ; B? ; C")
    labels = sorted((s.label, s.guards) for s in automaton.states)
    assert labels == [("g0", ()), ("g1?", ()), ("g2", ()), ("g2", (GpmAtom(1),))]


def test_mixed_strategies_take_the_most_permissive():
    _, automaton = edges("A , B! ; C")
    wait_c = state(automaton, "g2")
    assert wait_c.strategy is SelectionStrategy.SKIP_TILL_NEXT
    assert wait_c.max_gap is None


def test_kleene_iteration_rebinds_variables_first_bound_inside():
    _, automaton = edges("A ; B+", variables={"A": ("l",), "B": ("l", "w", "v")})
    assert state(automaton, "g1+ (again)").rebind == frozenset({"w", "v"})
