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
`REGISTER STREAM ... CONSTRUCT` produces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, resolve_iri
from rsep.grammar.window_forms import WindowQueryForms
from rsep.plugin.algebra.events import (
    CSPARQL,
    TIMESTAMP_FUNCTION,
    ConstructForm,
    CountWindow,
    Duration,
    EventQuery,
    Registration,
    RegistrationKind,
    SelectForm,
    StreamDecl,
    TimeUnit,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.sparql import IRI, Expr, FunctionCall, GroupPattern

_UNITS = {
    "MS": TimeUnit.MILLISECONDS,
    "S": TimeUnit.SECONDS,
    "M": TimeUnit.MINUTES,
    "H": TimeUnit.HOURS,
    "D": TimeUnit.DAYS,
}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)[ \t]*([A-Za-z]+)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def parse_duration(token: Token) -> Duration:
    """`3000ms`, `1s`, `5 m`, `2h`, `1d` (the DURATION terminal of csparql.lark and cqels.lark)."""
    match = _DURATION.fullmatch(str(token))
    assert match is not None, token
    return Duration(float(match.group(1)), _UNITS[match.group(2).upper()])


@dataclass(frozen=True, slots=True)
class _Register:
    registration: Registration
    every: Duration | None
    token: Token


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
            return FunctionCall(IRI(TIMESTAMP_FUNCTION), tuple(children[1:]))
        return super().built_in_call(children)

    def register_clause(self, children: list[Any]) -> _Register:
        """The name is an IRI reference (`<iri>`, or a bare name read as a relative one), resolved
        against the base in effect where it stands: the document's, as it precedes the prologue."""
        kind, token, *every = children
        name = self._iriref_text(token) if token.type.endswith("IRIREF") else str(token)
        iri = resolve_iri(self.base, name)
        stream = iri if _SCHEME.match(iri) else None
        return _Register(Registration(kind, name, stream), every[0] if every else None, token)

    def register_kind(self, children: list[Token]) -> RegistrationKind:
        return RegistrationKind(str(children[0]).lower())

    def computed_every(self, children: list[Token]) -> Duration:
        return parse_duration(children[0])

    def time_window(self, children: list[Token]) -> TimeWindow:
        width = parse_duration(children[0])
        if children[1].type.endswith("TUMBLING"):
            return TimeWindow(width, width)
        return TimeWindow(width, parse_duration(children[1]))

    def count_window(self, children: list[Token]) -> CountWindow:
        return CountWindow(int(children[0]))

    @v_args(meta=True)
    def stream_clause(self, meta: Meta, children: list[Any]) -> _Stream:
        iri, window = children
        check_window(self, window, meta)
        return _Stream(StreamDecl(iri.value, None, window))

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
        §3.4), so it must agree with the STEP of every time-based window."""
        if register.every is None:
            return
        for stream in query.streams:
            window = stream.window
            slide = window.slide if isinstance(window, TimeWindow) else None
            if slide is not None and abs(slide.seconds - register.every.seconds) > 1e-9:
                raise self.fail(
                    f"COMPUTED EVERY {register.every.seconds:g}s differs from the STEP "
                    f"({slide.seconds:g}s) of <{stream.iri}>: rsep evaluates at window closes",
                    register.token,
                )


def check_window(transformer: SparqlTransformer, window: Window, where: Meta) -> None:
    """Windows need a positive width, slide and size (RSEP-QL Def. 3)."""
    if isinstance(window, TimeWindow):
        if window.width.seconds <= 0 or (window.slide is not None and window.slide.seconds <= 0):
            raise transformer.fail("a window's width and slide must be positive", where)
    elif isinstance(window, CountWindow) and window.size <= 0:
        raise transformer.fail("a count window holds at least one triple", where)
