"""CONSTRUCT rules fed back into the stream: EP-SPARQL's Q-closure (§4.2).

Given rules Q (CONSTRUCT queries) and a stream S, queries are evaluated over
clos_Q(S), the smallest stream holding S and every triple occurrence a rule
derives from it: a rule's match with interval [t_start, t_end] adds its
constructed triples as one derived event spanning that interval. A derived
event is detected at t_end, the timestamp being processed, and may complete
further matches at that same timestamp, so each timestamp is evaluated to a
fixpoint: the queries' states are saved before it, and while a round derives
events not seen yet, the timestamp is replayed with them from the saved
states. The closure may be large and still finite (a counter a rule raises
until a FILTER stops it: one round per derived event), so what stops a rule
is what actually diverges, with limits (`ClosureLimits`): the rounds at one
timestamp, and the events derived at one timestamp per input event there. A
timestamp that passes either is a `ClosureError` naming the rules that still
derived in the last round.

A round costs what it derives, not what the timestamp holds: GPM rows are
computed once per event, a query that feeds nothing back (the SELECT) runs once
on the timestamp's fixpoint, and a rule whose every match is one row of one
state (`_row_local`: a triple pattern with its BINDs and FILTERs, the usual
recursive rule) meets only the round's new events. Any other rule replays the
timestamp from the saved states each round (`Runtime.process` sees a rank
whole), which is exact under every policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from rsep.plugin.algebra.events import ConstructForm, ConsumptionPolicy
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.nfa.automaton import Automaton, DisjunctionAtom, GpmAtom, JoinAtom
from rsep.plugin.nfa.keyed import GpmEvaluatorLike, GpmRows, KeyedNfa, KeyedState, Rows, copy_state
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.results import Projector, graph_body, interval_start

DERIVED_STREAM = "urn:rsep:derived"


@dataclass(frozen=True, slots=True)
class ClosureLimits:
    """Where a timestamp's closure is taken to diverge (`rsep run --closure-rounds`,
    `--closure-events`): past `rounds` rounds, or past `events_per_input` derived events per
    input event of the timestamp. Both well above a terminating rule's usual depth."""

    rounds: int = 10_000
    events_per_input: int = 10_000

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.events_per_input < 1:
            raise ValueError("closure limits are positive")


class ClosureError(InvalidInput):
    """The rules derive without end at one timestamp (or past the limits)."""


@dataclass
class _Query:
    plan: QueryPlan
    keyed: KeyedNfa
    evaluator: GpmEvaluatorLike
    state: KeyedState
    matches: list[Match]
    feeds_back: bool
    projector: Projector
    name: str
    row_local: bool


