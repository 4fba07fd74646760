"""CQELS-CEP's event clauses (HiDeSt 2015, §4) at each evaluation time, on the NFA runtime.

A CQELS-CEP query is Q = (V, P, D, EC) and [[Q, t]] = JOIN([[EC, t]], [[P, t]]_D) (§4.3 (1)):
the event clauses are evaluated over the windows' content at t, their mappings with intervals
joined by interval intersection ((2), JOIN of §4.2), and the result joined with the graph
pattern P over the static data, which Oxigraph evaluates (the plan puts the clauses' solutions
into P's query as VALUES, rsep.plugin.windows.window_plan).

**How the windows and the NFA meet: replay.** Each clause (a window's pattern, a SEQ inside a
window, or a SEQ over windows) is compiled once to the interval automaton
(rsep.plugin.compile.interval_patterns: SEQ with skip-till-any and SeqJoin, NO_HEAD / SEQ_WO / NO_TAIL
as anti-joins against the negated element's remembered solutions). At an evaluation time t the
automaton runs from a fresh state over the events its windows hold at t, in time order, and every
match it reports — plus, for NO_TAIL, the pending matches `Runtime.settle` admits at t — is
[[EC, t]]: the whole answer over the window content, not only what completed at t, exactly as
the definitions read (Example 8 lists ⟨d1, h⟩ [12, 14] at 16). Replay is what makes the
windows' expiry free (an event that left the window is simply not replayed) and NO_TAIL exact
(it depends on t).

*Cost.* GPM matching (one Oxigraph query per GPM) runs once per event while the event stays in a
window: its rows are cached by (window, event, triples held) and dropped when it leaves. The NFA
replay costs O(n · r) per evaluation for n events in the windows and r live runs, so a stream
evaluated at every one of its N events costs O(N · n · r): fine for CQELS's small windows (tens
to thousands of events), quadratic in the window length for large ones, where an incremental
runtime (runs expiring with the window, NO_TAIL re-settled at each t) would be the next step.

Windows hold whole events with their intervals (§4.1): an event [S, T] (`prov:startedAtTime` S,
instantaneous [T, T] without one) is in a window when T is (RSEP-QL Def. 3's membership), and
w_RANGE clips it to [max(S, t − α), min(T, t)] (`window_events`, bounds from
rsep.plugin.windows.window_replay.clip_bounds). The automaton then reads S as the event's start, as
EP-SPARQL's interval automaton reads a derived event's.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from itertools import groupby
from typing import Protocol

from rsep.plugin.algebra.analysis import pattern_vars
from rsep.plugin.algebra.events import (
    EventJoin,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    MatchElement,
    Negation,
    SelectForm,
    event_children,
)
from rsep.plugin.algebra.sparql import IRI, XSD_INTEGER, BNode, GroupPattern, Literal, SolutionModifiers, Term
from rsep.plugin.algebra.terms import nt_to_term
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.paths import has_nested_path
from rsep.plugin.compile.query_plan import QueryPlan, collect_gpms, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.keyed import GpmEvaluatorLike, KeyedNfa, KeyedState
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.vocabulary import RSEP
from rsep.plugin.windows.window_functions import TICKS_PER_SECOND, to_ticks

INTERVAL_START = "__rsep_start"
INTERVAL_END = "__rsep_end"
"""Hidden variables that carry a solution's interval (in ticks) through the SPARQL query."""
SKOLEM = RSEP + "bnode/"
"""VALUES cannot hold blank nodes: an event's blank node crosses the query as <SKOLEM label>
and is turned back into _:label in the results. (Event blank nodes never occur in the static
data, so joins are unaffected; isBlank() on such a variable in P sees an IRI.)"""


class EventClauseError(CompileError):
    """An event clause the runtime cannot run: the message says why, the position (when the
    query was parsed) where the element at fault is written."""


@dataclass(frozen=True, slots=True)
class CepPlan:
    """The event clauses of a CQELS-CEP query, each compiled on its own, and the variables their
    solutions bind (those of the positive elements: a negated element binds nothing)."""

    clauses: tuple[QueryPlan, ...]
    variables: tuple[str, ...]


