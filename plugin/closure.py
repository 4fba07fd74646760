"""CONSTRUCT rules fed back into the stream: EP-SPARQL's Q-closure (§4.2).

Given rules Q (CONSTRUCT queries) and a stream S, queries are evaluated over
clos_Q(S), the smallest stream holding S and every triple occurrence a rule
derives from it: a rule's match with interval [t_start, t_end] adds its
constructed triples as one derived event spanning that interval. A derived
event is detected at t_end, the timestamp being processed, and may complete
further matches at that same timestamp, so each timestamp is evaluated to a
fixpoint: the queries' states are saved before it, and while a round derives
events not seen yet, the timestamp is replayed with them from the saved
states. A rule that keeps deriving new events (e.g. one inventing a fresh
blank node from its own output) is stopped after `max_rounds` rounds with a
`ClosureError`, since its closure is infinite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rsep.plugin.algebra.events import ConstructForm
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.keyed import GpmEvaluatorLike, KeyedNfa, KeyedState, copy_state
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.results import Projector, graph_body, interval_start

DERIVED_STREAM = "urn:rsep:derived"
MAX_ROUNDS = 32


class ClosureError(InvalidInput):
    """The rules derive without end at one timestamp."""


@dataclass
class _Query:
    plan: QueryPlan
    keyed: KeyedNfa
    evaluator: GpmEvaluatorLike
    state: KeyedState
    matches: list[Match]
    feeds_back: bool
    projector: Projector


class Closure:
    """Replays queries over a stream and what their CONSTRUCT rules derive.

    `plans[i]` feeds its output back into the stream when it is a CONSTRUCT
    query; `evaluators[i]` is its GPM stage; `scopes[i]` names it in its blank
    nodes (`Projector.scope`: two rules' answers never share one). `run`
    returns each plan's matches and every event (input and derived) by id."""

    def __init__(
        self,
        plans: Sequence[QueryPlan],
        evaluators: Sequence[GpmEvaluatorLike],
        max_rounds: int = MAX_ROUNDS,
        scopes: Sequence[str] | None = None,
    ) -> None:
        names = [""] * len(plans) if scopes is None else scopes
        self.queries = [
            _Query(
                plan,
                KeyedNfa(plan.automaton, plan.key),
                evaluator,
                KeyedState(),
                [],
                isinstance(plan.query.form, ConstructForm),
                Projector.for_plan(plan, scope),
            )
            for plan, evaluator, scope in zip(plans, evaluators, names, strict=True)
        ]
        self.max_rounds = max_rounds
        self.events: dict[int, GraphEvent] = {}
        self._next_id = 0

    def run(self, events: Sequence[NumberedEvent]) -> tuple[list[list[Match]], dict[int, GraphEvent]]:
        self._next_id = max((e.id for e in events), default=-1) + 1
        self.events.update((e.id, e.event) for e in events)
        for batch in _by_rank(events):
            self._timestamp(batch)
        return [sorted(q.matches, key=Match.key) for q in self.queries], self.events

    def _timestamp(self, inputs: list[NumberedEvent]) -> None:
        derived: dict[tuple[object, ...], NumberedEvent] = {}
        for _ in range(self.max_rounds):
            batch = [*inputs, *derived.values()]
            found = [self._evaluate(q, copy_state(q.state), batch) for q in self.queries]
            fresh = self._derive(found, inputs[0], derived)
            if not fresh:
                for query, (state, matches) in zip(self.queries, found, strict=True):
                    query.state = state
                    query.matches.extend(matches)
                return
            derived.update(fresh)
        raise ClosureError(
            f"the CONSTRUCT rules still derive new events at time {inputs[0].event.time.lexical} after "
            f"{self.max_rounds} rounds: a rule feeds itself without end (e.g. a fresh blank node per match)"
        )

    def _evaluate(
        self, query: _Query, state: KeyedState, batch: list[NumberedEvent]
    ) -> tuple[KeyedState, list[Match]]:
        """One round of a timestamp, from the states before it (a copy: the next round starts
        from them again)."""
        rows = query.evaluator.evaluate((n.id, n.event) for n in batch)
        at = batch[0]
        numbered = {n.id: n for n in batch}
        matches = query.keyed.step(state, rows, numbered, at.rank, at.event.time.seconds, tentative=False)
        return state, matches

    def _derive(
        self,
        found: list[tuple[KeyedState, list[Match]]],
        at: NumberedEvent,
        known: dict[tuple[object, ...], NumberedEvent],
    ) -> dict[tuple[object, ...], NumberedEvent]:
        fresh: dict[tuple[object, ...], NumberedEvent] = {}
        for query, (_, matches) in zip(self.queries, found, strict=True):
            form = query.plan.query.form
            if not query.feeds_back or not isinstance(form, ConstructForm):
                continue
            for match in matches:
                triples = query.projector.construct(match)
                start = interval_start(match, [self.events[i] for i in match.events])
                key = (triples, start.seconds)
                if not triples or key in known or key in fresh:
                    continue
                event_id = self._next_id
                self._next_id += 1
                ntriples = graph_body(triples)
                event = GraphEvent(
                    DERIVED_STREAM, f"<urn:rsep:derived:{event_id}>", at.event.time, ntriples, start
                )
                self.events[event_id] = event
                fresh[key] = NumberedEvent(event_id, at.rank, event)
        return fresh


def _by_rank(events: Sequence[NumberedEvent]) -> list[list[NumberedEvent]]:
    batches: list[list[NumberedEvent]] = []
    for event in events:
        if batches and batches[-1][0].rank == event.rank:
            batches[-1].append(event)
        else:
            batches.append([event])
    return batches
