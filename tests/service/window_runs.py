"""Window queries stepped by `WindowRunner` over random logs in random batches, for the window
runner tests: the logs, the runs, and the graphs the replay's evaluations make."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from rsep.grammar import parse_event_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import LogRecord
from rsep.plugin.service.registry import RegisteredQuery
from rsep.plugin.service.window_graphs import EvaluationGraph, evaluation_graph
from rsep.plugin.service.window_runner import WindowRunner
from rsep.plugin.windows import plan_windows
from rsep.plugin.windows.window_plan import Form, WindowPlan

S1 = "http://example.org/s1"
S2 = "http://example.org/s2"
OTHER = "http://example.org/other"
QUERY_ID = "00000000000000aa"


def plan_of(text: str, dialect: str) -> WindowPlan:
    return plan_windows(parse_event_query(text, dialect=dialect))


def random_log(rng: random.Random, streams: Sequence[str]) -> list[LogRecord]:
    """Events in time order (equal times allowed) on the query's streams and on another one,
    some with no triple, times in halves of seconds."""
    records, t = [], rng.randint(0, 4) / 2
    for position in range(rng.randint(0, 40)):
        t += rng.choice([0, 0, 0.5, 1, 1.5, 3, 7])
        stream = rng.choice([*streams, OTHER])
        triples = "".join(
            f"<http://example.org/x{position}> <http://example.org/p> <http://example.org/o{k}> .\n"
            for k in range(rng.choice([0, 1, 1, 2, 3]))
        )
        time = Timestamp(t, repr(t), True)
        records.append(LogRecord(position, GraphEvent(stream, f"<urn:e:{position}>", time, triples)))
    return records


def registered(plan: WindowPlan) -> RegisteredQuery:
    return RegisteredQuery(QUERY_ID, "q", "c-sparql", plan.streams, 0, "2026-01-01T00:00:00Z")


def graph_of(plan: WindowPlan, evaluation) -> EvaluationGraph:
    rows = evaluation.answer.rows
    variables = plan.projection or tuple(dict.fromkeys(n for row in rows for n in row))
    variables = variables if plan.form is Form.SELECT else ()
    return evaluation_graph(
        QUERY_ID, "urn:rsep:query:" + QUERY_ID, plan.form, evaluation, variables, True, "D", plan.ordered
    )


def run_in_batches(
    plan: WindowPlan, make_evaluator, records, rng: random.Random, t0: float | None = None
) -> tuple[dict, WindowRunner]:
    """Steps over random batches, restoring from a snapshot now and then (as after a crash,
    the graphs emitted after it come out again: they must be the same); `t0`: the registration's
    time (None: registered on an empty log)."""
    query = replace(registered(plan), t0=t0)
    runner = WindowRunner(query, plan, make_evaluator(), clock=lambda: "D")
    found: dict[str, EvaluationGraph] = {}
    order: list[str] = []
    while runner.position < len(records):
        if rng.random() < 0.2:
            runner = WindowRunner.restore(query, plan, make_evaluator(), runner.snapshot(), lambda: "D")
        size = rng.randint(1, 6)
        for graph in runner.step(records[runner.position : runner.position + size]):
            if graph.iri in found:
                assert found[graph.iri] == graph
            else:
                found[graph.iri] = graph
                order.append(graph.iri)
    return {iri: found[iri] for iri in order}, runner