def plan_event_clauses(query: EventQuery, pattern: EventPattern, windows: Iterable[str]) -> CepPlan:
    """Compile each event clause of `pattern` (one clause, or CQELS-CEP's JOIN of several) to
    the interval automaton; every GPM must read one of `windows` (by window name)."""
    known = set(windows)
    clauses = pattern.operands if isinstance(pattern, EventJoin) and pattern.intersect else (pattern,)
    plans = []
    for clause in clauses:
        for gpm in collect_gpms(clause):
            unknown = [s for s in gpm.streams if s not in known]
            if unknown or not gpm.streams:
                missing = unknown[0] if unknown else "?"
                raise EventClauseError(f"no window is declared for <{missing}>", gpm.position)
            if has_nested_path(gpm.pattern):
                raise EventClauseError(
                    "nested paths [...] are matched against the static data: write them outside "
                    "the window blocks (CQELS-CEP's P over D), not in a pattern matched per event",
                    gpm.position,
                )
        where = GroupPattern((MatchElement(clause),))
        alone = replace(query, form=SelectForm(None), streams=(), where=where, modifiers=SolutionModifiers())
        try:
            plans.append(compile_query(alone))
        except CompileError as error:
            raise EventClauseError(error.message, error.position) from None
    variables = frozenset[str]().union(*map(_positive_vars, clauses))
    return CepPlan(tuple(plans), tuple(sorted(variables)))


def _positive_vars(pattern: EventPattern) -> frozenset[str]:
    if isinstance(pattern, Negation):
        return frozenset()
    if isinstance(pattern, GraphPatternEvent):
        return pattern_vars(pattern.pattern)
    return frozenset[str]().union(*map(_positive_vars, event_children(pattern)))


# --------------------------------------------------------------------------- mappings with intervals


@dataclass(frozen=True, slots=True)
class Solution:
    """A mapping with an interval ⟨µ, [t1, t2]⟩ (§4.2), times in ticks."""

    mapping: tuple[tuple[str, str], ...]
    start: int
    end: int


def join_intersect(left: Iterable[Solution], right: Iterable[Solution]) -> set[Solution]:
    """JOIN(Ω1, Ω2) (§4.2): compatible pairs whose intervals intersect, with the intersection
    [max(t1, t3), min(t2, t4)] as interval."""
    others = list(right)
    out: set[Solution] = set()
    for a in left:
        bound = dict(a.mapping)
        for b in others:
            start, end = max(a.start, b.start), min(a.end, b.end)
            if start > end or any(bound.get(k, v) != v for k, v in b.mapping):
                continue
            out.add(Solution(tuple(sorted({**bound, **dict(b.mapping)}.items())), start, end))
    return out


# --------------------------------------------------------------------------- the windows' events


class Item(Protocol):
    """What the runtime's window items offer (rsep.plugin.windows.window_replay.StreamItem)."""

    @property
    def ticks(self) -> int: ...
    @property
    def time(self) -> Timestamp: ...
    @property
    def triple(self) -> str: ...
    @property
    def event(self) -> int: ...
    @property
    def start(self) -> Timestamp | None: ...


@dataclass(frozen=True, slots=True)
class WindowEvent:
    """An event as one window holds it: `key` = (window, event, triples held) identifies it
    across evaluations (a count window may hold the tail of an event)."""

    key: tuple[int, int, int]
    ticks: int
    event: GraphEvent


def window_events(
    names: Sequence[str], contents: Sequence[Sequence[Item]], bounds: Sequence[tuple[int | None, int]] = ()
) -> list[WindowEvent]:
    """The events in each window (named as the clauses' GPMs name it), in time order, each with
    its interval clipped to the window's `bounds` (per window: clip start or None, end)."""
    out: list[WindowEvent] = []
    for window, (name, items) in enumerate(zip(names, contents, strict=True)):
        low, high = bounds[window] if bounds else (None, None)
        for index, group in groupby(items, key=lambda item: item.event):
            lines = list(group)
            first = lines[0]
            text = "".join(item.triple + "\n" for item in lines)
            ticks, end, start = first.ticks, first.time, first.start
            if high is not None and ticks > high:  # t'2 = min(t2, t)
                ticks, end = high, _at(high, end.numeric)
            if start is not None and low is not None and to_ticks(start.seconds) < low:
                start = _at(low, start.numeric)  # t'1 = max(t1, t − α)
            graph = GraphEvent(name, f"_:w{window}e{index}", end, text, start)
            out.append(WindowEvent((window, index, len(lines)), ticks, graph))
    out.sort(key=lambda e: (e.ticks, e.key))
    return out


def _at(ticks: int, numeric: bool) -> Timestamp:
    """A window bound as an interval end: the automaton reads its seconds only."""
    seconds = ticks / TICKS_PER_SECOND
    return Timestamp(seconds, repr(seconds), numeric)


