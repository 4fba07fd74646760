"""Matches as query results: projection, and the CLI's two output formats.

`jsonl`: one object per match, `{"start": T, "end": T, "bindings": {...}}`,
T as the input wrote it, bindings as N-Triples terms, unbound variables
omitted. `srj`: SPARQL 1.1 Query Results JSON of the projected variables
(https://www.w3.org/TR/sparql11-results-json/).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rsep.plugin.algebra.events import ConstructForm, QueryForm, SelectForm
from rsep.plugin.algebra.sparql import (
    IRI,
    XSD_STRING,
    BNode,
    Literal,
    Projection,
    SolutionModifiers,
    TriplePattern,
    Var,
)
from rsep.plugin.algebra.terms import nt_to_term, term_to_nt
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.expr import ExprError, compile_expr, stored_nt
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.interval_checks import Span, timed, with_interval
from rsep.plugin.nfa.runtime import Match


@dataclass(frozen=True, slots=True)
class Solution:
    """One projected match, with the events it came from."""

    match: Match
    events: tuple[GraphEvent, ...]
    bindings: dict[str, str]
    triples: tuple[tuple[str, str, str], ...] | None = None
    """CONSTRUCT: the instantiated template; None for SELECT."""


Column = tuple[str, Callable[[Mapping[str, str]], str] | None]


def _columns(projection: Sequence[Projection]) -> list[Column]:
    """getDURATION() and friends read the match's interval: it is known when a match is projected."""
    return [(p.var.name, None if p.expr is None else compile_expr(timed(p.expr))) for p in projection]


def _apply(columns: Sequence[Column], mapping: Mapping[str, str], span: Span | None = None) -> dict[str, str]:
    row: dict[str, str] = {}
    # in the form a BIND stores them in (`PT1M30S`, no trailing zeros), so both bind the same terms
    times = {} if span is None else {k: stored_nt(v) for k, v in with_interval({}, span).items()}
    for name, compute in columns:
        if compute is None:
            if name in mapping:
                row[name] = mapping[name]
            continue
        with contextlib.suppress(ExprError):  # an error leaves it unbound (SPARQL 1.1 §18.2.4.1)
            row[name] = compute({**mapping, **row, **times})
    return row


class Slice:
    """LIMIT and OFFSET over answers reported as they are detected (docs/semantics.md): the
    answers numbered OFFSET+1 .. OFFSET+LIMIT in detection order are reported. `numbered`
    maps the identity of each answer numbered so far to whether it was reported, so that an
    answer produced again (the endpoint re-reports a timestamp that was still open) keeps its
    number. It holds at most OFFSET+LIMIT entries (OFFSET without a LIMIT: OFFSET), and is
    all the state there is: the endpoints checkpoint it."""

    def __init__(self, limit: int | None = None, offset: int | None = None) -> None:
        self.limit = limit
        self.offset = offset or 0
        self.numbered: dict[object, bool] = {}

    @property
    def active(self) -> bool:
        return self.limit is not None or self.offset > 0

    def admit(self, identity: object) -> bool:
        """Number the answer `identity` (if new) and say whether it is reported."""
        known = self.numbered.get(identity)
        if known is not None:
            return known
        count = len(self.numbered)
        if self.limit is None:
            if count >= self.offset:
                return True  # past OFFSET with no LIMIT: nothing left to count
        elif count >= self.offset + self.limit:
            return False
        self.numbered[identity] = count >= self.offset
        return count >= self.offset


