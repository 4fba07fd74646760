"""The values rule methods hand up before they become algebra nodes: a SELECT clause before its
WHERE, a triples node with its triples, the pieces of a solution modifier, and `QueryParts`, the
children of a query-form rule sorted by kind (dialect transformers reuse it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lark import Token

from rsep.grammar.lexical import terminal_name
from rsep.plugin.algebra.sparql import (
    IRI,
    BNode,
    DatasetClause,
    Expr,
    GroupCondition,
    GroupPattern,
    InlineData,
    Node,
    OrderCondition,
    Projection,
    SolutionModifiers,
    Term,
    TriplePattern,
    Var,
)


@dataclass(frozen=True, slots=True)
class SelectClause:
    """[9] before it is combined with the WHERE clause; `star` is the position of `*`, if any."""

    projection: tuple[Projection, ...] | None
    distinct: bool = False
    reduced: bool = False
    star: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class TriplesNode:
    """A collection or `[ ... ]`: the node standing for it and the triples it expands to."""

    node: BNode | IRI
    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class Template:
    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class Args:
    args: tuple[Expr, ...]
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    values: tuple[Term | None, ...]
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class GroupBy:
    conditions: tuple[GroupCondition, ...]


@dataclass(frozen=True, slots=True)
class Having:
    conditions: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class OrderBy:
    conditions: tuple[OrderCondition, ...]


@dataclass(frozen=True, slots=True)
class Limit:
    value: int


@dataclass(frozen=True, slots=True)
class Offset:
    value: int


@dataclass(frozen=True, slots=True)
class BaseDecl:
    iri: str


@dataclass(frozen=True, slots=True)
class Elements:
    """The elements of a group graph pattern ([54]) before they become a GroupPattern."""

    items: tuple[Node, ...]


@dataclass(slots=True)
class QueryParts:
    """The children of a query-form rule sorted by kind, so that a dialect that overrides e.g.
    `select_query` with extra clauses can reuse `SparqlTransformer.build_select` on the rest."""

    select: SelectClause | None = None
    template: tuple[TriplePattern, ...] | None = None
    dataset: list[DatasetClause] = field(default_factory=list)
    where: GroupPattern | None = None
    modifiers: SolutionModifiers = SolutionModifiers()
    values: InlineData | None = None
    targets: list[Var | IRI] = field(default_factory=list)
    star: bool = False
    extras: list[Any] = field(default_factory=list)

    @classmethod
    def collect(cls, children: Iterable[Any]) -> QueryParts:
        parts = cls()
        for child in children:
            parts._add(child)
        return parts

    def _add(self, child: Any) -> None:
        if isinstance(child, SelectClause):
            self.select = child
        elif isinstance(child, Template):
            self.template = child.triples
        elif isinstance(child, tuple) and all(isinstance(t, TriplePattern) for t in child):
            self.template = child  # the triples of CONSTRUCT WHERE { ... }
        elif isinstance(child, DatasetClause):
            self.dataset.append(child)
        elif isinstance(child, GroupPattern):
            self.where = child
        elif isinstance(child, SolutionModifiers):
            self.modifiers = child
        elif isinstance(child, InlineData):
            self.values = child
        elif isinstance(child, Var | IRI):
            self.targets.append(child)
        elif isinstance(child, Token) and terminal_name(child) == "STAR":
            self.star = True
        elif child is not None:
            self.extras.append(child)
