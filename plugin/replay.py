"""Replaying a compiled query over finite event sets (the `rsep run` core).

The pipeline every runtime shares: number the events of the query's streamset
(ids in arrival order, dense ranks by timestamp), evaluate the GPMs batch by
batch, split the GPM rows by partition key into timestamp groups, and feed
each key's groups to its NFA state. `replay` does it in-process; the Spark
stage distributes exactly these steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Protocol

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.runtime import Group, Match, NfaState, Runtime

Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NumberedEvent:
    """An event with its id (arrival position) and rank (dense timestamp number)."""

    id: int
    rank: int
    event: GraphEvent


def number_events(streams: Sequence[Sequence[GraphEvent]]) -> list[NumberedEvent]:
    """Merge per-stream event lists into one streamset order (by time; ties
    keep the order of `streams`, then of each list). Events sharing a
    timestamp share a rank, so strict contiguity ignores them (Def. 12)."""
    ordered = sorted(  # (seconds, s, i) is unique, so the events themselves are never compared
        (event.time.seconds, s, i, event)
        for s, events in enumerate(streams)
        for i, event in enumerate(events)
    )
    numbered: list[NumberedEvent] = []
    rank, last = -1, None
    for event_id, (seconds, _, _, event) in enumerate(ordered):
        if seconds != last:
            rank, last = rank + 1, seconds
        numbered.append(NumberedEvent(event_id, rank, event))
    return numbered


def groups_by_key(
    rows: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]],
    ranks: Mapping[int, NumberedEvent],
    key: Sequence[str],
) -> dict[Key, list[Group]]:
    """GPM rows of a batch -> per partition key, its groups in rank order.
    (The loop runs once per GPM row, hence the locals and no helper calls.)"""
    grouped: dict[Key, dict[int, Group]] = {}
    single = key[0] if len(key) == 1 else None
    for gpm, gpm_rows in rows.items():
        for event_id, mapping in gpm_rows:
            row_key = (mapping[single],) if single is not None else tuple([mapping[name] for name in key])
            by_rank = grouped.get(row_key)
            if by_rank is None:
                by_rank = grouped[row_key] = {}
            numbered = ranks[event_id]
            group = by_rank.get(numbered.rank)
            if group is None:
                group = by_rank[numbered.rank] = Group(numbered.rank, numbered.event.time.seconds, {})
            if numbered.event.start is not None:
                group.starts = {**(group.starts or {}), event_id: numbered.event.start.seconds}
            found = group.rows.get(gpm)
            if found is None:
                group.rows[gpm] = [(event_id, mapping)]  # type: ignore[index]
            else:
                found.append((event_id, mapping))  # type: ignore[attr-defined]
    return {k: [groups[r] for r in sorted(groups)] for k, groups in grouped.items()}


def in_detection_order(matches: list[Match]) -> list[Match]:
    """`sorted(matches, key=Match.key)`, cheaper: sort by the key without its
    last part (the sorted mapping, costly to build for every match), then
    by the whole key only among matches that tie on the rest. Both sorts are
    stable, so ties on the whole key keep their order, as in one sort."""
    ordered = sorted(matches, key=_rank_and_events)
    out: list[Match] = []
    for _, tied in groupby(ordered, key=_rank_and_events):
        same = list(tied)
        if len(same) > 1:
            same.sort(key=Match.key)
        out.extend(same)
    return out


def _rank_and_events(match: Match) -> tuple[int, int, tuple[int, ...]]:
    return match.end_rank, match.start_rank, match.events


def batches(items: Sequence[NumberedEvent], size: int) -> Iterator[Sequence[NumberedEvent]]:
    """Slices of about `size` events that never split a timestamp (rank)."""
    start = 0
    while start < len(items):
        end = min(start + size, len(items))
        while end < len(items) and items[end].rank == items[end - 1].rank:
            end += 1
        yield items[start:end]
        start = end


class Replay:
    """In-process replay: GPM stage and per-key NFA states in this process."""

    def __init__(self, plan: QueryPlan, evaluator: GpmEvaluatorLike, batch_size: int = 5000) -> None:
        self.plan = plan
        self.evaluator = evaluator
        self.runtime = Runtime(plan.automaton)
        self.batch_size = batch_size
        self.states: dict[Key, NfaState] = {}

    def run(self, events: Sequence[NumberedEvent]) -> list[Match]:
        matches: list[Match] = []
        for batch in batches(events, self.batch_size):
            matches.extend(self.process_batch(batch))
        return in_detection_order(matches)

    def process_batch(self, batch: Sequence[NumberedEvent]) -> list[Match]:
        rows = self.evaluator.evaluate((n.id, n.event) for n in batch)
        ranks = {n.id: n for n in batch}
        found: list[Match] = []
        for key, groups in groups_by_key(rows, ranks, self.plan.key).items():
            state = self.states.get(key) or self.runtime.new_state()
            state, matches = self.runtime.process(state, groups)
            self.states[key] = state
            found.extend(matches)
        last = batch[-1]
        for key, state in list(self.states.items()):
            self.runtime.advance_time(state, last.rank, last.event.time.seconds)
            if state.idle():
                del self.states[key]  # nothing left to continue, nor to block a later match
        return found


class GpmEvaluatorLike(Protocol):
    """What the replay needs from a GPM stage (the Oxigraph evaluator)."""

    def evaluate(
        self, events: Iterable[tuple[int, GraphEvent]]
    ) -> Mapping[int, Sequence[tuple[int, Mapping[str, str]]]]: ...
