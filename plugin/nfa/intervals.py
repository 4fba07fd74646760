"""Interval bookkeeping for interval patterns (EP-SPARQL §4.2).

A run of an interval pattern remembers the (start, end) of each step it took.
From those, a state checks its SeqJoin condition (the new step starts after
given steps end), EqJoin conditions (equal intervals), and FILTERs that read
the interval of their group through getDURATION(), getSTARTTIME() and
getENDTIME(): those calls are replaced by variables bound, for the check
only, to the group's start and end (xsd:dateTime) and its length
(xsd:dayTimeDuration). Numeric timestamps are seconds since the epoch there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal

from rsep.plugin.algebra.analysis import map_expr
from rsep.plugin.algebra.events import DURATION_FUNCTION, END_TIME_FUNCTION, START_TIME_FUNCTION
from rsep.plugin.algebra.sparql import IRI, Expr, FunctionCall, Var
from rsep.plugin.expr import compile_filter
from rsep.plugin.nfa.automaton import IntervalSpec, Relation
from rsep.plugin.terms import literal_nt

Span = tuple[float, float]
_Predicate = Callable[[Mapping[str, str]], bool]
Spans = tuple[Span, ...]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_TIME_VARS = {
    DURATION_FUNCTION: "__rsep_duration",
    START_TIME_FUNCTION: "__rsep_start",
    END_TIME_FUNCTION: "__rsep_end",
}


def hull(spans: Spans, steps: frozenset[int]) -> Span:
    """The interval covering the given steps (EP-SPARQL's [min start, max end])."""
    return min(spans[s][0] for s in steps), max(spans[s][1] for s in steps)


def relation_holds(relation: Relation, remembered: Span, mandatory: Span) -> bool:
    """`mandatory` is the mandatory side's interval; for WITHIN_GAP it is the gap
    [end of the steps before, start of the steps after] (CQELS-CEP SEQ_WO:
    [t3, t4] ⊆ [t2, t5], closed)."""
    if relation is Relation.BEFORE_START:
        return remembered[1] < mandatory[0]
    if relation is Relation.SAME_INTERVAL:
        return remembered == mandatory
    if relation is Relation.WITHIN_GAP:
        return mandatory[0] <= remembered[0] and remembered[1] <= mandatory[1]
    if relation is Relation.AFTER_END:
        return remembered[0] > mandatory[1]
    return remembered[1] <= mandatory[1]


def _time_call(expr: Expr) -> Expr | None:
    if isinstance(expr, FunctionCall) and isinstance(expr.name, IRI) and expr.name.value in _TIME_VARS:
        return Var(_TIME_VARS[expr.name.value])
    return None


def datetime_term(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return literal_nt(moment, _XSD + "dateTime")


def duration_term(seconds: float) -> str:
    amount = Decimal(repr(seconds)).normalize()
    sign = "-" if amount < 0 else ""
    return literal_nt(f"{sign}PT{format(abs(amount), 'f')}S", _XSD + "dayTimeDuration")


TimedPredicate = Callable[[Mapping[str, str], Span], bool]


def timed_predicate(expr: Expr, scope: frozenset[str] | None = None) -> TimedPredicate:
    """`expr` as a test of a mapping (only its `scope` variables, when given) and the
    interval getDURATION(), getSTARTTIME() and getENDTIME() read (EP-SPARQL's σ)."""
    predicate = compile_filter(map_expr(expr, _time_call))

    def test(mapping: Mapping[str, str], span: Span) -> bool:
        bound = dict(mapping) if scope is None else {k: v for k, v in mapping.items() if k in scope}
        start, end = span
        bound["__rsep_start"] = datetime_term(start)
        bound["__rsep_end"] = datetime_term(end)
        bound["__rsep_duration"] = duration_term(end - start)
        return predicate(bound)

    return test


class IntervalChecks:
    """A state's interval conditions, compiled once per runtime."""

    def __init__(self, spec: IntervalSpec) -> None:
        self.spec = spec
        self.filters = [(f.steps, timed_predicate(f.expr, f.scope)) for f in spec.filters]

    def admits(self, spans: Spans, starts: tuple[float, ...]) -> bool:
        """SeqJoin: each part of the step (starting at `starts[k]`) begins after its `after` parts end."""
        return all(
            spans[s][1] < start for start, after in zip(starts, self.spec.after, strict=True) for s in after
        )

    def holds(self, spans: Spans, mapping: Mapping[str, str]) -> bool:
        """EqJoin conditions and interval FILTERs that complete at this step."""
        for left, right in self.spec.equal:
            if hull(spans, left) != hull(spans, right):
                return False
        return all(test(mapping, hull(spans, steps)) for steps, test in self.filters)
