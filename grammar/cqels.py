"""CQELS-QL and CQELS-CEP windows: grammar/cqels.lark's transformer to the event algebra.

Each stream graph pattern `STREAM <s> [window] {P}` (CQELS-QL) or window
block `WINDOW :w {P}` over `FROM NAMED WINDOW :w ON <s> [window]`
(CQELS-CEP §3.1) becomes a WindowElement in place, matched against that one
window (RSEP-QL's `WINDOW w P`, §3.3); everything outside them reads the
static data. The dialect reports on every new input (content change,
RSEP-QL §3.4). CQELS-CEP's SEQ(...) is parsed (rule `event_clause`) and
rejected as not implemented yet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.csparql import check_window, parse_duration
from rsep.grammar.sparql_transformer import QueryParts, SparqlTransformer, StaticSemanticsError
from rsep.plugin.algebra.events import (
    CQELS,
    ConstructForm,
    CountWindow,
    EventQuery,
    LandmarkWindow,
    NowWindow,
    SelectForm,
    StreamDecl,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.sparql import IRI, GroupPattern, InlineData, Prologue


@dataclass(frozen=True, slots=True)
class _NamedWindow:
    name: IRI
    stream: IRI
    window: Window
    meta: Meta


@dataclass(frozen=True, slots=True)
class _Use:
    """A window block as written: the stream (STREAM form) or window name (WINDOW form)."""

    named: bool
    target: IRI
    window: Window | None
    meta: Meta


class CqelsTransformer(SparqlTransformer):
    """One method per rule cqels.lark adds or overrides."""

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(base_iri)
        self._uses: list[_Use] = []

    def range_window(self, children: list[Token]) -> TimeWindow:
        width = parse_duration(children[0])
        return TimeWindow(width, parse_duration(children[1]) if len(children) > 1 else None)

    def now_window(self, children: list[Any]) -> NowWindow:
        return NowWindow()

    def all_window(self, children: list[Any]) -> LandmarkWindow:
        return LandmarkWindow()

    def count_window(self, children: list[Token]) -> CountWindow:
        return CountWindow(int(children[0]))

    @v_args(meta=True)
    def named_window_clause(self, meta: Meta, children: list[Any]) -> _NamedWindow:
        name, stream, window = (c for c in children if not isinstance(c, Token))
        check_window(self, window, meta)
        return _NamedWindow(name, stream, window, meta)

    @v_args(meta=True)
    def stream_graph_pattern(self, meta: Meta, children: list[Any]) -> WindowElement:
        stream, window, pattern = children
        check_window(self, window, meta)
        self._uses.append(_Use(False, stream, window, meta))
        return self._element(stream, pattern)

    @v_args(meta=True)
    def window_graph_pattern(self, meta: Meta, children: list[Any]) -> WindowElement:
        name, pattern = children
        self._uses.append(_Use(True, name, None, meta))
        return self._element(name, pattern)

    @v_args(meta=True)
    def event_clause(self, meta: Meta, children: list[Any]) -> None:
        raise self.fail(
            "SEQ(...) (CQELS-CEP sequences with a negated element) is not implemented yet; "
            "windows with plain graph patterns are",
            meta,
        )

    def _element(self, target: IRI, pattern: GroupPattern) -> WindowElement:
        node = WindowElement(target.value, pattern)
        self.set_scope(node, self.scope(pattern))
        return node

    # ------------------------------------------------------------------ query forms

    @v_args(meta=True)
    def select_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        clause = parts.select
        assert clause is not None and parts.where is not None
        self.check_projection(clause, parts.where, parts.modifiers)
        return self._query(SelectForm(clause.projection, clause.distinct), parts, meta)

    @v_args(meta=True)
    def construct_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        assert parts.template is not None
        return self._query(ConstructForm(parts.template), parts, meta)

    @v_args(meta=True)
    def ask_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        return self._query(SelectForm((), distinct=True), QueryParts.collect(children), meta)

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        if values is not None:
            raise StaticSemanticsError("a trailing VALUES clause does not apply to a CQELS query", 1, 1)
        return replace(form, prologue=prologue)

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        if not self._uses:
            raise self.fail(
                "a CQELS query matches at least one STREAM <iri> [window] { ... } or WINDOW :w { ... }",
                meta,
            )
        assert parts.where is not None
        named = [e for e in parts.extras if isinstance(e, _NamedWindow)]
        return EventQuery(
            dialect=CQELS,
            form=form,
            streams=self._streams(named),
            where=parts.where,
            static_graphs=tuple(d.graph.value for d in parts.dataset if not d.named),
            modifiers=parts.modifiers,
        )

    def _streams(self, named: list[_NamedWindow]) -> tuple[StreamDecl, ...]:
        """One StreamDecl per named window (alias = its name) and per stream read with the STREAM
        form (no alias); a stream read through two different windows needs named windows."""
        decls: dict[str, StreamDecl] = {}
        for window in named:
            if window.name.value in decls:
                raise self.fail(f"window <{window.name.value}> is declared twice", window.meta)
            decls[window.name.value] = StreamDecl(window.stream.value, window.name.value, window.window)
        by_stream: dict[str, StreamDecl] = {}
        for use in self._uses:
            if use.named:
                if use.target.value not in decls:
                    known = ", ".join(f"<{name}>" for name in decls) or "none"
                    raise self.fail(
                        f"window <{use.target.value}> is not declared by FROM NAMED WINDOW "
                        f"(declared: {known})",
                        use.meta,
                    )
                continue
            previous = by_stream.setdefault(use.target.value, StreamDecl(use.target.value, None, use.window))
            if previous.window != use.window:
                raise self.fail(
                    f"stream <{use.target.value}> is read through two different windows; "
                    "name them with FROM NAMED WINDOW :w ON <stream> [...] and use WINDOW :w { ... }",
                    use.meta,
                )
        return (*decls.values(), *by_stream.values())
