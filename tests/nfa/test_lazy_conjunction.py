"""The GPM stage's lazy conjunction (SPAseq §7.3, Appendix D) and the run index (§7.2.2), through
the real pipeline: SPAseq text, the compiler, Oxigraph's GPM evaluator and the NFA runtime.

`A & B` matches B only against events at the timestamps where A found rows (and at a batch's
first and last timestamps, which may continue in the neighbouring batch); a GPM that is also
used on its own is matched against every event. Results are those of the eager stage."""

from __future__ import annotations

from dataclasses import replace

from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.automaton import DisjunctionAtom, GpmAtom
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

EX = "http://example.org/"
HEAD = f"PREFIX : <{EX}>\nSELECT *\nFROM STREAM S1 <{EX}s1>\nFROM STREAM S2 <{EX}s2>\nWHERE {{\n"
GPMS = (
    "  DEFINE GPM A ON S1 { ?h :pow ?p ; :loc ?l }\n"
    "  DEFINE GPM B ON S2 { ?w :temp ?t ; :loc ?l }\n"
    "  DEFINE GPM C ON S1 { ?h :alarm ?a }\n"
)


def plan_of(sequence: str) -> QueryPlan:
    return compile_query(parse_event_query(HEAD + f"  SEQ ({sequence})\n" + GPMS + "}\n"))


def event(stream: str, name: str, time: int, triples: str) -> GraphEvent:
    return GraphEvent(EX + stream, f"<{EX}{name}>", Timestamp(float(time), str(time), True), triples)


def power(time: int, kind: str = "pow") -> GraphEvent:
    house = f"<{EX}h{time}>"
    triples = f'{house} <{EX}{kind}> "5" .\n{house} <{EX}loc> <{EX}L> .\n'
    return event("s1", f"p{time}", time, triples)


def weather(time: int) -> GraphEvent:
    station = f"<{EX}w{time}>"
    return event("s2", f"w{time}", time, f'{station} <{EX}temp> "20" .\n{station} <{EX}loc> <{EX}L> .\n')


def stream(a_times: set[int], times: range) -> list[NumberedEvent]:
    """At every time a weather event (B), and a power event that is A's at `a_times` only."""
    s1 = [power(t) if t in a_times else power(t, kind="other") for t in times]
    return number_events([s1, [weather(t) for t in times]])


def replay(plan: QueryPlan, events: list[NumberedEvent]) -> tuple[list[tuple[int, ...]], GpmEvaluator]:
    evaluator = GpmEvaluator(plan.gpms, KnowledgeBase())
    return [m.events for m in Replay(plan, evaluator).run(events)], evaluator


def eager(plan: QueryPlan) -> QueryPlan:
    return replace(plan, gpms=tuple(replace(g, needs=None) for g in plan.gpms))


def test_a_later_conjunction_operand_is_only_matched_where_the_earlier_found_rows():
    plan = plan_of("A & B")
    assert [g.needs for g in plan.gpms] == [None, ((GpmAtom(0),),)]
    events = stream({1, 4, 6}, range(1, 7))  # A at the batch's first and last times and at 4
    matches, evaluator = replay(plan, events)
    assert matches == [(0, 1), (6, 7), (10, 11)]  # (A's event, B's event) at 1, 4 and 6
    assert (evaluator.stats.events[0], evaluator.stats.rows[0]) == (6, 3)
    assert (evaluator.stats.events[1], evaluator.stats.rows[1], evaluator.stats.skipped[1]) == (3, 3, 3)
    assert replay(eager(plan), events)[0] == matches
    assert replay(eager(plan), events)[1].stats.events[1] == 6


def test_a_batchs_first_and_last_timestamps_are_matched_in_full():
    """Its other events may be in the neighbouring batch, where A's rows are not known."""
    plan = plan_of("A & B")
    matches, evaluator = replay(plan, stream({3}, range(1, 7)))
    assert matches == [(4, 5)]
    assert evaluator.stats.events[1] == 3  # times 1, 3 and 6


def test_a_gpm_also_used_on_its_own_is_matched_against_every_event():
    plan = plan_of("A & B | B")
    assert [g.needs for g in plan.gpms] == [None, None]
    matches, evaluator = replay(plan, stream({2}, range(1, 5)))
    assert matches == [(1,), (2, 3), (3,), (5,), (7,)]
    assert evaluator.stats.events[1] == 4


def test_an_operand_after_operands_of_alternatives_needs_any_of_them():
    plan = plan_of("(A | C) & B")
    assert [g.name for g in plan.gpms] == ["A", "C", "B"]
    assert plan.gpms[2].needs == ((DisjunctionAtom((GpmAtom(0), GpmAtom(1))),),)
    events = stream({2}, range(1, 5))
    matches, evaluator = replay(plan, events)
    assert matches == replay(eager(plan), events)[0] == [(2, 3)]
    assert evaluator.stats.events[2] == 3  # times 1 and 4 (the edges) and 2 (A)


def test_an_operand_whose_earlier_operand_comes_later_in_the_plan_stays_eager():
    """`B & A` after `A & B`: A is matched first (lower index), so it cannot wait for B."""
    plan = plan_of("A & B ; B & A")
    assert [g.needs for g in plan.gpms] == [None, None]


def test_a_run_waiting_on_one_stream_is_not_visited_for_events_of_another():
    """The run index (SPAseq §7.2.2) is by GPM, which is finer than by stream: a run waiting
    for B (on S2) is only examined at timestamps where B has rows, not at A's (S1) events."""
    plan = plan_of("A ; B")
    events = number_events([[power(1), power(2), power(3)], [weather(4)]])
    evaluator = GpmEvaluator(plan.gpms, KnowledgeBase())
    replayed = Replay(plan, evaluator)
    assert [m.events for m in replayed.run(events)] == [(0, 3), (1, 3), (2, 3)]
    waiting_for_b = [s.id for s in plan.automaton.states if s.atom == GpmAtom(1)]
    assert dict(replayed.runtime.visited) == {waiting_for_b[0]: 3}  # only at time 4, its 3 runs
