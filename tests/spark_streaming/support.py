"""Helpers of the Spark streaming engine tests: a node (a Spark streaming engine on a data folder,
on the shared `local[2]` session of tests/conftest.py) and the in-process reference it must agree
with, queries and events more than one module runs, and `rsep serve --engine spark` in a
subprocess."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.lifecycle import EngineWiring
from rsep.plugin.service.registry import RegisteredQuery, Registry
from rsep.plugin.service.runner import QueryRunner
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase, solutions
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.vocabulary import MATCHES_GRAPH
from tests.support.events import S1, clock, event

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rsep.plugin.spark.streaming_engine import SparkStreamingEngine


def compile_text(query: RegisteredQuery) -> QueryPlan:
    return compile_query(parse_event_query(query.text))


class Node:
    """One 'process' on a data folder: log, registry, checkpoints, a Spark
    streaming engine (the store handle is shared: a process opens it once)."""

    def __init__(
        self,
        root: Path,
        kb: KnowledgeBase,
        spark: SparkSession,
        trigger_interval: float = 0.05,
        kb_poll: float = 0.1,
    ) -> None:
        from rsep.plugin.spark.streaming_engine import SparkStreamingEngine

        self.root = root
        self.kb = kb
        self.log = EventLog(root / "log")
        self.registry = Registry(root / "queries")
        self.checkpoints = CheckpointStore(root / "checkpoints")
        self.sink = OxigraphMatchSink(kb)
        self.engine: SparkStreamingEngine = SparkStreamingEngine(
            EngineWiring(self.log, self.registry, self.checkpoints, self.sink, clock=clock),
            compile_text, kb, spark, trigger_interval=trigger_interval, kb_poll=kb_poll,
        )  # fmt: skip

    def register(self, text: str, start: int | None = None) -> RegisteredQuery:
        plan = compile_query(parse_event_query(text))
        start = self.log.next_position if start is None else start
        query = self.registry.create(text, "spaseq", plan.streams, start, {})
        self.engine.register(query)
        return query

    def ingest(self, events: Sequence[GraphEvent]) -> None:
        positions = self.log.append(list(events))
        self.engine.notify([LogRecord(p, e) for p, e in zip(positions, events, strict=True)])

    def caught_up(self, *queries: RegisteredQuery) -> bool:
        head = self.log.next_position
        for query in queries or self.registry.all():
            progress = self.engine.progress(query.id)
            assert progress is not None
            assert progress.error is None, progress.error
            if progress.position < head:
                return False
        return True

    def wait(self, *queries: RegisteredQuery, timeout: float = 90.0) -> None:
        wait_for(lambda: self.caught_up(*queries), timeout)


def wait_for(predicate: Callable[[], object], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the Spark engine")
        time.sleep(0.05)


def graph_iris(kb: KnowledgeBase, query_iri: str) -> list[str]:
    generated_by = "<http://www.w3.org/ns/prov#wasGeneratedBy>"
    text = f"SELECT ?g WHERE {{ GRAPH <{MATCHES_GRAPH}> {{ ?g {generated_by} <{query_iri}> }} }}"
    return sorted(r["g"][1:-1] for r in solutions(kb.store.query(text)))


def graph_quads(kb: KnowledgeBase, iri: str) -> set[str]:
    """A match graph's content and its metadata, as N-Quads lines (blank nodes
    are labelled after the match, so they compare)."""
    import pyoxigraph as ox

    node = ox.NamedNode(iri)
    quads = list(kb.store.quads_for_pattern(None, None, None, node))
    quads += kb.store.quads_for_pattern(node, None, None, ox.NamedNode(MATCHES_GRAPH))
    return {str(q) for q in quads}


def in_process_graphs(
    query: RegisteredQuery, log: EventLog, kb: KnowledgeBase | None = None
) -> dict[str, set[str]]:
    """What the in-process engine writes for `query` over the whole log:
    graph IRI -> its quads as `graph_quads` prints them (one
    `QueryRunner.step` over all records)."""
    import pyoxigraph as ox

    plan = compile_query(parse_event_query(query.text))
    runner = QueryRunner(replace(query), plan, GpmEvaluator(plan.gpms, kb or KnowledgeBase()), clock=clock)
    records = list(log.read(query.start))
    graphs = runner.step(records) if records else []
    return {g.iri: {str(q) for q in ox.parse(g.nquads(), ox.RdfFormat.N_QUADS)} for g in graphs}


# --------------------------------------------------------------------------- queries and events

KB_QUERY = f"""
SELECT ?k ?band
FROM STREAM S1 <{S1}>
WHERE {{ SEQ (A : C)
  DEFINE GPM A ON S1 {{ ?k <urn:t:kind> "a" ; <urn:t:val> ?v1 . GRAPH <urn:kb> {{ ?band <urn:holds> ?v1 }} }}
  DEFINE GPM C ON S1 {{ ?k <urn:t:kind> "c" }} }}
"""


INTERVAL_SEQ = 'SELECT ?k WHERE { ?k <urn:t:kind> "a" } SEQ { ?k <urn:t:kind> "c" }'


def spanning(start: str, time: int, name: str, **kwargs) -> GraphEvent:
    """`event` over the interval [start, time] (start as written: its lexical form must survive)."""
    return replace(event(time, name, **kwargs), start=Timestamp(float(start), start, True))


# --------------------------------------------------------------------------- `rsep serve --engine spark`
