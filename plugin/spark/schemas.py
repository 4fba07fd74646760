"""The Spark stage's row types, spelled out so Spark never infers a schema.

Event ids and ranks are longs (a stream may outgrow 2^31 events), times are
double seconds as in `Timestamp.seconds`, RDF terms stay N-Triples text.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from rsep.plugin.spark.adapter import GPM_COLUMNS, MATCH_COLUMNS

_MAPPING = MapType(StringType(), StringType(), valueContainsNull=False)

EVENT_SCHEMA = StructType(
    [
        StructField("id", LongType(), nullable=False),
        StructField("rank", LongType(), nullable=False),
        StructField("time", DoubleType(), nullable=False),
        StructField("stream", StringType(), nullable=False),
        StructField("ntriples", StringType(), nullable=False),
        StructField("start", DoubleType(), nullable=True),
    ]
)
"""A numbered event: id (arrival order), dense rank, time, stream IRI, triples, and the start
of the interval it spans (null for an instantaneous event)."""

GPM_ROW_SCHEMA = StructType(
    [
        StructField("key", StringType(), nullable=False),
        StructField("rank", LongType(), nullable=False),
        StructField("time", DoubleType(), nullable=False),
        StructField("event", LongType(), nullable=False),
        StructField("gpm", IntegerType(), nullable=False),
        StructField("mapping", _MAPPING, nullable=False),
        StructField("start", DoubleType(), nullable=True),
    ]
)
"""A GPM solution, keyed by the JSON list of its partition-key values, with its event's
interval start (null for an instantaneous event)."""

MATCH_SCHEMA = StructType(
    [
        StructField("events", ArrayType(LongType(), containsNull=False), nullable=False),
        StructField("start_time", DoubleType(), nullable=False),
        StructField("end_time", DoubleType(), nullable=False),
        StructField("start_rank", LongType(), nullable=False),
        StructField("end_rank", LongType(), nullable=False),
        StructField("mapping", _MAPPING, nullable=False),
    ]
)
"""A complete match."""

assert tuple(GPM_ROW_SCHEMA.fieldNames()) == GPM_COLUMNS
assert tuple(MATCH_SCHEMA.fieldNames()) == MATCH_COLUMNS
