"""The query forms of the window dialects (C-SPARQL, CQELS): SELECT, CONSTRUCT and ASK over
windows are SPARQL's own forms, read into an `EventQuery` by the dialect's `_query`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.absolute_iris import AbsoluteIris
from rsep.grammar.sparql_transformer import QueryParts
from rsep.plugin.algebra.events import ConstructForm, EventQuery, SelectForm, SourcePosition


class WindowQueryForms(AbsoluteIris):
    """The base of the window dialects' transformers, which define `_query`; the query keeps
    where its form is written (rsep.plugin.store.prepare reports Oxigraph's refusals there)."""

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        raise NotImplementedError

    def _positioned(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        return replace(self._query(form, parts, meta), position=SourcePosition(*self.position(meta)))

    @v_args(meta=True)
    def select_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        clause = parts.select
        assert clause is not None and parts.where is not None
        self.check_projection(clause, parts.where, parts.modifiers)
        return self._positioned(SelectForm(clause.projection, clause.distinct), parts, meta)

    @v_args(meta=True)
    def construct_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        assert parts.template is not None
        return self._positioned(ConstructForm(parts.template), parts, meta)

    @v_args(meta=True)
    def ask_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        return self._positioned(SelectForm((), distinct=True), QueryParts.collect(children), meta)
