"""Helpers of the Spark streaming engine tests: a node (a Spark streaming engine on a data folder,
on the shared `local[2]` session of tests/conftest.py) and the in-process reference it must agree
with, queries and events more than one module runs, and `rsep serve --engine spark` in a
subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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
from rsep.plugin.service.registry import RegisteredQuery, Registry
from rsep.plugin.service.runner import QueryRunner
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase, solutions
from rsep.plugin.store.match_sink import OxigraphMatchSink
from rsep.plugin.vocabulary import MATCHES_GRAPH
from tests.support.events import S1, clock, event
from tests.support.paths import REPO
from tests.support.servers import Server, free_port

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rsep.plugin.spark.streaming_engine import SparkStreamingEngine


def compile_text(query: RegisteredQuery) -> QueryPlan:
    return compile_query(parse_event_query(query.text))


class Node:
    """One 'process' on a data folder: log, registry, checkpoints, a Spark
    streaming engine (the store handle is shared: a process opens it once)."""

    def __init__(
        self, root: Path, kb: KnowledgeBase, spark: SparkSession, trigger_interval: float = 0.05
    ) -> None:
        from rsep.plugin.spark.streaming_engine import SparkStreamingEngine

        self.root = root
        self.kb = kb
        self.log = EventLog(root / "log")
        self.registry = Registry(root / "queries")
        self.checkpoints = CheckpointStore(root / "checkpoints")
        self.sink = OxigraphMatchSink(kb)
        self.engine: SparkStreamingEngine = SparkStreamingEngine(
            self.log, self.registry, self.checkpoints, self.sink, compile_text, kb, spark,
            trigger_interval=trigger_interval, kb_poll=0.1, clock=clock,
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

START_TIMEOUT = 120


class SparkServer(Server):
    """A `rsep serve --engine spark --master local[2]` subprocess."""

    def __init__(self, data: Path, log: Path, *, engine: str | None = "spark") -> None:
        """`engine=None` leaves `--engine` out: the server's default. (Not Server's
        constructor: another command, a longer start.)"""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.data = data
        command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(self.port),
                   "--data", str(data), "--master", "local[2]"]  # fmt: skip
        if engine is not None:
            command += ["--engine", engine]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                                        env=dict(os.environ))  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.get("/queries")
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"rsep serve did not start: {log.read_text()}") from None
                time.sleep(0.2)

    def descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        found, todo = [], [self.process.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    def kill(self) -> None:
        """SIGKILL the server; its JVM notices its stdin closing and exits too
        (waited for: a JVM still finishing a batch must not meet the next one)."""
        family = self.descendants()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 60
        while any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in family):
            assert time.monotonic() < deadline, "the server's JVM outlived it"
            time.sleep(0.1)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=90)

    def spark_batches(self, query_id: str) -> int:
        """Micro-batches Spark planned for a query: its offset log (written before a batch runs)
        in the query's checkpoint folder, which only the Spark engine writes (the in-process
        engine, which `spark` falls back to without Java, keeps `*.ckpt` files there instead)."""
        offsets = self.data / "checkpoints" / query_id / "spark" / "offsets"
        return sum(1 for entry in offsets.iterdir() if entry.name.isdigit()) if offsets.is_dir() else 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_caught_up(server: SparkServer, query_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        read = server.get(f"/queries/{query_id}")
        if read["lag"] == 0 and read["status"] == "running":
            return read
        assert read["status"] != "failed", read["error"]
        assert time.monotonic() < deadline, read
        time.sleep(0.1)