class Projector:
    """SELECT's projection applied to matches, `(expr AS ?v)` included; with
    DISTINCT, a projected row is reported the first time only; LIMIT/OFFSET
    then slice the answers in detection order (`Slice`). A sub-SELECT's
    projection (`EventQuery.solution_projection`) applies first, for SELECT and
    CONSTRUCT alike."""

    def __init__(
        self,
        names: Sequence[str],
        form: QueryForm,
        solution_projection: Sequence[Projection] | None = None,
        modifiers: SolutionModifiers | None = None,
        scope: str = "",
    ) -> None:
        self.names = tuple(names)
        self.scope = scope
        """Names the query in its CONSTRUCT blank nodes (`match_label`): two rules' matches of the
        same events and mapping are two answers, with blank nodes of their own."""
        self.slice = Slice() if modifiers is None else Slice(modifiers.limit, modifiers.offset)
        self.template = form.template if isinstance(form, ConstructForm) else None
        self.distinct = isinstance(form, SelectForm) and form.distinct
        inner = solution_projection
        self._inner = None if inner is None else _columns(inner)
        projection = form.projection if isinstance(form, SelectForm) else None
        if projection is None:
            self._columns: list[Column] = [(name, None) for name in self.names]
        else:
            self._columns = _columns(projection)
        self._seen: set[tuple[tuple[str, str], ...]] = set()

    @classmethod
    def for_plan(cls, plan: QueryPlan, scope: str = "") -> Projector:
        query = plan.query
        return cls(plan.output_vars, query.form, query.solution_projection, query.modifiers, scope)

    def solution(self, mapping: Mapping[str, str], span: Span | None = None) -> Mapping[str, str]:
        """A match's mapping as the query form sees it (through the sub-SELECT, if any); `span` is
        the match's interval, which the time functions read."""
        return mapping if self._inner is None else _apply(self._inner, mapping, span)

    def project(self, match: Match) -> dict[str, str] | None:
        """A match's row (None: DISTINCT has reported it)."""
        span = (match.start_time, match.end_time)
        row = _apply(self._columns, self.solution(match.mapping, span), span)
        if self.distinct:
            key = tuple(sorted(row.items()))
            if key in self._seen:
                return None
            self._seen.add(key)
        return row

    def admit(self, match: Match) -> bool:
        """LIMIT/OFFSET: is this answer (past DISTINCT) reported? Call in detection order."""
        if not self.slice.active:
            return True
        return self.slice.admit((match.events, tuple(sorted(match.mapping.items()))))

    def construct(self, match: Match, label: str | None = None) -> tuple[tuple[str, str, str], ...]:
        """CONSTRUCT: the template instantiated with the match (blank nodes named after `label`,
        by default the match's own in this projector's scope)."""
        assert self.template is not None
        name = label or match_label(match, self.scope)
        span = (match.start_time, match.end_time)
        return instantiate(self.template, self.solution(match.mapping, span), name)

    def solutions(
        self, matches: Iterable[Match], events: Sequence[GraphEvent] | Mapping[int, GraphEvent]
    ) -> list[Solution]:
        """The matches' solutions; `events` gives each event by id (a list, or the events held)."""
        out = []
        for match in matches:
            contributing = tuple(events[i] for i in match.events)
            if self.template is not None:
                triples = self.construct(match)
                out.append(Solution(match, contributing, {}, triples))
                continue
            row = self.project(match)
            if row is not None and self.admit(match):
                out.append(Solution(match, contributing, row))
        return out


def jsonl_line(solution: Solution) -> str:
    """`{"start": T, "end": T, "bindings": {...}}` (or `"triples": [...]`). The times are written
    as JSON text by `Timestamp.json_text`, which keeps a number as the input wrote it (`1.50`):
    a JSON encoder would print the float it parses to."""
    start = match_start(solution).json_text()
    end = solution.events[-1].time.json_text()
    if solution.triples is None:
        name, value = "bindings", json.dumps(solution.bindings, ensure_ascii=False)
    else:
        triples = [f"{s} {p} {o} ." for s, p, o in solution.triples]
        name, value = "triples", json.dumps(triples, ensure_ascii=False)
    return f'{{"start": {start}, "end": {end}, "{name}": {value}}}'


class Stamped(Protocol):
    """What `interval_start` reads of a match's event: a `GraphEvent`, or the endpoint's
    `EventRef` of one."""

    @property
    def time(self) -> Timestamp: ...

    @property
    def begins(self) -> Timestamp: ...


def match_start(solution: Solution) -> Timestamp:
    """`interval_start` of a solution's match."""
    return interval_start(solution.match, solution.events)


