"""Replaying a compiled query over finite event sets (the `rsep run` core, in process).

The pipeline every driver shares: events numbered over the query's streamset
(`rsep.plugin.numbering`), the GPMs evaluated batch by batch, and each batch's rows given to
the per-key step (`rsep.plugin.nfa.keyed`). A batch never splits a timestamp, so every rank of
it is closed and nothing is ever pending. The Spark stage distributes exactly these steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.nfa.keyed import GpmEvaluatorLike, KeyedNfa, KeyedState, in_detection_order
from rsep.plugin.nfa.runtime import Match, NfaState, Runtime
from rsep.plugin.numbering import NumberedEvent


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

    def run(self, events: Sequence[NumberedEvent]) -> list[Match]:
        matches: list[Match] = []
        for batch in batches(events, self.batch_size):
            matches.extend(self.process_batch(batch))
        return in_detection_order(matches)

    def process_batch(self, batch: Sequence[NumberedEvent]) -> list[Match]:
        rows = self.evaluator.evaluate((n.id, n.event) for n in batch)
        numbered = {n.id: n for n in batch}
        last = batch[-1]
        return self.keyed.step(
            self.state, rows, numbered, last.rank, last.event.time.seconds, tentative=False
        )
