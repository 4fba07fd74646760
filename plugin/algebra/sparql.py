"""Typed syntax tree for SPARQL 1.1 queries.

The grammar's transformer builds these nodes; the event algebra embeds them
(a GPM is a SPARQL group graph pattern); the serializer turns them back into
SPARQL text for Oxigraph; the expression evaluator runs `Expr` nodes. The tree
stays close to the W3C grammar (https://www.w3.org/TR/sparql11-query/#grammar)
rather than to the SPARQL algebra, so that a query can be printed back
faithfully and analysed (variables, filters, GRAPH blocks) before evaluation.

Conventions:
- IRIs are absolute: prefixed names and relative IRIs are resolved while parsing.
- Every literal carries its datatype (simple literals are xsd:string, language
  tagged ones rdf:langString), as in RDF 1.1.
- Blank nodes in patterns keep their query-local label; anonymous ones (`[]`,
  property lists, collections) get generated labels that cannot clash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Union

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD_STRING = XSD + "string"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_DOUBLE = XSD + "double"
XSD_BOOLEAN = XSD + "boolean"
RDF_LANGSTRING = RDF + "langString"
RDF_TYPE = RDF + "type"


# The SPARQL 1.1 built-in functions (§17.4) by upper-case name, with their (minimum, maximum)
# number of arguments (UNBOUNDED_ARITY: no maximum), and the aggregate names (§18.5).
AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"})
UNBOUNDED_ARITY = -1
BUILTIN_ARITY: dict[str, tuple[int, int]] = {
    **{name: (0, 0) for name in ("RAND", "NOW", "UUID", "STRUUID")},
    **{
        name: (2, 2)
        for name in [
            "LANGMATCHES",
            "CONTAINS",
            "STRSTARTS",
            "STRENDS",
            "STRBEFORE",
            "STRAFTER",
            "STRLANG",
            "STRDT",
            "SAMETERM",
        ]
    },
    **{name: (0, UNBOUNDED_ARITY) for name in ("CONCAT", "COALESCE")},
    "BNODE": (0, 1),
    "SUBSTR": (2, 3),
    "REGEX": (2, 3),
    "REPLACE": (3, 4),
    "IF": (3, 3),
    **{
        name: (1, 1)
        for name in [
            "STR",
            "LANG",
            "DATATYPE",
            "BOUND",
            "IRI",
            "URI",
            "ABS",
            "CEIL",
            "FLOOR",
            "ROUND",
            "STRLEN",
            "UCASE",
            "LCASE",
            "ENCODE_FOR_URI",
            "YEAR",
            "MONTH",
            "DAY",
            "HOURS",
            "MINUTES",
            "SECONDS",
            "TIMEZONE",
            "TZ",
            "MD5",
            "SHA1",
            "SHA256",
            "SHA384",
            "SHA512",
            "ISIRI",
            "ISURI",
            "ISBLANK",
            "ISLITERAL",
            "ISNUMERIC",
        ]
    },
}


class Node:
    """Base of every syntax-tree node (a marker for typing and the printer)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class SourcePosition:
    """Where a construct was written in the query text (1-based line and column), kept on the
    nodes the compiler may reject after parsing so that its error points there. Fields holding
    one are never compared: where a node was written does not change what it means."""

    line: int
    column: int


# --------------------------------------------------------------------------- terms


@dataclass(frozen=True, slots=True)
class Var(Node):
    """A variable `?name` or `$name` (the name has no sigil)."""

    name: str


@dataclass(frozen=True, slots=True)
class IRI(Node):
    """An absolute IRI."""

    value: str


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def has_scheme(iri: str) -> bool:
    """Does `iri` start with a scheme (RFC 3986 §3.1)? A reference without one stays relative when
    the query has no base to resolve it against."""
    return _SCHEME.match(iri) is not None


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """An RDF literal; `language` is set only for rdf:langString literals."""

    lexical: str
    datatype: str = XSD_STRING
    language: str | None = None

    def __post_init__(self) -> None:
        if self.language is not None and self.datatype != RDF_LANGSTRING:
            raise ValueError("a language-tagged literal has datatype rdf:langString")


