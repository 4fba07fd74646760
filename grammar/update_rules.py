"""Rule methods for SPARQL 1.1 Update, W3C productions [29]-[49]: updates are validated only
(their static rules: no variables in INSERT DATA, no blank nodes in DELETE ..., §19.6 labels per
operation) and executed as text."""

from __future__ import annotations

from typing import Any

from lark import v_args
from lark.tree import Meta

from rsep.grammar.pattern_rules import GraphPatternRules
from rsep.grammar.transformer_base import Occurrence, StaticSemanticsError


class UpdateRules(GraphPatternRules):
    """[29]-[49] updates (validated only)."""

    @v_args(meta=True)
    def update1(self, meta: Meta, children: list[Any]) -> None:
        self._operation_spans.append((meta.start_pos, meta.end_pos, len(self._operation_spans)))

    @v_args(meta=True)
    def insert_data(self, meta: Meta, children: list[Any]) -> None:
        self._reject_in_span(self._vars, meta, "INSERT DATA cannot contain variables")

    @v_args(meta=True)
    def delete_data(self, meta: Meta, children: list[Any]) -> None:
        self._reject_in_span(self._vars, meta, "DELETE DATA cannot contain variables")
        self._reject_in_span(self._blank_nodes, meta, "DELETE DATA cannot contain blank nodes")

    @v_args(meta=True)
    def delete_where(self, meta: Meta, children: list[Any]) -> None:
        self._reject_in_span(self._blank_nodes, meta, "DELETE WHERE cannot contain blank nodes")

    @v_args(meta=True)
    def delete_clause(self, meta: Meta, children: list[Any]) -> None:
        self._reject_in_span(self._blank_nodes, meta, "a DELETE template cannot contain blank nodes")

    def _reject_in_span(self, occurrences: list[Occurrence], meta: Meta, message: str) -> None:
        found = [o for o in occurrences if meta.start_pos <= o.start < meta.end_pos]
        if found:
            first = min(found, key=lambda o: o.start)
            raise StaticSemanticsError(message, first.line, first.column)

    def _ignore(self, children: list[Any]) -> None:
        return None

    update = load = clear = drop = create = add = move = copy = modify = _ignore
    insert_clause = using_clause = graph_or_default = graph_ref = graph_ref_all = _ignore
    quad_pattern = quad_data = quads = quads_not_triples = _ignore
