"""Small events and queries for the continuous-query tests (the service, the endpoint, the Spark
streaming engine), and the reference answer: `Replay` over all events at once, with event ids =
log positions."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from functools import cache

from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.service.registry import RegisteredQuery
from rsep.plugin.service.runner import QueryRunner
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

S1 = "urn:t:s1"
S2 = "urn:t:s2"
OTHER = "urn:t:other"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"

_HEAD = f"""
SELECT ?k ?v1 ?v2
FROM STREAM S1 <{S1}>
FROM STREAM S2 <{S2}>
"""
_A = 'DEFINE GPM A ON S1 { ?k <urn:t:kind> "a" ; <urn:t:val> ?v1 }'
_B = 'DEFINE GPM B ON S2 { ?k <urn:t:kind> "b" }'
_C = 'DEFINE GPM C ON S1 { ?k <urn:t:kind> "c" ; <urn:t:val> ?v2 . FILTER (?v2 > ?v1) }'

QUERIES = {
    "kleene": _HEAD.replace("?v2\n", "?v2\nWITHIN 6 SECONDS\n")
    + f"WHERE {{ SEQ (A; B+, C) {_A} {_B} {_C} }}",
    "any": _HEAD + f"WHERE {{ SEQ (A : C) {_A} {_C} }}",
    "strict": _HEAD + f"WHERE {{ SEQ (A, C) {_A} {_C} }}",
    "negation": _HEAD + f"WHERE {{ SEQ (A; B!; C) {_A} {_B} {_C} }}",
    "conjunction": _HEAD + f"WHERE {{ SEQ (A & B, C) {_A} {_B} {_C} }}",
}


@cache
def plan_of(name: str) -> QueryPlan:
    return compile_query(parse_event_query(QUERIES[name]))


def registered(name: str, query_id: str = "0123456789abcdef", start: int = 0) -> RegisteredQuery:
    plan = plan_of(name)
    return RegisteredQuery(query_id, QUERIES[name], "spaseq", plan.streams, start, "2026-01-01T00:00:00Z")


def event(
    time: float | int, name: str, stream: str = S1, key: str = "k1", kind: str = "a", val: int = 0
) -> GraphEvent:
    subject = f"<urn:t:{key}>"
    triples = f'{subject} <urn:t:kind> "{kind}" .\n{subject} <urn:t:val> "{val}"^^<{XSD_INTEGER}> .\n'
    return GraphEvent(stream, f"<urn:t:{name}>", Timestamp(float(time), str(time), True), triples)


def records(events: Sequence[GraphEvent], first: int = 0) -> list[LogRecord]:
    return [LogRecord(first + i, e) for i, e in enumerate(events)]


def reference(plan: QueryPlan, log: Sequence[LogRecord], kb: KnowledgeBase | None = None) -> list[Match]:
    """`Replay` over the query's events of the whole log, ids = log positions."""
    mine = [r for r in log if r.event.stream in plan.streams]
    numbered = number_events([[r.event for r in mine]])
    by_position = [NumberedEvent(r.position, n.rank, n.event) for r, n in zip(mine, numbered, strict=True)]
    return Replay(plan, GpmEvaluator(plan.gpms, kb or KnowledgeBase()), batch_size=7).run(by_position)


def clock() -> str:
    return "2026-01-01T00:00:00Z"


def runner_for(name: str, plan: QueryPlan | None = None) -> QueryRunner:
    """The endpoint's runner of one of `QUERIES`, over an empty knowledge base."""
    plan = plan or plan_of(name)
    query = replace(registered(name), text="", streams=plan.streams)
    return QueryRunner(query, plan, GpmEvaluator(plan.gpms, KnowledgeBase()), clock=clock)


def synthetic_events(count: int, seed: int = 7) -> list[GraphEvent]:
    """Events for QUERIES["any"] (SEQ (A : C), ?v2 > ?v1) with shared timestamps."""
    rng = random.Random(seed)
    out, t = [], 0
    for i in range(count):
        t += rng.choice([0, 1, 1, 2])
        stream = rng.choice([S1, S1, S1, S2, OTHER])
        kind = rng.choice(["a", "c"]) if stream == S1 else "b"
        out.append(event(t, f"e{i}", stream, rng.choice(["k1", "k2"]), kind, rng.randint(0, 4)))
    return out
