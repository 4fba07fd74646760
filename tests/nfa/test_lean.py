"""The lean runtime (rsep.plugin.nfa.lean) against the general one: on random automata of the
shapes it accepts and random streams, the same matches in the same order, the same runs in
the same order after every call, the same checkpoints; through the per-key step too (rows
grouped while they are planned, the open rank run tentatively, checkpoints resumed).
Generators: tests/nfa/random_automata.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.algebra.sparql import BinaryOp, Literal, Var
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.automaton import GpmVariables, ResidualFilter
from rsep.plugin.nfa.keyed import KeyedNfa, copy_nfa, runtime_for
from rsep.plugin.nfa.lean import LeanRuntime
from rsep.plugin.nfa.lean_plan import lean_eligible
from rsep.plugin.nfa.lean_state import LeanState
from rsep.plugin.nfa.runtime import Runtime
from tests.nfa.keyed_steps import chunks, numbered, step_all
from tests.nfa.patterns import Event, compile_pattern, groups_of
from tests.nfa.random_automata import cases, groups, runs_of, streams

SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@SETTINGS
@given(data=st.data())
def test_the_lean_runtime_finds_the_general_runtimes_matches_and_keeps_its_runs(data: st.DataObject) -> None:
    case = data.draw(cases())
    keyed = data.draw(st.booleans())
    keys = ("<urn:k1>",) if keyed else ("<urn:k1>", "<urn:k2>")
    events = data.draw(streams(case, keys))
    general, lean = Runtime(case.automaton), LeanRuntime(case.automaton, ("k",) if keyed else ())
    mine, theirs = general.new_state(), lean.new_state()
    assert isinstance(theirs, LeanState)
    for part in chunks(data.draw, groups(case, events)):  # type: ignore[arg-type]
        mine, expected = general.process(mine, part)
        theirs, found = lean.process(theirs, part)
        assert found == expected
        assert runs_of(theirs) == runs_of(mine)
        last = part[-1]
        mine = general.advance_time(mine, last.rank, last.time)
        theirs = lean.advance_time(theirs, last.rank, last.time)
        assert runs_of(theirs) == runs_of(mine)
    assert not lean.degraded
    saved = snapshot.decode(snapshot.encode({"k": theirs}))["k"]
    assert runs_of(saved) == runs_of(mine) and saved.last_rank == mine.last_rank


@SETTINGS
@given(data=st.data())
def test_the_per_key_step_finds_the_general_runtimes_matches(data: st.DataObject) -> None:
    """Rows of two keys, in batches whose last rank stays open (run tentatively) until the
    next batch, a checkpoint taken and resumed on the way."""
    case = data.draw(cases())
    events = data.draw(streams(case, ("<urn:k1>", "<urn:k2>"), size=18))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=3)))
    save = data.draw(st.none() | st.integers(0, 3))
    general = KeyedNfa(case.automaton, ("k",))
    general.runtime = Runtime(case.automaton)
    lean = KeyedNfa(case.automaton, ("k",))
    assert isinstance(lean.runtime, LeanRuntime)
    assert step_all(lean, events, case, cuts, save) == step_all(general, events, case, cuts, save)


@SETTINGS
@given(data=st.data(), lean=st.booleans())
def test_dropping_the_rows_that_cannot_matter_changes_no_match(data: st.DataObject, lean: bool) -> None:
    """`KeyedNfa.relevant` (rows of keys with no state and no starting row dropped) against
    every row, over random automata, keys and batch cuts, on both runtimes."""
    case = data.draw(cases())
    events = data.draw(streams(case, ("<urn:k1>", "<urn:k2>", "<urn:k3>"), size=18))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=3)))
    save = data.draw(st.none() | st.integers(0, 3))
    every, pruned = KeyedNfa(case.automaton, ("k",)), KeyedNfa(case.automaton, ("k",))
    if not lean:
        every.runtime, pruned.runtime = Runtime(case.automaton), Runtime(case.automaton)
    expected = step_all(every, events, case, cuts, save)
    assert step_all(pruned, events, case, cuts, save, relevant=True) == expected


# ---------------------------------------------------------------------- what it accepts


def test_the_lean_runtime_runs_the_common_automata_only():
    automaton, _ = compile_pattern("A, B+ ; (C | D)! : E", variables={"A": ["x"]})
    assert lean_eligible(automaton) and isinstance(runtime_for(automaton), LeanRuntime)
    consuming = automaton.__class__(**{**_fields(automaton), "policy": ConsumptionPolicy.CHRONOLOGICAL})
    assert not lean_eligible(consuming) and type(runtime_for(consuming)) is Runtime
    unknown = automaton.__class__(**{**_fields(automaton), "variables": ()})
    assert not lean_eligible(unknown)


def _fields(automaton: object) -> dict[str, object]:
    return {name: getattr(automaton, name) for name in automaton.__dataclass_fields__}  # type: ignore[attr-defined]


def test_the_variables_of_the_gpms_and_the_match_limit_leave_the_fingerprint_alone():
    """Checkpoints written before `Automaton.variables` and `match_limit` existed stay valid."""
    automaton, _ = compile_pattern("A ; B", variables={"A": ["x"], "B": ["y"]})
    bare = automaton.__class__(**{**_fields(automaton), "variables": (), "match_limit": 7})
    assert snapshot.fingerprint(automaton) == snapshot.fingerprint(bare)


def test_rows_binding_undeclared_variables_fall_back_to_the_general_runtime():
    automaton, index = compile_pattern("A ; B", variables={"A": ["x"], "B": ["x"]})
    events: list[Event] = [(1.0, {"A": [{"x": "<a>"}]}), (2.0, {"B": [{"x": "<a>", "surprise": "<s>"}]})]
    lean = LeanRuntime(automaton)
    state, first = lean.process(lean.new_state(), groups_of(events[:1], index))
    assert isinstance(state, LeanState) and not first
    state, matches = lean.process(state, groups_of(events, index)[1:])
    assert lean.degraded and type(state).__name__ == "NfaState"
    general = Runtime(automaton)
    assert matches == general.process(general.new_state(), groups_of(events, index))[1]


def test_numbers_of_one_kind_compare_as_numbers_and_the_rest_as_sparql_says():
    """`?b < ?a` on integers, decimals, doubles (NaN too), across kinds, and on strings and
    IRIs (a type error: no match): the lean runtime's comparisons against the evaluator's."""
    xsd = "http://www.w3.org/2001/XMLSchema#"
    terms = [
        f'"10"^^<{xsd}integer>',
        f'"9"^^<{xsd}integer>',
        f'"9.5"^^<{xsd}decimal>',
        f'"1E1"^^<{xsd}double>',
        f'"NaN"^^<{xsd}double>',
        '"9"',
        "<urn:nine>",
    ]
    automaton, index = compile_pattern("A ; B", variables={"A": ["a"], "B": ["b"]})
    for op in ("<", ">", "<=", ">=", "=", "!="):
        filters = ((), (ResidualFilter(BinaryOp(op, Var("b"), Var("a")), frozenset({"a", "b"})),))
        declared = (GpmVariables(frozenset({"a"}), frozenset({"a"})), GpmVariables(frozenset({"b"})))
        compiled = automaton.__class__(**{**_fields(automaton), "residuals": filters, "variables": declared})
        events: list[Event] = [
            (1.0, {"A": [{"a": t} for t in terms]}),
            (2.0, {"B": [{"b": t} for t in terms]}),
        ]
        general = Runtime(compiled)
        expected = general.process(general.new_state(), groups_of(events, index))[1]
        lean = LeanRuntime(compiled)
        assert lean.process(lean.new_state(), groups_of(events, index))[1] == expected, op


@pytest.mark.parametrize("constant", ['"9.5"', "9.5"])
def test_a_comparison_with_a_constant_reads_the_runs_value(constant: str):
    xsd = "http://www.w3.org/2001/XMLSchema#"
    literal = Literal("9.5", xsd + "decimal") if constant == "9.5" else Literal("9.5")
    automaton, index = compile_pattern("A ; B", variables={"A": ["a"], "B": ["b"]})
    expr = BinaryOp("&&", BinaryOp("<", Var("b"), Var("a")), BinaryOp(">", Var("a"), literal))
    compiled = automaton.__class__(
        **{
            **_fields(automaton),
            "residuals": ((), (ResidualFilter(expr, frozenset({"a", "b"})),)),
            "variables": (GpmVariables(frozenset({"a"}), frozenset({"a"})), GpmVariables(frozenset({"b"}))),
        }
    )
    events: list[Event] = [
        (1.0, {"A": [{"a": f'"{n}"^^<{xsd}integer>'} for n in (9, 10, 11)]}),
        (2.0, {"B": [{"b": f'"{n}"^^<{xsd}integer>'} for n in (8, 10)]}),
    ]
    general = Runtime(compiled)
    expected = general.process(general.new_state(), groups_of(events, index))[1]
    lean = LeanRuntime(compiled)
    assert lean.process(lean.new_state(), groups_of(events, index))[1] == expected
    assert len(expected) == (3 if constant == "9.5" else 0)


def test_a_copy_of_a_lean_state_is_not_changed_by_processing_the_original():
    automaton, index = compile_pattern("A ; B", variables={"A": ["x"], "B": ["x"]})
    lean = LeanRuntime(automaton)
    state, _ = lean.process(lean.new_state(), groups_of([(1.0, {"A": [{"x": "<a>"}]})], index))
    copy = copy_nfa(state)
    assert isinstance(copy, LeanState) and runs_of(copy) == runs_of(state)
    lean.process(state, [groups_of([(1.0, {}), (2.0, {"A": [{"x": "<b>"}]})], index)[-1]])
    assert len(runs_of(state)[1]) == 2 and len(runs_of(copy)[1]) == 1


def test_compiled_queries_choose_their_runtime():
    """The stock V-shape runs lean, its skip-till-any variant with WITHIN on the shared buffer,
    the same without WITHIN lean again (nothing bounds a buffer), EP-SPARQL generally."""
    from rsep import compiler
    from rsep.plugin.nfa.shared_buffer import BufferRuntime

    def query(seq: str, within: str = "WITHIN 60 MINUTES") -> str:
        return f"""PREFIX p: <http://example.org/stock#>
