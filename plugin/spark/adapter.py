"""The per-key NFA step as Spark's grouped pandas UDFs call it.

`KeyStep` is a thin adapter: GPM rows of one partition key (a pandas frame in
`GPM_ROW_SCHEMA`'s columns) become rank-ordered `Group`s for the pure
`Runtime.process`, and the matches it returns become rows again. The NFA
loop stays in `rsep.plugin.nfa`; nothing here imports pyspark, so the step
runs (and is tested) without a SparkSession.

It has the shape `(state, rows) -> (state, matches)` so that a streaming job
can reuse it unchanged, keeping each key's `NfaState` in Spark's state store
as bytes (`dump_state`/`load_state`). With `applyInPandasWithState`, for
instance::

    step = KeyStep(plan.automaton)

    def update(key, frames, group_state):
        state = load_state(group_state.get[0]) if group_state.exists else None
        state, matches = step(state, pd.concat(list(frames)))
        step.runtime.advance_time(state, watermark_rank, watermark_time)
        if state.runs:
            group_state.update((dump_state(state),))
        else:
            group_state.remove()
        yield match_frame(matches)

    gpm_rows.groupBy("key").applyInPandasWithState(
        update, MATCH_SCHEMA, "nfa binary", "Append", GroupStateTimeout.NoTimeout)

Two conditions carry over from the batch stage: ranks are numbered over the
whole streamset before the rows are split by key (strict contiguity compares
them), and a micro-batch never splits a rank (`Runtime.process` rejects a rank
it has already seen). `watermark_rank`/`watermark_time` are the last rank and
time of the micro-batch, as `Replay` advances every state after each batch;
a key without rows in a micro-batch is not called, so expiring its runs
(WITHIN) needs an event-time timeout that calls `advance_time` too.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.runtime import Group, Match, NfaState, Runtime
from rsep.plugin.service.checkpoints import load_pickle

GPM_COLUMNS = ("key", "rank", "time", "event", "gpm", "mapping", "start")
"""A GPM solution: partition key (JSON), event rank, time and id, GPM index, mapping, and the
event's interval start (NaN, null to Spark, for an instantaneous event)."""

MATCH_COLUMNS = ("events", "start_time", "end_time", "start_rank", "end_rank", "mapping")
"""A complete match, as `Match` holds it."""


class KeyStep:
    """`(state, rows) -> (state, matches)` for one partition key.

    Pickles as its automaton only: the `Runtime` (with the compiled stateful
    filters) is built where the step runs, once per deserialised copy, so a
    Spark task pays for it once and not per key."""

    __slots__ = ("_runtime", "automaton")

    def __init__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = Runtime(self.automaton)
        return self._runtime

    def __call__(self, state: NfaState | None, rows: pd.DataFrame) -> tuple[NfaState, list[Match]]:
        """Feed one key's new GPM rows (any order, ranks after the state's)."""
        runtime = self.runtime
        return runtime.process(state if state is not None else runtime.new_state(), groups_of(rows))

    def matches_frame(self, rows: pd.DataFrame) -> pd.DataFrame:
        """All of a key's rows at once, from a fresh state (the batch job's
        `applyInPandas` function)."""
        _, matches = self(None, rows)
        return match_frame(matches)

    def __getstate__(self) -> Automaton:
        return self.automaton

    def __setstate__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self._runtime = None


def groups_of(rows: pd.DataFrame) -> list[Group]:
    """GPM rows -> one `Group` per rank, in rank order. Rows within a group are
    ordered by GPM and event id, so the result does not depend on how Spark
    happened to shuffle them. Interval events' starts go to `Group.starts`, as
    `rsep.plugin.replay.groups_by_key` puts them."""
    ordered = rows.sort_values(["rank", "gpm", "event"], kind="stable")
    groups: list[Group] = []
    current: dict[int, list[tuple[int, Mapping[str, str]]]] = {}
    for rank, time, event, gpm, mapping in zip(
        ordered["rank"].tolist(),
        ordered["time"].tolist(),
        ordered["event"].tolist(),
        ordered["gpm"].tolist(),
        ordered["mapping"].tolist(),
        strict=True,
    ):
        if not groups or groups[-1].rank != rank:
            current = {}
            groups.append(Group(rank, time, current))
        current.setdefault(gpm, []).append((event, _as_dict(mapping)))
    _add_starts(groups, ordered)
    return groups


def _add_starts(groups: Sequence[Group], rows: pd.DataFrame) -> None:
    """`Group.starts` from the rows whose event spans an interval (none: no work per row)."""
    spans = rows["start"].notna()
    if not spans.any():
        return
    starts: dict[int, dict[int, float]] = {}
    columns = (rows.loc[spans, name].tolist() for name in ("rank", "event", "start"))
    for rank, event, start in zip(*columns, strict=True):
        starts.setdefault(rank, {})[event] = start
    for group in groups:
        group.starts = starts.get(group.rank, group.starts)


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


def dump_state(state: NfaState) -> bytes:
    """A key's NFA state as bytes, for a state store (paths flattened by
    `rsep.plugin.nfa.snapshot`, so long Kleene+ runs pickle too)."""
    return pickle.dumps(snapshot.encode({None: state}), protocol=pickle.HIGHEST_PROTOCOL)


def load_state(data: bytes) -> NfaState:
    return snapshot.decode(load_pickle(data))[None]


def _as_dict(mapping: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Arrow hands map<string,string> values to Python as dicts or as lists of
    (key, value) pairs, depending on the conversion path."""
    return dict(mapping)
