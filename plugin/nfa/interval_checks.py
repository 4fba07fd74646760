"""Interval bookkeeping for interval patterns (EP-SPARQL §4.2).

A run of an interval pattern remembers the (start, end) of each step it took.
From those, a state checks its SeqJoin condition (the new step starts after
given steps end), EqJoin conditions (equal intervals), and FILTERs that read
the interval of their group through getDURATION(), getSTARTTIME() and
getENDTIME(): those calls are replaced by variables bound, for the check
only, to the group's start and end (xsd:dateTime) and its length
(xsd:dayTimeDuration). Numeric timestamps are seconds since the epoch there.
BINDs and VALUES among a state's filters extend the mapping instead
(`IntervalChecks.extended`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal

from rsep.plugin.algebra.analysis import expr_vars, map_expr
from rsep.plugin.algebra.events import DURATION_FUNCTION, END_TIME_FUNCTION, START_TIME_FUNCTION
from rsep.plugin.algebra.sparql import IRI, Expr, FunctionCall, Var
from rsep.plugin.algebra.terms import literal_nt
from rsep.plugin.expr import ExprError, compile_expr, compile_filter, stored_nt
from rsep.plugin.nfa.automaton import (
    IntervalBind,
    IntervalCheck,
    IntervalFilter,
    IntervalSpec,
    IntervalValues,
    MaybeUnbound,
    Relation,
)

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


def timed(expr: Expr) -> Expr:
    """`expr` with getDURATION(), getSTARTTIME() and getENDTIME() reading the variables
    `with_interval` sets: the one way a FILTER, a BIND or a SELECT expression reads an interval."""
    return map_expr(expr, _time_call)


def datetime_term(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return literal_nt(moment, _XSD + "dateTime")


def duration_term(seconds: float) -> str:
    amount = Decimal(repr(seconds)).normalize()
    sign = "-" if amount < 0 else ""
    return literal_nt(f"{sign}PT{format(abs(amount), 'f')}S", _XSD + "dayTimeDuration")


TimedPredicate = Callable[[Mapping[str, str], Span], bool]
Extension = Callable[[Spans, dict[str, str]], list[dict[str, str]]]
"""A state's check as a step over mappings: the mappings a run goes on with (none: it stops)."""


def scoped(
    mapping: Mapping[str, str], scope: frozenset[str] | None, unbound: Iterable[MaybeUnbound] = ()
) -> dict[str, str]:
    """What a check sees of a run's mapping: its `scope` variables, less those that only BINDs or
    VALUES of its group bind and none of them did (`MaybeUnbound`)."""
    bound = dict(mapping) if scope is None else {k: v for k, v in mapping.items() if k in scope}
    for var in unbound:
        if all(marker in mapping for marker in var.markers):
            bound.pop(var.name, None)
    return bound


_TermMaker = Callable[[float, float], str]

_INTERVAL_TERMS: dict[str, _TermMaker] = {
    "__rsep_start": lambda start, end: datetime_term(start),
    "__rsep_end": lambda start, end: datetime_term(end),
    "__rsep_duration": lambda start, end: duration_term(end - start),
}
_ALL_TERMS = tuple(_INTERVAL_TERMS.items())


def interval_terms(expr: Expr) -> tuple[tuple[str, _TermMaker], ...]:
    """The interval terms a `timed` expression reads: only those are computed per run (a term
    costs a datetime's formatting)."""
    read = expr_vars(expr)
    return tuple((var, term) for var, term in _ALL_TERMS if var in read)


def with_interval(
    bound: dict[str, str], span: Span, terms: tuple[tuple[str, _TermMaker], ...] = _ALL_TERMS
) -> dict[str, str]:
    """`bound` (changed) with the interval terms `timed` expressions read (`terms`: all)."""
    start, end = span
    for var, term in terms:
        bound[var] = term(start, end)
    return bound


def timed_predicate(
    expr: Expr, scope: frozenset[str] | None = None, unbound: tuple[MaybeUnbound, ...] = ()
) -> TimedPredicate:
    """`expr` as a test of a mapping (only its `scope` variables, when given) and the
    interval getDURATION(), getSTARTTIME() and getENDTIME() read (EP-SPARQL's σ)."""
    mapped = timed(expr)
    predicate = compile_filter(mapped)
    terms = interval_terms(mapped)

    def test(mapping: Mapping[str, str], span: Span) -> bool:
        return predicate(with_interval(scoped(mapping, scope, unbound), span, terms))

    return test


def _filter_step(check: IntervalFilter) -> Extension:
    test = timed_predicate(check.expr, check.scope, check.unbound)
    return lambda spans, mapping: [mapping] if test(mapping, hull(spans, check.steps)) else []


def _bind_step(check: IntervalBind) -> Extension:
    """SPARQL's Extend joined with what the run bound besides (see IntervalBind)."""
    mapped = timed(check.expr)
    value = compile_expr(mapped)
    terms = interval_terms(mapped)

    def extend(spans: Spans, mapping: dict[str, str]) -> list[dict[str, str]]:
        try:
            term = value(
                with_interval(scoped(mapping, check.scope, check.unbound), hull(spans, check.steps), terms)
            )
        except ExprError:
            return [{**mapping, check.marker: ""}]
        term = stored_nt(term)  # as the stream's terms are (a constant may be written `01`)
        bound = mapping.get(check.var)
        if bound is None:
            return [{**mapping, check.var: term}]
        return [mapping] if bound == term else []

    return extend


