"""A window CONSTRUCT's answer: solutions once per content, triples per evaluation (SPARQL 1.1 §16.2).

Each evaluation of a C-SPARQL or CQELS CONSTRUCT is a query answer of its own, so the blank nodes
of its template are fresh per solution AND per evaluation (§16.2.1): two evaluation times whose
windows hold the same content answer the same solutions, but not the same blank nodes. The runtime
reuses one evaluation's solutions while the content does not change (rsep.plugin.windows.window_replay),
so Oxigraph runs the CONSTRUCT's pattern as a SELECT of the template's variables
(`construct_select`) and the template is instantiated here, at each evaluation time, with blank
nodes named after the query's label scope, the evaluation time t' and the solution's index
(`ConstructTemplate`): deterministic, so the same run, or an evaluation replayed after an endpoint
restart, names them the same (docs/semantics.md, "Blank nodes of window CONSTRUCT results").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from rsep.plugin.algebra.sparql import (
    XSD_INTEGER,
    BNode,
    GroupCondition,
    GroupPattern,
    Literal,
    Projection,
    SelectQuery,
    SolutionModifiers,
    TriplePattern,
    Var,
)
from rsep.plugin.results import instantiate
from rsep.plugin.windows.tree import walk

SOLUTION_VAR = "__rsep_solution"
"""Projected (as the constant 1) when the template has no variable: SELECT needs a projection,
and each solution still instantiates the template once."""
_LABEL_CHARS = 16


def construct_select(
    template: Sequence[TriplePattern], where: GroupPattern, modifiers: SolutionModifiers
) -> SelectQuery:
    """The CONSTRUCT's solution sequence as a SELECT: the same pattern and solution modifiers,
    projecting the template's variables. Under GROUP BY only the grouping variables stay in scope
    (SPARQL 1.1 §18.2.4.1), so the others are not projected: they are unbound in every solution."""
    names = dict.fromkeys(node.name for node in walk(template) if isinstance(node, Var))
    if modifiers.group_by:
        grouped = {_grouped(condition) for condition in modifiers.group_by}
        names = {name: None for name in names if name in grouped}
    projection = tuple(Projection(Var(name)) for name in names)
    if not projection:
        projection = (Projection(Var(SOLUTION_VAR), Literal("1", XSD_INTEGER)),)
    return SelectQuery(projection, where, modifiers=modifiers)


def _grouped(condition: GroupCondition) -> str | None:
    """The variable a GROUP BY condition binds: `?v`, or `(expr AS ?v)`."""
    if condition.var is not None:
        return condition.var.name
    return condition.expr.name if isinstance(condition.expr, Var) else None


class ConstructTemplate:
    """A CONSTRUCT template instantiated per evaluation; `scope` names the query (its id on the
    endpoint, the stream it produces in `rsep run`) so that two queries' blank nodes differ."""

    def __init__(self, template: Sequence[TriplePattern], scope: str = "") -> None:
        self.template = tuple(template)
        self.scope = scope
        self.blank = any(isinstance(node, BNode) for node in walk(self.template))
        self._last: tuple[Sequence[Mapping[str, str]], tuple[str, ...]] | None = None
        """Without blank nodes an evaluation only depends on its solutions: the triples of the
        last ones, reused while the windows' answer (the same rows object) is."""

    def triples(self, rows: Sequence[Mapping[str, str]], time: int) -> tuple[str, ...]:
        """The evaluation at `time` (ticks): the template under each solution, as a set of
        N-Triples statements in sorted order; solution i's blank nodes are `_:m<label>s<i>t<b>`,
        the label a hash of (scope, time) (never an evaluation graph's name)."""
        if not self.blank and self._last is not None and self._last[0] is rows:
            return self._last[1]
        prefix = self.label(time) if self.blank else ""
        found = {
            f"{s} {p} {o} ."
            for index, row in enumerate(rows)
            for s, p, o in instantiate(self.template, row, f"{prefix}s{index}")
        }
        triples = tuple(sorted(found))
        if not self.blank:
            self._last = (rows, triples)
        return triples

    def label(self, time: int) -> str:
        """The name shared by the blank nodes of one evaluation: a hash of (scope, t')."""
        key = json.dumps([self.scope, "construct", time], ensure_ascii=False)
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:_LABEL_CHARS]
