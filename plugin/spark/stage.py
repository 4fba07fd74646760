"""The replay distributed over Spark: the same steps as `rsep.plugin.replay`.

    driver     numbered events -> DataFrame (EVENT_SCHEMA); the background
               snapshot (each `kb_query` answered once, the graphs a combined
               GPM plan needs as N-Quads) broadcast to the executors
    executors  mapInPandas: GPM stage (Oxigraph over batches of events)
               -> GPM rows (GPM_ROW_SCHEMA) keyed by the partition-key values
    shuffle    by key
    executors  groupBy(key).applyInPandas: per key, the pure NFA runtime on a
               fresh state -> match rows (MATCH_SCHEMA)
    driver     collect, rebuild `Match`es, sort in detection order

Partitioning is sound because the plan's key variables are bound by every GPM
in every solution, so runs of different key values never join; ranks are
numbered over the whole streamset before the split, so strict contiguity
still sees the events of other keys (see docs/spark.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence

import pandas as pd
from pyspark import Broadcast
from pyspark.sql import DataFrame, SparkSession

from rsep.plugin.compile.gpm_plan import GpmPlan
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.spark.adapter import GPM_COLUMNS, BatchKeyStep, matches_of, typed_frame
from rsep.plugin.spark.schemas import EVENT_SCHEMA, GPM_ROW_SCHEMA, MATCH_SCHEMA
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import BackgroundSnapshot, KnowledgeBase


class SparkReplay:
    """`Replay` with the GPM stage and the per-key NFAs on Spark executors:
    `run` returns exactly what `Replay(plan, GpmEvaluator(plan.gpms, kb)).run`
    returns."""

    def __init__(
        self, plan: QueryPlan, kb: KnowledgeBase, spark: SparkSession, batch_size: int = 5000
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.plan = plan
        self.kb = kb
        self.spark = spark
        self.batch_size = batch_size

    def run(self, events: Sequence[NumberedEvent]) -> list[Match]:
        """All matches over `events` (numbered over the whole streamset), in
        detection order. Each call is a whole replay from fresh NFA states;
        the knowledge base is read once, on the driver, when the call starts."""
        if not events:
            return []
        background = self.spark.sparkContext.broadcast(self.kb.snapshot(self.plan.gpms))
        try:
            gpm_rows = self.events_frame(events).mapInPandas(
                GpmStage(self.plan.gpms, self.plan.key, background, self.batch_size), GPM_ROW_SCHEMA
            )
            found = (
                gpm_rows.repartition("key")
                .groupBy("key")
                .applyInPandas(_per_key(BatchKeyStep(self.plan.automaton, self.plan.key)), MATCH_SCHEMA)
            )
            records = found.toArrow().to_pylist()
        finally:
            background.destroy()
        return matches_of(records)

    def events_frame(self, events: Sequence[NumberedEvent]) -> DataFrame:
        """The events as a DataFrame of about `batch_size` events per partition,
        at most one partition per core: GPM batches stay large, cores stay busy."""
        frame = pd.DataFrame(
            {
                "id": [n.id for n in events],
                "rank": [n.rank for n in events],
                "time": [n.event.time.seconds for n in events],
                "stream": [n.event.stream for n in events],
                "ntriples": [n.event.ntriples for n in events],
                "start": pd.Series([_start(n.event) for n in events], dtype="float64"),
            },
            columns=EVENT_SCHEMA.fieldNames(),
        )
        partitions = min(self.spark.sparkContext.defaultParallelism, math.ceil(len(events) / self.batch_size))
        return self.spark.createDataFrame(frame, schema=EVENT_SCHEMA).coalesce(max(partitions, 1))


class GpmStage:
    """The `mapInPandas` function: event rows -> GPM rows, one `GpmEvaluator`
    per task over the broadcast background snapshot, in batches of
    `batch_size` events. The GPM queries match each event graph on its own
    (`GRAPH ?event`), so how events fall into batches does not change the rows."""

    def __init__(
        self,
        gpms: Sequence[GpmPlan],
        key: Sequence[str],
        background: Broadcast[BackgroundSnapshot],
        batch_size: int,
    ) -> None:
        self.gpms = tuple(gpms)
        self.key = tuple(key)
        self.background = background
        self.batch_size = batch_size

    def __call__(self, frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        evaluator = GpmEvaluator(self.gpms, self.background.value)
        for frame in frames:
            for start in range(0, len(frame), self.batch_size):
                yield self.rows(evaluator, frame.iloc[start : start + self.batch_size])

    def rows(self, evaluator: GpmEvaluator, frame: pd.DataFrame) -> pd.DataFrame:
        """GPM rows of one batch of event rows."""
        ids = frame["id"].tolist()
        ranks = dict(zip(ids, frame["rank"].tolist(), strict=True))
        times = dict(zip(ids, frame["time"].tolist(), strict=True))
        starts = dict(zip(ids, frame["start"].tolist(), strict=True))
        batch = [
            (event_id, _event(stream, time, ntriples))
            for event_id, stream, time, ntriples in zip(
                ids, frame["stream"].tolist(), frame["time"].tolist(), frame["ntriples"].tolist(), strict=True
            )
        ]
        out: dict[str, list[object]] = {name: [] for name in GPM_COLUMNS}
        for gpm, found in evaluator.evaluate(batch).items():
            for event_id, mapping in found:
                out["key"].append(json.dumps([mapping[name] for name in self.key]))
                out["rank"].append(ranks[event_id])
                out["time"].append(times[event_id])
                out["event"].append(event_id)
                out["gpm"].append(gpm)
                out["mapping"].append(mapping)
                out["start"].append(starts[event_id])
        return typed_frame(out)


def _per_key(step: BatchKeyStep) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """`step.matches_frame` as a plain function: pyspark counts a bound
    method's `self` and would then pass the grouping key as well."""

    def matches(rows: pd.DataFrame) -> pd.DataFrame:
        return step.matches_frame(rows)

    return matches


def _start(event: GraphEvent) -> float | None:
    """The start of the interval an event spans (None: an instantaneous event, null to Spark)."""
    return None if event.start is None else event.start.seconds


def _event(stream: str, seconds: float, ntriples: str) -> GraphEvent:
    """An event as far as the GPM stage reads it (its stream and triples; the
    graph name and the timestamp's lexical form stay on the driver)."""
    return GraphEvent(stream, "", Timestamp(seconds, repr(seconds), True), ntriples)
