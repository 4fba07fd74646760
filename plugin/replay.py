"""Replaying a compiled query over finite event sets (the `rsep run` core, in process).

The pipeline every driver shares: events numbered over the query's streamset
(`rsep.plugin.numbering`), the GPMs evaluated batch by batch, and each batch's rows given to
the per-key step (`rsep.plugin.nfa.keyed`). A batch never splits a timestamp, so every rank of
it is closed and nothing is ever pending. The Spark stage distributes exactly these steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.keyed import GpmEvaluatorLike, KeyedNfa, KeyedState, in_detection_order, live_events
from rsep.plugin.nfa.runtime import Match, NfaState, Runtime
from rsep.plugin.numbering import NumberedEvent

Found = tuple[list[Match], Mapping[int, GraphEvent]]
"""A batch's matches in detection order, and the events they name, by id."""


def batches(items: Iterable[NumberedEvent], size: int) -> Iterator[list[NumberedEvent]]:
    """Batches of about `size` events that never split a timestamp (rank), taken as they come."""
    batch: list[NumberedEvent] = []
    for item in items:
        if len(batch) >= size and item.rank != batch[-1].rank:
            yield batch
            batch = []
        batch.append(item)
    if batch:
        yield batch


class Replay:
    """In-process replay: GPM stage and per-key NFA states in this process."""

    def __init__(self, plan: QueryPlan, evaluator: GpmEvaluatorLike, batch_size: int = 5000) -> None:
        self.plan = plan
        self.evaluator = evaluator
        self.keyed = KeyedNfa(plan.automaton, plan.key)
        self.batch_size = batch_size
        self.state = KeyedState()

    @property
    def runtime(self) -> Runtime:
        return self.keyed.runtime

    @runtime.setter
    def runtime(self, runtime: Runtime) -> None:
        self.keyed.runtime = runtime

    @property
    def states(self) -> dict[tuple[str, ...], NfaState]:
        """Each partition key's NFA state."""
        return self.state.states

    def run(self, events: Iterable[NumberedEvent]) -> list[Match]:
        return [match for found, _ in self.stream(events) for match in found]

    def stream(
        self, events: Iterable[NumberedEvent]
    ) -> Iterator[tuple[list[Match], Mapping[int, GraphEvent]]]:
        """Per batch, as the events come: its matches in detection order, and the events they name
        (this batch's, and the earlier ones a live run still holds). Matches complete at the rank
        being processed, so batch by batch is detection order overall; memory holds one batch
        and what live runs refer to (bounded by WITHIN), whatever the length of the stream."""
        held: dict[int, GraphEvent] = {}
        for batch in batches(events, self.batch_size):
            found = in_detection_order(self.process_batch(batch))
            named = {**held, **{n.id: n.event for n in batch}}
            yield found, named
            live = live_events(self.state)
            held = {i: _bare(named[i]) for i in live if i in named}

    def process_batch(self, batch: Sequence[NumberedEvent]) -> list[Match]:
        rows = self.evaluator.evaluate((n.id, n.event) for n in batch)
        numbered = {n.id: n for n in batch}
        last = batch[-1]
        return self.keyed.step(
            self.state, rows, numbered, last.rank, last.event.time.seconds, tentative=False
        )


def _bare(event: GraphEvent) -> GraphEvent:
    """An event as a match's output names it once its batch is done (its triples dropped)."""
    return event if not event.ntriples else GraphEvent(event.stream, event.name, event.time, "", event.start)
