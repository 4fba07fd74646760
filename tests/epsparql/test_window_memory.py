"""A pushed window (`getDURATION() < d`, EP-SPARQL §5) bounds what the NFA keeps on a long
stream: the runtime's own counters (`NfaState.run_count`, `NfaState.remembered_count`) are
sampled after every batch of a replay and their peak must stay bounded with the window and
grow without it. What the definitions make unbounded (a solution of OPTIONALSEQ's or
OPTIONAL's optional side blocks however long before it ended) stays bounded by the number
of distinct bindings the anti-join reads instead (docs/semantics.md, "Window pushing")."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.compile.plan import QueryPlan, compile_query
from rsep.plugin.events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.replay import Replay, number_events
from rsep.plugin.store.gpm import GpmEvaluator, KnowledgeBase
from tests.epsparql.harness import run_rsep
from tests.epsparql.reference import TP, Bin, evaluate, iri, results, rsep_rows, select_query

EX = "http://example.org/"
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
WINDOW = 'FILTER(getDURATION() < "PT5S"^^xsd:dayTimeDuration)'
LENGTH = 600


def stream(pattern: list[str], length: int = LENGTH, keys: int = 3) -> list[GraphEvent]:
    """One event per second; event i holds `:k<i mod keys> :<pattern[i mod len]> <i>`."""
    events = []
    for i in range(length):
        triple = f"<{EX}k{i % keys}> <{EX}{pattern[i % len(pattern)]}> <{EX}o{i}> .\n"
        events.append(GraphEvent(EX + "s", f"<{EX}g{i}>", Timestamp(float(i), str(i), True), triple))
    return events


@dataclass
class Peak:
    runs: int
    remembered: int
    matches: int


def peak(query: str, events: list[GraphEvent], batch: int = 50) -> Peak:
    """Replays `events` in batches and samples the state's size after each."""
    plan: QueryPlan = compile_query(parse_event_query(PREFIXES + query, dialect="ep-sparql"))
    replay = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase()), batch_size=batch)
    numbered = number_events([events])
    found: list[Match] = []
    runs = remembered = 0
    for start in range(0, len(numbered), batch):
        found += replay.process_batch(numbered[start : start + batch])
        runs = max(runs, sum(s.run_count() for s in replay.states.values()))
        remembered = max(remembered, sum(s.remembered_count() for s in replay.states.values()))
    return Peak(runs, remembered, len(found))


def test_sequence_runs_stay_bounded_with_the_window():
    events = stream(["p", "p", "p", "q"])
    bounded = peak("SELECT * WHERE { { ?x :p ?y } SEQ { ?x :q ?z } " + WINDOW + " }", events)
    unbounded = peak("SELECT * WHERE { { ?x :p ?y } SEQ { ?x :q ?z } }", events)
    assert bounded.runs <= 60  # runs of the last 5 s plus one batch, whatever the stream's length
    assert unbounded.runs >= LENGTH * 3 // 4 - 60  # every :p starts a run that never ends


def test_join_occurrences_stay_bounded_with_the_window():
    """A BGP of two triple patterns is one join group: it remembers occurrences, not runs."""
    events = stream(["p", "r"])
    bounded = peak("SELECT * WHERE { ?x :p ?y . ?x :r ?w " + WINDOW + " }", events)
    unbounded = peak("SELECT * WHERE { ?x :p ?y . ?x :r ?w }", events)
    assert (bounded.runs, unbounded.runs) == (0, 0)
    assert bounded.remembered <= 60
    assert unbounded.remembered == LENGTH
    assert bounded.matches < unbounded.matches


def test_equalsoptional_solutions_expire_with_the_window():
    """EqLeftJoin reads an optional solution only on the mandatory side's own interval, which
    the window bounds: older ones are forgotten."""
    events = stream(["p", "q"])
    body = "{ ?x :p ?y } EQUALSOPTIONAL { ?x :q ?z }"
    bounded = peak(f"SELECT * WHERE {{ {body} {WINDOW} }}", events)
    unbounded = peak(f"SELECT * WHERE {{ {body} }}", events)
    assert bounded.remembered <= 60
    assert unbounded.remembered >= LENGTH // 2 - 60


