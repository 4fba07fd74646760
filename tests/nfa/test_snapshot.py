"""NFA states through `rsep.plugin.nfa.snapshot`, the format every engine checkpoints: join
groups' occurrences survive; a state is only continued by the automaton it was saved for
(its fingerprint), so checkpoints of another automaton, or of formats 3 and 4 (no
fingerprint), are refused; without an automaton (in-memory copies) formats 3 and 4 read."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.runtime import Match, NfaState, Run
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

EX = "http://example.org/"


def test_runs_remembered_solutions_and_join_occurrences_round_trip():
    path = ((3,), ((1,), None))
    state = NfaState(
        runs={2: [Run(2, {"x": "<a>"}, 1.0, 0, 1, path, ((1.0, 1.0), (3.0, 3.0)))]},
        last_rank=4,
        history={0: [({"x": "<a>"}, (1.0, 2.0))]},
        joins={1: [(0, 7, {"x": "<a>", "y": "<b>"}, 5.0, 5.0)]},
    )
    restored = snapshot.decode(pickle.loads(pickle.dumps(snapshot.encode({("k",): state}))))[("k",)]
    assert (restored.last_rank, restored.history, restored.joins) == (4, state.history, state.joins)
    (run,) = restored.runs[2]
    assert (run.mapping, run.path, run.spans) == ({"x": "<a>"}, path, ((1.0, 1.0), (3.0, 3.0)))


def test_a_format_3_checkpoint_reads_with_nothing_joined():
    old = (
        3,
        [((1,), -1)],
        [(("k",), 4, {0: [({"x": "<a>"}, (1.0, 2.0))]}, [(2, [(2, {}, 1.0, 0, 1, 0, None, None)])])],
    )
    restored = snapshot.decode(old)[("k",)]
    assert restored.joins == {} and restored.history == {0: [({"x": "<a>"}, (1.0, 2.0))]}
    assert restored.runs[2][0].path == ((1,), None)


def resumed_and_whole(query: str, triples: list[str]) -> tuple[list[Match], list[Match]]:
    """The matches of `query` over `triples` at 1, 3, 5 ...: checkpointed after the first two
    and resumed by a new replay, and in one replay."""
    plan = compile_query(parse_event_query(query, dialect="ep-sparql"))
    stamps = [Timestamp(2 * i + 1.0, str(2 * i + 1), True) for i in range(len(triples))]
    graphs = [f"<{EX}g{i}>" for i in range(len(triples))]
    events = number_events(
        [[GraphEvent(EX + "s", *event) for event in zip(graphs, stamps, triples, strict=True)]]
    )
    whole = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase())).run(events)
    first = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase()))
    found = first.process_batch(events[:2])
    second = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase()))
    second.state.states = snapshot.decode(pickle.loads(pickle.dumps(snapshot.encode(first.states))))
    return found + second.process_batch(events[2:]), whole


TRIPLES = [f"<{EX}a> <{EX}p> <{EX}b> .\n", f"<{EX}c> <{EX}r> <{EX}d> .\n", f"<{EX}a> <{EX}q> <{EX}e> .\n"]


def test_a_join_group_resumed_from_a_checkpoint_finds_what_one_replay_finds():
    """The occurrence of :p at 1 is only in the join group's memory when the checkpoint is
    taken; the :q at 5 must still join with it."""
    found, whole = resumed_and_whole(f"PREFIX : <{EX}> SELECT * WHERE {{ ?x :p ?y . ?x :q ?z }}", TRIPLES)
    assert [(m.events, m.start_time, m.end_time) for m in found] == [
        (m.events, m.start_time, m.end_time) for m in whole
    ]
    assert [(m.events, m.start_time, m.end_time) for m in whole] == [((0, 2), 1.0, 5.0)]


def test_runs_a_bind_and_values_extended_resume_from_a_checkpoint():
    """The runs waiting for :q at the checkpoint hold ?k from the BIND and one ?t per VALUES
    row; resumed, they complete as in one replay."""
    query = f"""PREFIX : <{EX}> SELECT * WHERE {{
        {{ ?x :p ?y BIND(?x AS ?k) VALUES ?t {{ 1 2 }} }} SEQ {{ ?k :q ?z }} }}"""
    found, whole = resumed_and_whole(query, TRIPLES)
    assert [(m.start_time, m.end_time, m.mapping) for m in found] == [
        (m.start_time, m.end_time, m.mapping) for m in whole
    ]
    assert sorted(m.mapping["t"] for m in whole) == [
        f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>' for t in (1, 2)
    ]


def test_the_fingerprint_covers_bind_and_values():
    def fingerprint(body: str) -> str:
        text = f"PREFIX : <{EX}> SELECT * WHERE {{ ?x :p ?y {body} }}"
        return snapshot.fingerprint(compile_query(parse_event_query(text, dialect="ep-sparql")).automaton)

    prints = [
        fingerprint(b) for b in ("BIND(?y AS ?k)", "BIND(?x AS ?k)", "VALUES ?k { 1 }", "VALUES ?k { 2 }")
    ]
    assert len(set(prints)) == 4


CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
BGP = f"PREFIX : <{EX}> SELECT * WHERE {{ ?x :p ?y . ?x :q ?z . ?x :r ?w }}"


def test_a_state_is_continued_only_by_the_automaton_it_was_saved_for():
    bgp = compile_query(parse_event_query(BGP, dialect="ep-sparql")).automaton
    seq = compile_query(parse_event_query(f"PREFIX : <{EX}> SELECT * WHERE {{ ?x :p ?y }} SEQ {{ ?x :q ?z }}",
                                          dialect="ep-sparql")).automaton  # fmt: skip
    state = NfaState(joins={0: [(0, 7, {"x": "<a>", "y": "<b>"}, 5.0, 5.0)]})
    data = pickle.loads(pickle.dumps(snapshot.encode({("k",): state}, bgp)))
    assert snapshot.decode(data, bgp)[("k",)].joins == state.joins
    with pytest.raises(snapshot.StateMismatch, match="another automaton"):
        snapshot.decode(data, seq)


def test_a_format_3_state_of_the_bgp_compiled_into_detection_orders_is_refused():
    """The audit's real format 3 state (tests/fixtures/checkpoints/README.md): its runs wait in
    states 1-16 of an automaton that enumerated the BGP's detection orders; today's is one
    join group, so continuing them raised IndexError."""
    old = pickle.loads((CHECKPOINTS / "epsparql-bgp-format3.nfa").read_bytes())
    automaton = compile_query(parse_event_query(BGP, dialect="ep-sparql")).automaton
    assert len(automaton.states) == 1
    with pytest.raises(snapshot.StateMismatch, match="format 3"):
        snapshot.decode(old, automaton)


def test_the_fingerprint_is_the_same_in_every_process():
    """Sets in the automaton are sorted: string hashing, seeded per process, does not show."""
    code = (
        "from rsep.grammar import parse_event_query; "
        "from rsep.plugin.compile.query_plan import compile_query; "
        "from rsep.plugin.nfa.snapshot import fingerprint; "
        f"print(fingerprint(compile_query(parse_event_query({BGP + ' OPTIONAL {?x :s ?v}'!r}, "
        "dialect='ep-sparql')).automaton))"
    )
    prints = {
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, check=True,
            capture_output=True, text=True,
        ).stdout
        for seed in ("1", "2")
    }  # fmt: skip
    assert len(prints) == 1 and len(prints.pop().strip()) == 64
