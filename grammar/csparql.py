"""C-SPARQL: grammar/csparql.lark's transformer to the event algebra.

A C-SPARQL query is plain SPARQL evaluated over the *merge* of its windows and
its static graphs (EDBT 2010 §3.2): every `FROM STREAM <s> [RANGE ...]`
becomes a StreamDecl with its window, every `FROM <g>` a static graph, and
the whole WHERE pattern one WindowElement without a stream (all windows
merged into one graph). The dialect reports at window close (RSEP-QL §3.4).
`timestamp(?v [, <s>])` becomes a call of the extension function
TIMESTAMP_FUNCTION; `ASK` becomes `SELECT DISTINCT` with an empty
projection, which yields one empty solution exactly when ASK is true.
`REGISTER QUERY|STREAM name AS` becomes the query's Registration: its kind, and
the name read as an IRI reference resolved against the base (the stream a
`REGISTER STREAM ... CONSTRUCT` produces). What rsep does not run is refused
where it is written: a duration that rounds to no tick, COMPUTED EVERY over a
count window, DESCRIBE and the pre-SPARQL-1.1 AGGREGATE clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, resolve_iri
from rsep.grammar.window_forms import WindowQueryForms
from rsep.plugin.algebra.events import (
    TIMESTAMP_FUNCTION,
    ConstructForm,
    ConsumptionPolicy,
    CountWindow,
    Dialect,
    Duration,
    EventQuery,
    Registration,
    RegistrationKind,
    ReportPolicy,
    SelectForm,
    SelectionStrategy,
    SourcePosition,
    StreamDecl,
    TimeUnit,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.sparql import IRI, Expr, FunctionCall, GroupPattern, has_scheme

CSPARQL = Dialect(
    "c-sparql",
    selection=SelectionStrategy.SKIP_TILL_ANY,
    consumption=ConsumptionPolicy.UNRESTRICTED,
    report=ReportPolicy.WINDOW_CLOSE,
    interval_semantics=False,
)

_UNITS = {
    "MS": TimeUnit.MILLISECONDS,
    "S": TimeUnit.SECONDS,
    "M": TimeUnit.MINUTES,
    "H": TimeUnit.HOURS,
    "D": TimeUnit.DAYS,
}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)[ \t]*([A-Za-z]+)")


def parse_duration(token: Token) -> Duration:
    """`3000ms`, `1s`, `5 m`, `2h`, `1d` (the DURATION terminal of csparql.lark and cqels.lark)."""
    match = _DURATION.fullmatch(str(token))
    assert match is not None, token
    return Duration(float(match.group(1)), _UNITS[match.group(2).upper()])


@dataclass(frozen=True, slots=True)
class _Every:
    """`COMPUTED EVERY d`, and where it is written."""

    period: Duration
    text: str
    meta: Meta


@dataclass(frozen=True, slots=True)
class _Register:
    registration: Registration
    every: _Every | None


@dataclass(frozen=True, slots=True)
class _Stream:
    decl: StreamDecl


class CsparqlTransformer(WindowQueryForms):
    """One method per rule csparql.lark adds or overrides."""

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(base_iri)
        self._timestamp: Token | None = None
        """The first `timestamp(` of the query: where a query without a stream is told it needs one."""

    def built_in_call(self, children: list[Any]) -> Expr:
        head = children[0]
        if isinstance(head, Token) and head.type.endswith("TIMESTAMP_FUNCTION"):
            self._timestamp = self._timestamp or head
            position = SourcePosition(*self.position(head))
            return FunctionCall(IRI(TIMESTAMP_FUNCTION), tuple(children[1:]), position=position)
        return super().built_in_call(children)

    def register_clause(self, children: list[Any]) -> _Register:
        """The name is an IRI reference (`<iri>`, or a bare name read as a relative one), resolved
        against the base in effect where it stands: the document's, as it precedes the prologue."""
        kind, token, *every = children
        name = self._iriref_text(token) if token.type.endswith("IRIREF") else str(token)
        iri = resolve_iri(self.base, name)
        stream = iri if has_scheme(iri) else None
        return _Register(Registration(kind, name, stream), every[0] if every else None)

    def register_kind(self, children: list[Token]) -> RegistrationKind:
        return RegistrationKind(str(children[0]).lower())

    @v_args(meta=True)
    def computed_every(self, meta: Meta, children: list[Token]) -> _Every:
        token = children[0]
        return _Every(checked_duration(self, token, "COMPUTED EVERY"), str(token), meta)

    def time_window(self, children: list[Token]) -> TimeWindow:
        width = checked_duration(self, children[0], "RANGE")
        if children[1].type.endswith("TUMBLING"):
            return TimeWindow(width, width)
        return TimeWindow(width, checked_duration(self, children[1], "STEP"))

    def count_window(self, children: list[Token]) -> CountWindow:
        return CountWindow(int(children[0]))

    @v_args(meta=True)
    def stream_clause(self, meta: Meta, children: list[Any]) -> _Stream:
        iri, window = children
        check_window(self, window, meta)
        return _Stream(StreamDecl(iri.value, None, window, SourcePosition(*self.position(meta))))

    def aggregate_clause(self, children: list[Token]) -> None:
        raise self.fail(
            "C-SPARQL's AGGREGATE { ... } clause predates SPARQL 1.1, whose aggregates rsep reads "
            "instead: write GROUP BY, with the aggregate in SELECT ((COUNT(?x) AS ?n))",
            children[0],
        )

    @v_args(meta=True)
    def describe_query(self, meta: Meta, children: list[Any]) -> None:
        raise self.fail(
            "a C-SPARQL query is a SELECT, CONSTRUCT or ASK: DESCRIBE is not supported (CONSTRUCT "
            "{ ?x ?p ?o } ... WHERE { ?x ?p ?o } gives what the windows say about ?x)",
            meta,
        )

    def query(self, children: list[Any]) -> Any:
        register = children[0] if isinstance(children[0], _Register) else None
        prologue, form, values = children[-3:]
        if values is not None:
            raise self.fail("a trailing VALUES clause does not apply to a C-SPARQL query", values)
        query: EventQuery = replace(form, prologue=prologue)
        if register is None:
            return query
        self._check_every(register, query)
        return replace(query, registration=register.registration)

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        streams = [e.decl for e in parts.extras if isinstance(e, _Stream)]
        if not streams:
            needs = "a C-SPARQL query reads at least one FROM STREAM <iri> [RANGE ...]"
            if self._timestamp is None:
                raise self.fail(needs, meta)
            raise self.fail(f"timestamp() is the time of a stream triple: {needs}", self._timestamp)
        assert parts.where is not None
        where = GroupPattern((WindowElement(None, parts.where),))
        return EventQuery(
            dialect=CSPARQL,
            form=form,
            streams=tuple(streams),
            where=where,
            static_graphs=tuple(d.graph.value for d in parts.dataset if not d.named),
            modifiers=parts.modifiers,
        )

    def _check_every(self, register: _Register, query: EventQuery) -> None:
        """COMPUTED EVERY names the evaluation period; rsep evaluates at window closes (RSEP-QL
        §3.4), so it must agree with the STEP of every time-based window, and a count window,
        which closes at each arrival, has no period it could agree with (docs/semantics.md)."""
        every = register.every
        if every is None:
            return
        for stream in query.streams:
            window = stream.window
            if isinstance(window, CountWindow):
                raise self.fail(
                    f"COMPUTED EVERY {every.text} needs time-based windows: the count window "
                    f"[RANGE TRIPLES {window.size}] of <{stream.iri}> closes at each arrival, so the "
                    "query is evaluated then, not periodically",
                    every.meta,
                )
            slide = window.slide if isinstance(window, TimeWindow) else None
            if slide is not None and slide.ticks != every.period.ticks:
                raise self.fail(
                    f"COMPUTED EVERY {every.period.seconds:g}s differs from the STEP "
                    f"({slide.seconds:g}s) of <{stream.iri}>: rsep evaluates at window closes",
                    every.meta,
                )