class Closure:
    """Replays queries over a stream and what their CONSTRUCT rules derive.

    `plans[i]` feeds its output back into the stream when it is a CONSTRUCT
    query; `evaluators[i]` is its GPM stage; `scopes[i]` names it in its blank
    nodes (`Projector.scope`: two rules' answers never share one), `names[i]` in
    errors (its file). `run` returns each plan's matches and every event (input
    and derived) by id."""

    def __init__(
        self,
        plans: Sequence[QueryPlan],
        evaluators: Sequence[GpmEvaluatorLike],
        limits: ClosureLimits | None = None,
        scopes: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        blank = [""] * len(plans)
        self.queries = [
            _Query(
                plan,
                KeyedNfa(plan.automaton, plan.key),
                evaluator,
                KeyedState(),
                [],
                isinstance(plan.query.form, ConstructForm),
                Projector.for_plan(plan, scope),
                name or f"query {index + 1}",
                _row_local(plan.automaton),
            )
            for index, (plan, evaluator, scope, name) in enumerate(
                zip(plans, evaluators, scopes or blank, names or blank, strict=True)
            )
        ]
        self.limits = limits or ClosureLimits()
        self.events: dict[int, GraphEvent] = {}
        self._next_id = 0

    def run(self, events: Sequence[NumberedEvent]) -> tuple[list[list[Match]], dict[int, GraphEvent]]:
        self._next_id = max((e.id for e in events), default=-1) + 1
        self.events.update((e.id, e.event) for e in events)
        for batch in _by_rank(events):
            self._timestamp(batch)
        return [sorted(q.matches, key=Match.key) for q in self.queries], self.events

    def _timestamp(self, inputs: list[NumberedEvent]) -> None:
        """Rounds until nothing new is derived, then every query once over the fixpoint."""
        rows: list[Rows] = [{} for _ in self.queries]
        batch = list(inputs)
        derived: dict[tuple[object, ...], NumberedEvent] = {}
        new = batch
        final: dict[int, tuple[KeyedState, list[Match]]] = {}
        for _ in range(self.limits.rounds + 1):
            found: dict[int, list[Match]] = {}
            for index, query in enumerate(self.queries):
                if not query.feeds_back:
                    continue
                fresh_rows = _extend(rows[index], _rows(query, new))
                if query.row_local:  # only the new events' own matches are new
                    found[index] = self._evaluate(query, KeyedState(), fresh_rows, new)
                else:
                    state = copy_state(query.state)
                    found[index] = self._evaluate(query, state, rows[index], batch)
                    final[index] = (state, found[index])
            fresh, producers = self._derive(found, inputs[0], derived)
            if not fresh:
                break
            derived.update(fresh)
            limit = self.limits.events_per_input
            if len(derived) > limit * len(inputs):
                how = f"past {limit} derived events per input event (--closure-events)"
                self._diverges(inputs, how, producers)
            new = list(fresh.values())
            batch.extend(new)
        else:
            self._diverges(inputs, f"after {self.limits.rounds} rounds (--closure-rounds)", producers)
        for index, query in enumerate(self.queries):
            if index not in final:
                every = rows[index] if query.feeds_back else _rows(query, batch)
                state = copy_state(query.state)
                final[index] = (state, self._evaluate(query, state, every, batch))
            query.state, matches = final[index]
            query.matches.extend(matches)

    def _diverges(self, inputs: list[NumberedEvent], how: str, producers: set[int]) -> NoReturn:
        rules = ", ".join(self.queries[i].name for i in sorted(producers))
        raise ClosureError(
            f"{rules}: the CONSTRUCT rules still derive new events at time {inputs[0].event.time.lexical} "
            f"{how}: a rule that feeds itself without end (e.g. a fresh blank node per match) has an "
            "infinite closure; a finite but deeper one needs a higher limit"
        )

    def _evaluate(
        self, query: _Query, state: KeyedState, rows: GpmRows, batch: list[NumberedEvent]
    ) -> list[Match]:
        """One pass over a timestamp's rows, on `state` (a copy of the states before it)."""
        at = batch[0]
        numbered = {n.id: n for n in batch}
        return query.keyed.step(state, rows, numbered, at.rank, at.event.time.seconds, tentative=False)

    def _derive(
        self,
        found: dict[int, list[Match]],
        at: NumberedEvent,
        known: dict[tuple[object, ...], NumberedEvent],
    ) -> tuple[dict[tuple[object, ...], NumberedEvent], set[int]]:
        """The events `found` derives that are not `known`, and which queries derived them."""
        fresh: dict[tuple[object, ...], NumberedEvent] = {}
        producers: set[int] = set()
        for index, matches in found.items():
            query = self.queries[index]
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
                producers.add(index)
        return fresh, producers


def _rows(query: _Query, events: list[NumberedEvent]) -> GpmRows:
    return query.evaluator.evaluate((n.id, n.event) for n in events)


def _extend(kept: Rows, rows: GpmRows) -> Rows:
    """Adds `rows` to `kept` (a timestamp's rows so far); returns `rows` alone, as `Rows`."""
    added: Rows = {}
    for gpm, gpm_rows in rows.items():
        kept.setdefault(gpm, []).extend(gpm_rows)
        added[gpm] = list(gpm_rows)
    return added


def _row_local(automaton: Automaton) -> bool:
    """Is each match one GPM row, found alone? Then a timestamp's matches are the union of its
    events' own, and a round needs only its new events. True for one state that starts and
    accepts at once, takes one triple pattern (or a disjunction of GPMs), checks no anti-join and
    records nothing, under the unrestricted policy (a consuming one lets matches compete)."""
    if automaton.policy is not ConsumptionPolicy.UNRESTRICTED or len(automaton.states) != 1:
        return False
    state = automaton.states[0]
    atom = state.atom
    single = isinstance(atom, JoinAtom) and len(atom.operands) == 1
    plain = isinstance(atom, GpmAtom) or (
        isinstance(atom, DisjunctionAtom) and all(isinstance(op, GpmAtom) for op in atom.operands)
    )
    interval = state.interval
    return (
        (single or plain)
        and state.accepting
        and not state.after_take
        and not state.guards
        and (interval is None or (not interval.anti and interval.records is None))
    )


def _by_rank(events: Sequence[NumberedEvent]) -> list[list[NumberedEvent]]:
    batches: list[list[NumberedEvent]] = []
    for event in events:
        if batches and batches[-1][0].rank == event.rank:
            batches[-1].append(event)
        else:
            batches.append([event])
    return batches
