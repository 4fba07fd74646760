"""Anti-joins of interval patterns: a match whose optional side (an auxiliary
pattern) occurred compatibly, in the relation the anti-join names, is dropped
(EP-SPARQL OPTIONALSEQ / EQUALSOPTIONAL, §4.2; CQELS-CEP SEQ_WO, NO_HEAD, NO_TAIL).

Auxiliary patterns remember their solutions (`NfaState.history`); a match with
anti-joins is decided once its whole timestamp is in (`resolve`), except for an
open anti-join (CQELS-CEP NO_TAIL), which a later solution may still block: the
match waits in `NfaState.pending` until an evaluation time asks (`settle`).
`plugin/nfa/memory.py` says which remembered solutions may be forgotten.
"""

from __future__ import annotations

from rsep.plugin.nfa.automaton import AntiJoin, IntervalSpec, Relation
from rsep.plugin.nfa.interval_checks import (
    Spans,
    TimedPredicate,
    hull,
    relation_holds,
    scoped,
    timed_predicate,
)
from rsep.plugin.nfa.memory import RememberedIndexes
from rsep.plugin.nfa.outcomes import join, unmarked
from rsep.plugin.nfa.runs import Match, NfaState


class AntiJoins:
    """The anti-joins of one automaton, with their compiled conditions and the
    indexes of remembered solutions they look up."""

    __slots__ = ("_conditions", "_indexes", "_marked")

    def __init__(self, marked: bool) -> None:
        self._marked = marked
        """Mappings may hold BIND/VALUES markers, which remembered solutions shed."""
        self._conditions: dict[AntiJoin, TimedPredicate] = {}
        self._indexes = RememberedIndexes()

    def resolve(
        self, deferred: list[tuple[IntervalSpec, Match, Spans | None]], state: NfaState
    ) -> list[Match]:
        """Matches with anti-joins, once the whole timestamp is in: an optional
        side ending at this very timestamp (EQUALSOPTIONAL) counts too. Returns
        the matches to report, in order; an auxiliary pattern's are remembered
        instead, and a match with an open anti-join (NO_TAIL) waits in `pending`
        for `settle`."""
        reported: list[Match] = []
        order = sorted(deferred, key=_resolution_order)
        for interval, match, spans in order:
            assert spans is not None
            closed = [anti for anti in interval.anti if not anti.relation.open]
            if any(self._blocked(anti, match, spans, state) for anti in closed):
                continue
            if interval.records is not None:
                mapping = unmarked(match.mapping) if self._marked else match.mapping
                remembered = (mapping, (match.start_time, match.end_time))
                state.history.setdefault(interval.records, []).append(remembered)
            elif len(closed) < len(interval.anti):
                state.pending.append((interval, match, spans))
            else:
                reported.append(match)
        return reported

    def settle(self, state: NfaState, time: float) -> list[Match]:
        """The pending matches that no remembered solution ending at or before
        `time` blocks (`Runtime.settle`); blocked ones are dropped."""
        kept: list[tuple[IntervalSpec, Match, Spans]] = []
        for interval, match, spans in state.pending:
            opened = [anti for anti in interval.anti if anti.relation.open]
            if not any(self._blocked(anti, match, spans, state, until=time) for anti in opened):
                kept.append((interval, match, spans))
        state.pending = kept
        return [match for _, match, _ in kept]

    def _blocked(
        self, anti: AntiJoin, match: Match, spans: Spans, state: NfaState, until: float | None = None
    ) -> bool:
        if anti.relation is Relation.WITHIN_GAP:
            mandatory = (hull(spans, anti.steps)[1], hull(spans, anti.later)[0])
        else:
            mandatory = hull(spans, anti.steps)
        base = scoped(match.mapping, anti.scope, anti.unbound)
        condition = self._condition(anti)
        interval = hull(spans, anti.steps)  # σ of the condition: the mandatory side's interval (§4.2)
        for remembered, span in self._indexes.meeting(state.history.get(anti.aux, []), anti.scope, base):
            if until is not None and span[1] > until:
                continue
            if not relation_holds(anti.relation, span, mandatory):
                continue
            joined = join(base, remembered)
            if joined is not None and (condition is None or condition(joined, interval)):
                return True
        return False

    def _condition(self, anti: AntiJoin) -> TimedPredicate | None:
        if anti.condition is None:
            return None
        found = self._conditions.get(anti)
        if found is None:
            found = self._conditions[anti] = timed_predicate(anti.condition)
        return found


def _resolution_order(deferred: tuple[IntervalSpec, Match, Spans | None]) -> float:
    """Auxiliary patterns by descending index, the main pattern last: an anti-join only
    reads auxiliaries numbered after the pattern holding it (`_Context.auxiliary` reserves
    an index before compiling what it holds), so each one's solutions of this timestamp
    are remembered before any anti-join that reads them is decided."""
    records = deferred[0].records
    return float("inf") if records is None else -records