SELECT * {within} FROM STREAM S1 <http://example.org/stocks>
WHERE {{ SEQ ({seq})
  DEFINE GPM A ON S1 {{ ?c p:price ?p1 . }}
  DEFINE GPM B ON S1 {{ ?c p:price ?p2 . FILTER (?p2 < ?p1) }}
  DEFINE GPM C ON S1 {{ ?c p:price ?p3 . FILTER (?p3 > ?p1) }} }}"""

    def runtime(text: str, **options: object) -> Runtime:
        plan = compiler.compile_text(text, source="<test>", **options)  # type: ignore[arg-type]
        return KeyedNfa(plan.automaton, plan.key).runtime  # type: ignore[union-attr]

    assert type(runtime(query("A, B+, C"))) is LeanRuntime
    assert type(runtime(query("A; B+; C"))) is LeanRuntime
    assert type(runtime(query("A: B+: C"))) is BufferRuntime
    assert type(runtime(query("A: B+: C", within=""))) is LeanRuntime
    epsparql = "PREFIX : <http://example.org/> SELECT * WHERE { ?x :p ?y . ?x :q ?z }"
    assert type(runtime(epsparql, dialect="ep-sparql")) is Runtime


def test_a_key_whose_rows_start_nothing_gets_no_state():
    """SEQ (A ; B): a B row of a key without a state meets no run and starts none, so the lean
    runtime makes no state for its key (with many queries on one stream, most rows of most
    queries are such rows); an A row does make one."""
    automaton, index = compile_pattern("A ; B", variables={"A": ["k"], "B": ["k"]}, key=["k"])
    lean = LeanRuntime(automaton, ("k",))
    events: list[Event] = [(1.0, {"B": [{"k": "<b>"}]}), (2.0, {"A": [{"k": "<a>"}]})]
    numbered_events, rows = numbered(events, index)
    states: dict = {}
    assert lean.process_rows(states, rows[0], numbered_events, ("k",)) == []
    assert states == {}
    lean.process_rows(states, rows[1], numbered_events, ("k",))
    assert list(states) == [("<a>",)]