@dataclass(frozen=True, slots=True)
class BNode(Node):
    """A blank node in a pattern or template (a query-local label)."""

    label: str


Term = Union[IRI, Literal, BNode]
VarOrTerm = Union[Var, IRI, Literal, BNode]


# --------------------------------------------------------------------------- property paths  [88]-[101]


@dataclass(frozen=True, slots=True)
class PathInverse(Node):
    """`^path`"""

    path: Path


@dataclass(frozen=True, slots=True)
class PathSequence(Node):
    """`p1 / p2 / ...` (at least two steps)."""

    steps: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class PathAlternative(Node):
    """`p1 | p2 | ...` (at least two options)."""

    options: tuple[Path, ...]


class PathModifier(Enum):
    ZERO_OR_MORE = "*"
    ONE_OR_MORE = "+"
    ZERO_OR_ONE = "?"


@dataclass(frozen=True, slots=True)
class PathMod(Node):
    """`path*`, `path+` or `path?`."""

    path: Path
    modifier: PathModifier


@dataclass(frozen=True, slots=True)
class PathNegatedSet(Node):
    """`!(p1 | ^p2 | ...)`: `forward` and `inverse` list the excluded IRIs."""

    forward: tuple[IRI, ...]
    inverse: tuple[IRI, ...]


@dataclass(frozen=True, slots=True)
class PathNested(Node):
    """`path[test]` (nSPARQL nesting, CQELS-CEP §3): a step whose node must have
    an outgoing `test` path. Not SPARQL 1.1; compiled away before Oxigraph sees it."""

    path: Path
    test: Path


Path = Union[IRI, PathInverse, PathSequence, PathAlternative, PathMod, PathNegatedSet, PathNested]
"""A predicate position: a plain IRI is the simplest path."""


# --------------------------------------------------------------------------- expressions  [110]-[131]


@dataclass(frozen=True, slots=True)
class BinaryOp(Node):
    """`||`, `&&`, `=`, `!=`, `<`, `>`, `<=`, `>=`, `+`, `-`, `*`, `/`."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class UnaryOp(Node):
    """`!e`, `-e`, `+e`."""

    op: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class In(Node):
    """`e IN (...)` or `e NOT IN (...)`."""

    expr: Expr
    options: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class FunctionCall(Node):
    """A built-in call (`name` upper-case, e.g. "STRLEN", "REGEX", "BOUND",
    "IF", "COALESCE", "BNODE", "NOW") or an extension function (`name` is an
    IRI instance). `distinct` only for extension aggregates written with DISTINCT."""

    name: str | IRI
    args: tuple[Expr, ...]
    distinct: bool = False
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the call is written, for an extension function the compiler may refuse there
    (C-SPARQL's timestamp(), rsep.plugin.windows.timestamp); None when not parsed from text."""


@dataclass(frozen=True, slots=True)
class Exists(Node):
    """`EXISTS { ... }` or `NOT EXISTS { ... }`."""

    pattern: GroupPattern
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Aggregate(Node):
    """`COUNT`, `SUM`, `MIN`, `MAX`, `AVG`, `SAMPLE`, `GROUP_CONCAT`.
    `expr` is None for `COUNT(*)`."""

    name: str
    expr: Expr | None
    distinct: bool = False
    separator: str | None = None


Expr = Union[Var, IRI, Literal, BinaryOp, UnaryOp, In, FunctionCall, Exists, Aggregate]


# --------------------------------------------------------------------------- graph patterns  [53]-[83]


@dataclass(frozen=True, slots=True)
class TriplePattern(Node):
    subject: VarOrTerm
    predicate: Var | Path
    object: VarOrTerm


@dataclass(frozen=True, slots=True)
class BGP(Node):
    """A run of triple patterns (the blocks between other group elements)."""

    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class Filter(Node):
    expr: Expr


@dataclass(frozen=True, slots=True)
class OptionalPattern(Node):
    pattern: GroupPattern


@dataclass(frozen=True, slots=True)
class MinusPattern(Node):
    pattern: GroupPattern


@dataclass(frozen=True, slots=True)
class UnionPattern(Node):
    """`{...} UNION {...} UNION ...` (at least two branches)."""

    branches: tuple[GroupPattern, ...]