class ClauseRunner:
    """One event clause at evaluation times: GPM rows per event (cached while the event stays in
    a window), then the automaton replayed from a fresh state over the windows' events."""

    def __init__(self, plan: QueryPlan, gpm: GpmEvaluatorLike) -> None:
        self.plan = plan
        self.gpm = gpm
        self.keyed = KeyedNfa(plan.automaton, plan.key)
        self._rows: dict[Hashable, dict[int, list[Mapping[str, str]]]] = {}

    def solutions(self, events: Sequence[WindowEvent]) -> set[Solution]:
        """[[EC, t]] over the windows' events at t (all of them end by t)."""
        rows, numbered = self._rows_of(events), self._numbered(events)
        until = max((n.event.time.seconds for n in numbered.values()), default=0.0)
        state = KeyedState()
        matches = self.keyed.process(state, rows, numbered)  # settled below: no advance, which forgets
        return set(map(_solution, [*matches, *self.keyed.settle(state, until)]))

    def _rows_of(self, events: Sequence[WindowEvent]) -> dict[int, list[tuple[int, Mapping[str, str]]]]:
        fresh = [e for e in events if e.key not in self._rows]
        for e in fresh:
            self._rows[e.key] = {}
        if fresh:
            found = self.gpm.evaluate((i, e.event) for i, e in enumerate(fresh))
            for gpm, pairs in found.items():
                for i, mapping in pairs:
                    self._rows[fresh[i].key].setdefault(gpm, []).append(mapping)
        current = {e.key for e in events}
        for key in [k for k in self._rows if k not in current]:
            del self._rows[key]  # the event left every window of this clause
        rows: dict[int, list[tuple[int, Mapping[str, str]]]] = {}
        for event_id, e in enumerate(events):
            for gpm, mappings in self._rows[e.key].items():
                rows.setdefault(gpm, []).extend((event_id, m) for m in mappings)
        return rows

    @staticmethod
    def _numbered(events: Sequence[WindowEvent]) -> dict[int, NumberedEvent]:
        numbered: dict[int, NumberedEvent] = {}
        rank, last = -1, None
        for event_id, e in enumerate(events):
            if e.ticks != last:
                rank, last = rank + 1, e.ticks
            numbered[event_id] = NumberedEvent(event_id, rank, e.event)
        return numbered


def _solution(match: Match) -> Solution:
    return Solution(
        tuple(sorted(match.mapping.items())), to_ticks(match.start_time), to_ticks(match.end_time)
    )


def clause_answer(runners: Sequence[ClauseRunner], events: Sequence[WindowEvent]) -> set[Solution]:
    """[[EC, t]] for all clauses: each over the events of the windows it reads, then JOIN."""
    answers = []
    for runner in runners:
        reads = {s for gpm in runner.plan.gpms for s in gpm.streams}
        answers.append(runner.solutions([e for e in events if e.event.stream in reads]))
        if not answers[-1]:
            return set()
    return reduce(join_intersect, answers[1:], answers[0])


# --------------------------------------------------------------------------- through the SPARQL query


def values_rows(variables: Sequence[str], found: Iterable[Solution]) -> tuple[tuple[Term | None, ...], ...]:
    """The solutions as rows of a VALUES block over `variables` and the two interval variables
    (unbound variables are UNDEF), in a fixed order."""
    rows = []
    for solution in sorted(found, key=lambda s: (s.mapping, s.start, s.end)):
        bound = dict(solution.mapping)
        terms = [_skolem(nt_to_term(bound[name])) if name in bound else None for name in variables]
        ends = (Literal(str(solution.start), XSD_INTEGER), Literal(str(solution.end), XSD_INTEGER))
        rows.append((*terms, *ends))
    return tuple(rows)


def _skolem(term: Term) -> Term:
    return IRI(SKOLEM + term.label) if isinstance(term, BNode) else term


def read_row(row: Mapping[str, str]) -> tuple[dict[str, str], tuple[int, int] | None]:
    """A result row without the interval variables, blank nodes restored, and its interval."""
    out = {
        name: _unskolem(value) for name, value in row.items() if name not in (INTERVAL_START, INTERVAL_END)
    }
    start, end = row.get(INTERVAL_START), row.get(INTERVAL_END)
    if start is None or end is None:
        return out, None
    return out, (_ticks(start), _ticks(end))


def _ticks(text: str) -> int:
    term = nt_to_term(text)
    assert isinstance(term, Literal)
    return int(term.lexical)


def _unskolem(value: str) -> str:
    prefix = f"<{SKOLEM}"
    return f"_:{value[len(prefix) : -1]}" if value.startswith(prefix) else value