def interval_start(match: Match, events: Sequence[Stamped]) -> Timestamp:
    """When the match starts, as the input wrote it (`events` are the match's, in its order): the
    time the runtime started it at (under interval semantics the earliest start of its events'
    intervals; otherwise the first event's timestamp, so an event's `prov:startedAtTime` does not
    move a SPAseq match)."""
    seconds = match.start_time
    for event in events:
        for time in (event.begins, event.time):
            if time.seconds == seconds:
                return time
    return events[0].time  # not reached: the start is one of its events' times


def graph_body(triples: Iterable[tuple[str, str, str]]) -> str:
    """Constructed triples as the N-Triples body of one graph event."""
    return "".join(f"{s} {p} {o} .\n" for s, p, o in triples)


def derived_event(solution: Solution, stream: str) -> GraphEvent:
    """A CONSTRUCT match as one graph event of `stream` spanning the match's interval (EP-SPARQL's
    Q-closure, §4.2, as a file holds it: `prov:startedAtTime` when it starts before it ends),
    named after the match."""
    assert solution.triples is not None
    body = graph_body(solution.triples)
    end = solution.events[-1].time
    start = match_start(solution)
    return GraphEvent(stream, f"<urn:rsep:derived:{match_label(solution.match)}>", end, body, start)


def match_label(match: Match, scope: str = "") -> str:
    """A short, deterministic name for one match of the query `scope` names (blank nodes of its
    CONSTRUCT output are named after it, so recomputing a match reproduces them)."""
    key: tuple[object, ...] = (match.events, sorted(match.mapping.items()))
    if scope:
        key = (scope, *key)
    digest = hashlib.sha256(repr(key).encode()).hexdigest()
    return digest[:16]


def instantiate(
    template: Sequence[TriplePattern], mapping: Mapping[str, str], label: str
) -> tuple[tuple[str, str, str], ...]:
    """CONSTRUCT's template under a mapping (SPARQL 1.1 §16.2): triples with an
    unbound variable or an invalid term position are left out; template blank
    nodes are fresh per match."""
    out: dict[tuple[str, str, str], None] = {}
    for pattern in template:
        s = _instantiate(pattern.subject, mapping, label)
        p = _instantiate(pattern.predicate, mapping, label)
        o = _instantiate(pattern.object, mapping, label)
        if s is None or p is None or o is None or s.startswith('"') or not p.startswith("<"):
            continue
        out[(s, p, o)] = None
    return tuple(out)


def _instantiate(term: object, mapping: Mapping[str, str], label: str) -> str | None:
    if isinstance(term, Var):
        return mapping.get(term.name)
    if isinstance(term, BNode):
        return f"_:m{label}t{re.sub(r'[^A-Za-z0-9]', '', term.label)}"
    try:
        return term_to_nt(term)  # type: ignore[arg-type]
    except TypeError:  # a property path: not allowed in a template
        return None


def srj_document(names: Sequence[str], solutions: Iterable[Solution]) -> str:
    rows = ", ".join(srj_row(s) for s in solutions)
    head, tail = srj_frame(names)
    return f"{head}{rows}{tail}"


def srj_frame(names: Sequence[str]) -> tuple[str, str]:
    """The SPARQL results JSON document around its rows (`srj_row`, separated by ", "), so that
    rows can be written as they come: the text `json.dumps` gives for the whole document."""
    head = json.dumps({"head": {"vars": list(names)}, "results": {"bindings": []}}, ensure_ascii=False)
    return head[: -len("]}}")], "]}}"


def srj_row(solution: Solution) -> str:
    return srj_mapping(solution.bindings)


def srj_mapping(bindings: Mapping[str, str]) -> str:
    """One row of SPARQL results JSON from variable -> N-Triples term."""
    return json.dumps({k: srj_term(v) for k, v in bindings.items()}, ensure_ascii=False)


def srj_term(text: str) -> dict[str, str]:
    term = nt_to_term(text)
    if isinstance(term, IRI):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BNode):
        return {"type": "bnode", "value": term.label}
    assert isinstance(term, Literal)
    out = {"type": "literal", "value": term.lexical}
    if term.language is not None:
        out["xml:lang"] = term.language
    elif term.datatype != XSD_STRING:
        out["datatype"] = term.datatype
    return out
