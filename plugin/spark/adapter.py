"""The Spark batch stage's per-key function: one partition key's GPM rows -> its matches.

`BatchKeyStep` is a thin adapter: the rows of one partition key (a pandas frame in
`GPM_ROW_SCHEMA`'s columns) become the per-key step's rows and events
(`rsep.plugin.nfa.keyed`), from a fresh state, and the matches it returns become rows again.
The NFA loop stays in `rsep.plugin.nfa`; nothing here imports pyspark, so the function runs (and
is tested) without a SparkSession. The streaming stage's counterpart, with the key's state in
Spark's state store, is `rsep.plugin.spark.stream_stages.StreamKeyStep`.

Ranks are numbered over the whole streamset before the rows are split by key (strict contiguity
compares them), so a key sees the ranks of every event, not only of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, Rows
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent

GPM_COLUMNS = ("key", "rank", "time", "event", "gpm", "mapping", "start")
"""A GPM solution: partition key (JSON), event rank, time and id, GPM index, mapping, and the
event's interval start (NaN, null to Spark, for an instantaneous event)."""

MATCH_COLUMNS = ("events", "start_time", "end_time", "start_rank", "end_rank", "mapping")
"""A complete match, as `Match` holds it."""


class BatchKeyStep:
    """All of a key's rows at once, from a fresh state: the batch job's `applyInPandas`
    function. Pickles as its per-key step (the automaton and key only)."""

    __slots__ = ("keyed",)

    def __init__(self, automaton: Automaton, key: Sequence[str]) -> None:
        self.keyed = KeyedNfa(automaton, key)

    def matches(self, rows: pd.DataFrame) -> list[Match]:
        gpm_rows, events = rows_of(rows)
        if not events:
            return []
        last = max(events.values(), key=lambda n: n.rank)
        return self.keyed.step(KeyedState(), gpm_rows, events, last.rank, last.event.time.seconds)

    def matches_frame(self, rows: pd.DataFrame) -> pd.DataFrame:
        return match_frame(self.matches(rows))


def rows_of(rows: pd.DataFrame) -> tuple[Rows, dict[int, NumberedEvent]]:
    """GPM rows (any order) -> the step's rows, ordered by rank, GPM and event id so that the
    result does not depend on how Spark happened to shuffle them, and their events (rank, time
    and, for one that spans an interval, its start)."""
    ordered = rows.sort_values(["rank", "gpm", "event"], kind="stable")
    gpm_rows: Rows = {}
    events: dict[int, NumberedEvent] = {}
    columns = (ordered[name].tolist() for name in ("rank", "time", "event", "gpm", "mapping", "start"))
    for rank, time, event, gpm, mapping, start in zip(*columns, strict=True):
        if event not in events:
            begins = None if math.isnan(start) else Timestamp(start, repr(start), True)
            at = Timestamp(time, repr(time), True)
            events[event] = NumberedEvent(event, rank, GraphEvent("", "", at, "", begins))
        gpm_rows.setdefault(gpm, []).append((event, _as_dict(mapping)))
    return gpm_rows, events


def match_frame(matches: Sequence[Match]) -> pd.DataFrame:
    """Matches as rows of `MATCH_COLUMNS`."""
    return typed_frame(
        {
            "events": [list(m.events) for m in matches],
            "start_time": [m.start_time for m in matches],
            "end_time": [m.end_time for m in matches],
            "start_rank": [m.start_rank for m in matches],
            "end_rank": [m.end_rank for m in matches],
            "mapping": [dict(m.mapping) for m in matches],
        }
    )


_DTYPES = {"key": object, "rank": "int64", "time": "float64", "event": "int64", "gpm": "int32"}
_DTYPES |= {"start": "float64", "events": object, "start_time": "float64", "end_time": "float64"}
_DTYPES |= {"start_rank": "int64", "end_rank": "int64", "mapping": object}


def typed_frame(columns: Mapping[str, Sequence[object]]) -> pd.DataFrame:
    """A frame with the dtypes Arrow needs to convert it to the stage's schemas
    even when it is empty (pandas types empty columns float64, which Arrow
    cannot turn into arrays or maps)."""
    return pd.DataFrame({name: pd.Series(values, dtype=_DTYPES[name]) for name, values in columns.items()})


def matches_of(records: Iterable[Mapping[str, Any]]) -> list[Match]:
    """Match rows (as dictionaries, e.g. from `pyarrow.Table.to_pylist`) ->
    `Match` objects, in detection order."""
    matches = [
        Match(
            tuple(int(e) for e in record["events"]),
            float(record["start_time"]),
            float(record["end_time"]),
            int(record["start_rank"]),
            int(record["end_rank"]),
            _as_dict(record["mapping"]),
        )
        for record in records
    ]
    return sorted(matches, key=Match.key)


def _as_dict(mapping: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Arrow hands map<string,string> values to Python as dicts or as lists of
    (key, value) pairs, depending on the conversion path."""
    return dict(mapping)
