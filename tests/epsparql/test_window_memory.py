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
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase
from tests.epsparql.harness import run_rsep
from tests.epsparql.reference import BGP, TP, Bin, evaluate, iri, results, rsep_rows, select_query

EX = "http://example.org/"
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
WINDOW = 'FILTER(getDURATION() < "PT5S"^^xsd:dayTimeDuration)'
LENGTH = 600


def stream(pattern: list[str], length: int = LENGTH, keys: int = 3) -> list[GraphEvent]:
    """One event per second; event i holds `:k<i mod keys> :<pattern[i mod len]> <i>`."""
    return [at(float(i), f"k{i % keys}", pattern[i % len(pattern)], f"o{i}") for i in range(length)]


def at(time: float, subject: str, predicate: str, obj: str) -> GraphEvent:
    """An event at `time` (graph `:g<time>`) holding one triple of `:` names."""
    triple = f"<{EX}{subject}> <{EX}{predicate}> <{EX}{obj}> .\n"
    return GraphEvent(EX + "s", f"<{EX}g{time:g}>", Timestamp(time, f"{time:g}", True), triple)


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


BGP_OPTIONAL = "{ ?x :q ?z . ?x :s ?v } OPTIONALSEQ { { ?x :p ?y } SEQ { ?x :r ?w } }"


def test_a_bgp_optional_side_keeps_one_occurrence_per_binding():
    """The optional side as a BGP (a join group of its own): a new join of a remembered
    occurrence ends now whichever one it takes, so only the first :q and the first :s per
    ?x (the anti-join reads ?x, and the two triple patterns share only ?x) are kept — six,
    plus what one batch adds — on a stream of any length."""
    events = stream(["p", "q", "s", "r"], length=1200, keys=3)
    bounded = peak(f"SELECT * WHERE {{ {BGP_OPTIONAL} {WINDOW} }}", events)
    assert bounded.remembered <= 3 + 6 + 50
    assert bounded.matches == 2


def test_compacting_a_bgp_optional_side_keeps_the_definitions_answer():
    """Compacted after every batch of ten events, the optional side `?x :q ?z . ?z :s ?v`
    keeps one :q per (?x, ?z) — ?z joins the other triple pattern, ?x is read by the
    anti-join — even when it is not the first :q of its ?x: `a q m2` is the one `m2 s v`
    joins, two batches later. Mandatory matches before the joined optional side stand
    alone, those after it are blocked; the answer is the brute-force evaluation of §4.2
    (no partition key: `?z :s ?v` binds no ?x, so one state holds every key)."""
    timeline = ["a q m1", "a q m2", "b q m1", "a q m1", "a p y", "a r w", "b p y", "b r w"]
    timeline += ["c t c"] * 12 + ["m2 s v", "m1 s v", "a p y", "a r w", "b p y", "b r w"]
    events = [at(float(i), *item.split()) for i, item in enumerate(timeline)]
    body = "{ ?x :q ?z . ?z :s ?v } OPTIONALSEQ { { ?x :p ?y } SEQ { ?x :r ?w } }"
    plan = compile_query(parse_event_query(PREFIXES + f"SELECT * WHERE {{ {body} }}", dialect="ep-sparql"))
    assert plan.key == ()
    found = Replay(plan, GpmEvaluator(plan.gpms, KnowledgeBase()), batch_size=10).run(number_events([events]))
    pattern = Bin(
        "OPTIONALSEQ",
        BGP((TP("?x", iri("q"), "?z"), TP("?z", iri("s"), "?v"))),
        Bin("SEQ", TP("?x", iri("p"), "?y"), TP("?x", iri("r"), "?w")),
    )
    occurrences = {(_triple(e.ntriples), e.time.seconds, e.time.seconds) for e in events}
    expected = results(evaluate(pattern, occurrences))
    assert {(frozenset(m.mapping.items()), m.start_time, m.end_time) for m in found} == expected
    lone = sorted((row[1], row[2]) for row in expected if len(row[0]) == 3)
    assert lone == [(4.0, 5.0), (4.0, 23.0), (6.0, 7.0), (6.0, 25.0)]


def _triple(payload: str) -> tuple[str, str, str]:
    subject, predicate, obj, _ = payload.split()
    return subject, predicate, obj


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