@dataclass(frozen=True, slots=True)
class GraphGraphPattern(Node):
    """`GRAPH name { ... }`."""

    name: Var | IRI
    pattern: GroupPattern


@dataclass(frozen=True, slots=True)
class ServicePattern(Node):
    name: Var | IRI
    pattern: GroupPattern
    silent: bool = False


@dataclass(frozen=True, slots=True)
class Bind(Node):
    expr: Expr
    var: Var


@dataclass(frozen=True, slots=True)
class InlineData(Node):
    """`VALUES (?a ?b) { (...) ... }`; None in a row is UNDEF."""

    vars: tuple[Var, ...]
    rows: tuple[tuple[Term | None, ...], ...]


@dataclass(frozen=True, slots=True)
class SubSelect(Node):
    query: SelectQuery


@dataclass(frozen=True, slots=True)
class GroupPattern(Node):
    """`{ ... }`: its elements in source order (a nested `{ }` is a GroupPattern)."""

    elements: tuple[GroupElement, ...] = ()


GroupElement = Union[
    BGP,
    Filter,
    OptionalPattern,
    MinusPattern,
    UnionPattern,
    GraphGraphPattern,
    ServicePattern,
    Bind,
    InlineData,
    SubSelect,
    GroupPattern,
    Node,  # dialect extensions (e.g. the event algebra's MatchElement) subclass Node
]


# --------------------------------------------------------------------------- queries  [1]-[31]


@dataclass(frozen=True, slots=True)
class Prologue(Node):
    """BASE and PREFIX declarations, kept so printed queries read like the input."""

    base: str | None = None
    prefixes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class DatasetClause(Node):
    """`FROM <g>` (named=False) or `FROM NAMED <g>`."""

    graph: IRI
    named: bool = False


@dataclass(frozen=True, slots=True)
class Projection(Node):
    """One item of a SELECT clause: a variable, or `(expr AS ?var)`."""

    var: Var
    expr: Expr | None = None


@dataclass(frozen=True, slots=True)
class OrderCondition(Node):
    expr: Expr
    descending: bool = False


@dataclass(frozen=True, slots=True)
class GroupCondition(Node):
    """`GROUP BY` item: an expression, optionally `(expr AS ?var)`."""

    expr: Expr
    var: Var | None = None


@dataclass(frozen=True, slots=True)
class SolutionModifiers(Node):
    group_by: tuple[GroupCondition, ...] = ()
    having: tuple[Expr, ...] = ()
    order_by: tuple[OrderCondition, ...] = ()
    limit: int | None = None
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class SelectQuery(Node):
    """SELECT query or sub-select; `projection` is None for `SELECT *`."""

    projection: tuple[Projection, ...] | None
    where: GroupPattern
    distinct: bool = False
    reduced: bool = False
    dataset: tuple[DatasetClause, ...] = ()
    modifiers: SolutionModifiers = SolutionModifiers()
    values: InlineData | None = None
    prologue: Prologue = Prologue()


@dataclass(frozen=True, slots=True)
class ConstructQuery(Node):
    template: tuple[TriplePattern, ...]
    where: GroupPattern
    dataset: tuple[DatasetClause, ...] = ()
    modifiers: SolutionModifiers = SolutionModifiers()
    values: InlineData | None = None
    prologue: Prologue = Prologue()


@dataclass(frozen=True, slots=True)
class AskQuery(Node):
    where: GroupPattern
    dataset: tuple[DatasetClause, ...] = ()
    modifiers: SolutionModifiers = SolutionModifiers()
    values: InlineData | None = None
    prologue: Prologue = Prologue()


@dataclass(frozen=True, slots=True)
class DescribeQuery(Node):
    """`targets` is None for `DESCRIBE *`."""

    targets: tuple[Var | IRI, ...] | None
    where: GroupPattern | None = None
    dataset: tuple[DatasetClause, ...] = ()
    modifiers: SolutionModifiers = SolutionModifiers()
    values: InlineData | None = None
    prologue: Prologue = Prologue()


Query = Union[SelectQuery, ConstructQuery, AskQuery, DescribeQuery]