def checked_duration(transformer: SparqlTransformer, token: Token, clause: str) -> Duration:
    """A window's width or slide, or a report period: windows count time in whole microseconds
    (rsep.plugin.windows.window_functions), so one that rounds to none is refused at the duration."""
    duration = parse_duration(token)
    if duration.ticks <= 0:
        raise transformer.fail(
            f"{clause} {token}: a duration here must be at least 1µs (windows count time in whole "
            "microseconds, and this rounds to 0)",
            token,
        )
    return duration


def check_window(transformer: SparqlTransformer, window: Window, where: Meta) -> None:
    """A count window holds at least one triple (RSEP-QL Def. 3); time-based windows' durations
    are checked where they are written (`checked_duration`)."""
    if isinstance(window, CountWindow) and window.size <= 0:
        raise transformer.fail("a count window holds at least one triple", where)


DIALECT = DialectSpec(
    CSPARQL,
    "csparql",
    CsparqlTransformer,
    not_event_syntax=frozenset(
        {
            "REGISTERED_NAME",  # a query's name: it stands after REGISTER QUERY|STREAM
            # the pre-SPARQL-1.1 AGGREGATE clause, read only to be refused (write GROUP BY): no stream
            "aggregate_clause",
            "AGGREGATE_CLAUSE",
        }
    ),
)