@pytest.mark.parametrize(
    "body",
    [
        "{ ?x :q ?z } OPTIONALSEQ { { ?x :p ?y } SEQ { ?x :r ?w } }",
        "{ { ?x :p ?y } SEQ { ?x :r ?w } } OPTIONAL { ?x :q ?z }",
    ],
    ids=["optionalseq", "optional"],
)
def test_blocking_solutions_are_kept_once_per_binding_and_mandatory_runs_expire(body: str):
    """OPTIONALSEQ / OPTIONAL: a remembered solution blocks however old it is (so the window
    cannot drop it), but only the earliest per binding of ?x (what the anti-join reads) can
    matter: three keys, three solutions kept. The mandatory side's runs expire."""
    events = stream(["p", "q", "r", "q"], keys=3)
    bounded = peak(f"SELECT * WHERE {{ {body} {WINDOW} }}", events)
    unbounded = peak(f"SELECT * WHERE {{ {body} }}", events)
    assert bounded.remembered <= 3 + 50  # the keys, plus what one batch adds before it is compacted
    assert unbounded.remembered <= 3 + 50
    assert bounded.runs <= 60
    assert unbounded.runs >= LENGTH // 4 - 60


@pytest.mark.parametrize(
    ("condition", "seconds"),
    [
        ('getDURATION() < "PT2S"^^xsd:dayTimeDuration', 2.0),
        ('getDURATION() <= "PT2S"^^xsd:duration', 2.0),
        ('"PT2S"^^xsd:duration > getDURATION()', 2.0),
        ('"PT3S"^^xsd:dayTimeDuration >= getDURATION()', 3.0),
        ('getDURATION() < "PT9S"^^xsd:duration && "PT2S"^^xsd:duration > getDURATION()', 2.0),
        ('getDURATION() > "PT2S"^^xsd:duration', None),
        ('"PT2S"^^xsd:duration < getDURATION()', None),
        ('getDURATION() < "P1M"^^xsd:duration', None),
        ('getDURATION() < "PT2S"', None),
    ],
)
def test_which_duration_comparisons_become_the_window(condition: str, seconds: float | None):
    query = f"SELECT * WHERE {{ {{ ?x :p ?y }} SEQ {{ ?x :q ?z }} FILTER({condition}) }}"
    plan = compile_query(parse_event_query(PREFIXES + query, dialect="ep-sparql"))
    assert plan.automaton.within == seconds


def test_a_reversed_comparison_bounds_runs_like_the_usual_one():
    events = stream(["p", "p", "p", "q"])
    body = "{ ?x :p ?y } SEQ { ?x :q ?z }"
    usual = peak(f'SELECT * WHERE {{ {body} FILTER(getDURATION() <= "PT5S"^^xsd:duration) }}', events)
    reversed_ = peak(f'SELECT * WHERE {{ {body} FILTER("PT5S"^^xsd:duration >= getDURATION()) }}', events)
    assert reversed_ == usual
    assert usual.runs <= 60


def test_many_remembered_solutions_are_looked_up_by_their_bindings():
    """Past INDEX_FROM remembered solutions an anti-join looks them up by the variables it
    reads (RememberedIndex) instead of scanning them; the answer is the definitions'. No
    partition key here (:s binds neither ?x), so one state remembers every :q."""
    events: list[tuple[float, list[tuple[str, str, str]]]] = [(0.0, [(iri("a"), iri("s"), iri("b"))])]
    for i in range(1, 80):
        if i % 2:
            events.append((float(i), [(iri(f"x{i}"), iri("q"), iri(f"z{i}"))]))
        else:
            events.append(
                (float(i), [(iri(f"x{i - 1}"), iri("r"), iri("w")), (iri(f"y{i}"), iri("r"), iri("w"))])
            )
    pattern = Bin(
        "SEQ",
        TP("?a", iri("s"), "?b"),
        Bin("OPTIONALSEQ", TP("?x", iri("q"), "?z"), TP("?x", iri("r"), "?w")),
    )
    got = rsep_rows(run_rsep(select_query(pattern), events))
    stream = {(t, time, time) for time, graph in events for t in graph}
    assert got == results(evaluate(pattern, stream))
    assert len(got) == 78  # per even i: x joined with its :q, y alone