class _ValuesTable:
    """VALUES as a step: the rows compatible with a run's mapping, found by hashing the rows on
    the variables the mapping binds (an index per set of bound variables, built when first
    needed); rows with UNDEF for one of them are checked one by one. Runs come in row order."""

    def __init__(self, check: IntervalValues) -> None:
        self.variables = tuple(dict.fromkeys(check.variables))
        self.rows: list[tuple[dict[str, str | None], dict[str, str]]] = []
        """Per row that binds each variable at most one way: its term per variable (None:
        UNDEF) and what it adds to a mapping (terms, and "" for the markers of its UNDEFs)."""
        self.indexes: dict[tuple[str, ...], tuple[dict[tuple[str | None, ...], list[int]], list[int]]] = {}
        for row in check.rows:
            terms: dict[str, str | None] = dict.fromkeys(self.variables)
            added: dict[str, str] = {}
            for var, marker, term in zip(check.variables, check.markers, row, strict=True):
                if term is None:
                    added[marker] = ""
                elif added.setdefault(var, term) != term:
                    break
                else:
                    terms[var] = term
            else:
                self.rows.append((terms, added))

    def _index(self, bound: tuple[str, ...]) -> tuple[dict[tuple[str | None, ...], list[int]], list[int]]:
        """Rows by their terms for `bound`, and those with UNDEF for one of `bound`."""
        by_terms: dict[tuple[str | None, ...], list[int]] = {}
        undef = []
        for position, (terms, _) in enumerate(self.rows):
            key = tuple(terms[var] for var in bound)
            if None in key:
                undef.append(position)
            else:
                by_terms.setdefault(key, []).append(position)
        self.indexes[bound] = by_terms, undef
        return by_terms, undef

    def __call__(self, spans: Spans, mapping: dict[str, str]) -> list[dict[str, str]]:
        bound = tuple(var for var in self.variables if var in mapping)
        by_terms, undef = self.indexes.get(bound) or self._index(bound)
        hits: Iterable[int] = by_terms.get(tuple(mapping[var] for var in bound), ())
        if undef:
            fits = (
                position
                for position in undef
                if all(self.rows[position][0][var] in (None, mapping[var]) for var in bound)
            )
            hits = heapq.merge(hits, fits)
        return [{**mapping, **self.rows[position][1]} for position in hits]


def _step(check: IntervalCheck) -> Extension:
    if isinstance(check, IntervalFilter):
        return _filter_step(check)
    if isinstance(check, IntervalBind):
        return _bind_step(check)
    return _ValuesTable(check)


class IntervalChecks:
    """A state's interval conditions, compiled once per runtime: `select` is what the step's own
    element requires (EqJoin, and the FILTERs, BINDs and VALUES inside it), `complete` the checks
    of groups that hold earlier steps too, which apply to what a consuming policy selected
    (`IntervalSpec.own`). Without a policy a run must pass both."""

    def __init__(self, spec: IntervalSpec) -> None:
        self.spec = spec
        own, rest = spec.filters[: spec.own], spec.filters[spec.own :]
        self.select_checks = _Checks(own)
        self.complete_checks = _Checks(rest)
        self.plain = self.select_checks.plain and self.complete_checks.plain
        """Only FILTERs (no BIND, VALUES): a run goes on with its mapping or stops."""

    def admits(self, spans: Spans, starts: tuple[float, ...]) -> bool:
        """SeqJoin: each part of the step (starting at `starts[k]`) begins after its `after` parts end."""
        return all(
            spans[s][1] < start for start, after in zip(starts, self.spec.after, strict=True) for s in after
        )

    def _equal(self, spans: Spans) -> bool:
        return all(hull(spans, left) == hull(spans, right) for left, right in self.spec.equal)

    def holds(self, spans: Spans, mapping: Mapping[str, str]) -> bool:
        """EqJoin conditions and the interval FILTERs that complete at this step (`plain` states)."""
        return self.selects(spans, mapping) and self.complete_checks.holds(spans, mapping)

    def selects(self, spans: Spans, mapping: Mapping[str, str]) -> bool:
        """EqJoin conditions and the step's own FILTERs (`plain` states)."""
        return self._equal(spans) and self.select_checks.holds(spans, mapping)

    def select(self, spans: Spans, mapping: dict[str, str]) -> list[dict[str, str]]:
        """The mappings the step's own element lets through (EqJoin, its checks in order)."""
        if not self._equal(spans):
            return []
        return self.select_checks.extended(spans, [mapping])

    def complete(self, spans: Spans, mappings: list[dict[str, str]]) -> list[dict[str, str]]:
        """What the checks over earlier steps too let through of the selected mappings."""
        return self.complete_checks.extended(spans, mappings)

    def extended(self, spans: Spans, mapping: dict[str, str]) -> list[dict[str, str]]:
        """With BINDs or VALUES among the filters: the mappings the run goes on with, each
        check applied in order to what the ones before it let through (none: it stops)."""
        return self.complete(spans, self.select(spans, mapping))


class _Checks:
    """FILTERs, BINDs and VALUES applied in order."""

    def __init__(self, checks: tuple[IntervalCheck, ...]) -> None:
        self.plain = all(isinstance(f, IntervalFilter) for f in checks)
        self.filters = [
            (f.steps, timed_predicate(f.expr, f.scope, f.unbound))
            for f in checks
            if isinstance(f, IntervalFilter)
        ]
        self.steps = [_step(f) for f in checks] if not self.plain else []

    def holds(self, spans: Spans, mapping: Mapping[str, str]) -> bool:
        return all(test(mapping, hull(spans, steps)) for steps, test in self.filters)

    def extended(self, spans: Spans, mappings: list[dict[str, str]]) -> list[dict[str, str]]:
        if self.plain:
            return [m for m in mappings if self.holds(spans, m)] if self.filters else mappings
        for step in self.steps:
            if not mappings:
                break
            mappings = [out for each in mappings for out in step(spans, each)]
        return mappings
