"""The latency floor of a Spark micro-batch on this machine: what the Spark streaming engine's
ingest-to-visible latency cannot go below, whatever rsep does inside the batch.

It runs, on the engine's own session settings (`plugin/spark/streaming_engine.ENGINE_CONF`: RocksDB
state store, no data-less batches) and `local[2]`, trivial streaming jobs of the engine's shape
with nothing of rsep inside:

- `source`: a Python Data Source streaming reader (like the event-log source) into foreachBatch;
- `source+map+state`: the same, then mapInPandas (the GPM stage's place) and
  applyInPandasWithState with an event-time timeout and a watermark (the per-key NFA's place),
  one state partition per core;
- `source+state`: the engine's shape since the single job (the GPM stage runs inside the
  source's `read`, so there is no mapInPandas);
- `source+state/hdfs`, `source+state/1`: the same on the HDFS-backed state store (in memory,
  delta files) instead of RocksDB, or with one state partition instead of one per core.

It also prints the median of each phase Spark reports per batch (`durationMs`).

For each it makes one record available at a time, waits until foreachBatch has seen it, and
prints the median and p90 of that wait (the latency of a record arriving while nothing runs) and
of Spark's own `triggerExecution` per batch. A record arriving while a batch runs waits for that
batch too, so under load the engine's latency is about 1.5 batches. Nothing is asserted.

Run from the repository root:
    .venv/bin/python -m bench.bench_spark_floor [--records N] [--master URL]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from rsep.plugin.spark.session import get_session
from rsep.plugin.spark.streaming_engine import ENGINE_CONF

COUNTER_OPTION = "counter"


class CounterSource(DataSource):
    """Rows 0..n-1, n read from a file the benchmark writes: a source with no work in it."""

    @classmethod
    def name(cls) -> str:
        return "rsep_floor_counter"

    def schema(self) -> str:
        return "key string, value long, time double"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return CounterReader(Path(self.options[COUNTER_OPTION]))


class CounterReader(DataSourceStreamReader):
    def __init__(self, counter: Path) -> None:
        self.counter = counter

    def initialOffset(self) -> dict[str, int]:
        return {"n": 0}

    def latestOffset(self) -> dict[str, int]:
        text = self.counter.read_text() if self.counter.exists() else ""
        return {"n": int(text or 0)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        return [InputPartition((start["n"], end["n"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, float]]:
        first, end = partition.value
        for value in range(first, end):
            yield ("k", value, 1000.0 + value)  # after the initial watermark (0)

    def commit(self, end: dict[str, int]) -> None:
        pass


def count_rows(
    key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
) -> Iterator[pd.DataFrame]:
    total = (state.get[0] if state.exists else 0) + sum(len(frame) for frame in frames)
    state.update((total,))
    state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 60_000)
    yield pd.DataFrame({"key": [key[0]], "n": [total]})


def passthrough(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    yield from frames


SHAPES = ("source", "source+map+state", "source+state", "source+state/hdfs", "source+state/1")
HDFS_STORE = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def job(session: SparkSession, counter: Path, shape: str) -> DataFrame:
    frame = session.readStream.format(CounterSource.name()).option(COUNTER_OPTION, str(counter)).load()
    if shape == "source":
        return frame
    if shape == "source+map+state":
        frame = frame.mapInPandas(passthrough, frame.schema)
    frame = frame.withColumn("ts", F.timestamp_seconds("time")).withWatermark("ts", "1 milliseconds")
    return frame.groupBy("key").applyInPandasWithState(
        count_rows, "key string, n long", "n long", "Append", GroupStateTimeout.EventTimeTimeout
    )


def measure(
    spark: SparkSession, shape: str, records: int, workdir: Path
) -> tuple[list[float], list[float], dict[str, float]]:
    session = spark.newSession()
    for name, value in ENGINE_CONF.items():
        session.conf.set(name, value)
    partitions = 1 if shape.endswith("/1") else spark.sparkContext.defaultParallelism
    session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    if shape.endswith("/hdfs"):
        session.conf.set("spark.sql.streaming.stateStore.providerClass", HDFS_STORE)
    session.dataSource.register(CounterSource)
    name = shape.replace("/", "-")
    counter = workdir / f"{name}.counter"
    counter.write_text("0")
    seen: list[float] = []

    def on_batch(frame: DataFrame, batch_id: int) -> None:
        if frame.toArrow().num_rows:
            seen.append(time.perf_counter())

    query = (
        job(session, counter, shape)
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(workdir / f"{name}.checkpoint"))
        .trigger(processingTime="50 milliseconds")
        .start()
    )
    waits = []
    try:
        for n in range(1, records + 1):
            before = len(seen)
            written = time.perf_counter()
            counter.write_text(str(n))
            while len(seen) == before:
                if not query.isActive:
                    raise SystemExit(f"{shape}: the streaming query stopped: {query.exception()}")
                time.sleep(0.002)
            waits.append((seen[-1] - written) * 1000)
            time.sleep(0.2)  # let the trigger loop go idle: the next record arrives while nothing runs
        progress = [p["durationMs"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    skip = min(5, records // 4)  # the first batches start the Python workers
    batches = [float(p["triggerExecution"]) for p in progress[skip:]]
    phases = {name: statistics.median(float(p.get(name, 0)) for p in progress[skip:])
              for name in progress[-1] if name != "triggerExecution"} if progress[skip:] else {}  # fmt: skip
    return waits[skip:], batches, phases


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):7.0f} ms   p90 {p90:7.0f} ms   (n={len(ordered)})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=30, help="records per job, one at a time (default 30)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="shapes to run (default: all)")
    args = parser.parse_args(argv)
    print(f"Spark micro-batch floor: {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}, Python {platform.python_version()}, master {args.master}")  # fmt: skip
    spark = get_session(args.master)
    with tempfile.TemporaryDirectory(prefix="rsep-floor-") as workdir:
        for shape in args.shape or SHAPES:
            waits, batches, phases = measure(spark, shape, args.records, Path(workdir))
            print(f"  {shape:<18} record to foreachBatch: {summary(waits)}")
            print(f"  {'':<18} triggerExecution:      {summary(batches)}")
            parts = ", ".join(f"{name} {ms:.0f}" for name, ms in sorted(phases.items(), key=lambda i: -i[1]))
            print(f"  {'':<18} phases (median ms):    {parts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
