"""Lark trees of grammar/sparql11.lark to the typed syntax tree of `rsep.plugin.algebra.sparql`.

One method per grammar rule, named after the rule, so a dialect transformer subclasses
`SparqlTransformer` and adds or overrides methods for the rules its grammar adds or overrides.
Rules a dialect grammar imports indirectly arrive renamed `sparql11__<rule>`; `__default__` maps
them back to the same methods, so subclassing is enough (lark's `merge_transformers` works too).

The transformer is non-recursive (lark's `Transformer_NonRecursive`), so deeply nested queries do
not hit Python's recursion limit. It visits the tree bottom-up, left to right: PREFIX and BASE
declarations are seen before the IRIs that use them, which is how prefixed names and relative IRIs
are resolved on the fly.

The static rules of SPARQL that the grammar cannot express (§18.2.1 scoping, §11.4 grouping,
§19.6 blank-node labels, §3.1.3 update data) are checked here and raise
`StaticSemanticsError` with the line and column of the offending construct; `rsep.grammar.parser`
turns it into `SparqlSyntaxError`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from lark import Token, Transformer_NonRecursive, Tree, v_args
from lark.tree import Meta

from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    RDF,
    RDF_LANGSTRING,
    RDF_TYPE,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    Aggregate,
    AskQuery,
    BinaryOp,
    Bind,
    BNode,
    ConstructQuery,
    DatasetClause,
    DescribeQuery,
    Exists,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupCondition,
    GroupPattern,
    In,
    InlineData,
    Literal,
    MinusPattern,
    Node,
    OptionalPattern,
    OrderCondition,
    Path,
    PathAlternative,
    PathInverse,
    PathMod,
    PathModifier,
    PathNegatedSet,
    PathSequence,
    Projection,
    Prologue,
    SelectQuery,
    ServicePattern,
    SolutionModifiers,
    SubSelect,
    Term,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
    VarOrTerm,
)
from rsep.plugin.errors import InternalError

RDF_FIRST = RDF + "first"
RDF_REST = RDF + "rest"
RDF_NIL = RDF + "nil"

_BUILTIN_ALIASES = {"URI": "IRI", "ISURI": "ISIRI"}
_NUMERIC_TYPES = {"INTEGER": XSD_INTEGER, "DECIMAL": XSD_DECIMAL, "DOUBLE": XSD_DOUBLE}


class StaticSemanticsError(InternalError):
    """A static rule of SPARQL is broken at (line, column); see `rsep.grammar.parser.SparqlSyntaxError`."""

    line: int
    column: int

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


# --------------------------------------------------------------------------- lexical helpers


def terminal_name(token: Token) -> str:
    """The terminal's name without the namespace a dialect import adds (`sparql11__VAR1` -> `VAR1`)."""
    return token.type.rsplit("__", 1)[-1]


_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHARS = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _decode_escape(match: re.Match[str]) -> str:
    code = match.group(1) or match.group(2)
    if code is None:
        return _ECHARS[match.group(3)]
    point = int(code, 16)
    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
        raise ValueError(f"\\u{code} is not a Unicode scalar value")
    return chr(point)


def unescape(text: str) -> str:
    """Decode ECHAR and UCHAR escapes in one pass (so an escaped backslash never starts another escape)."""
    return _ESCAPE.sub(_decode_escape, text) if "\\" in text else text


_LOCAL_ESCAPE = re.compile(r"\\(.)")
_IRI_SPLIT = re.compile(
    r"^(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S
)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(output) > 1:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if path.startswith("/") and (not output or output[0] != ""):
        output.insert(0, "")
    if path.split("/")[-1] in (".", ".."):
        output.append("")
    return "/".join(output)


def _merge(base_authority: str | None, base_path: str, path: str) -> str:
    if base_authority is not None and base_path == "":
        return "/" + path
    return base_path[: base_path.rfind("/") + 1] + path


def resolve_iri(base: str | None, reference: str) -> str:
    """Resolve `reference` against `base` (RFC 3986 §5.2.2). urllib's urljoin is not used because it
    leaves references alone for schemes it does not know (`BASE <base:>`, `urn:`, `tag:`)."""
    scheme, authority, path, query, fragment = _IRI_SPLIT.match(reference).groups()  # type: ignore[union-attr]
    if scheme is not None or base is None:
        return reference
    b_scheme, b_authority, b_path, b_query, _ = _IRI_SPLIT.match(base).groups()  # type: ignore[union-attr]
    if authority is not None:
        path = _remove_dot_segments(path)
    elif path == "":
        authority, path = b_authority, b_path
        query = b_query if query is None else query
    else:
        authority = b_authority
        path = _remove_dot_segments(path if path.startswith("/") else _merge(b_authority, b_path, path))
    text = f"{b_scheme}:" if b_scheme is not None else ""
    text += f"//{authority}" if authority is not None else ""
    text += path
    text += f"?{query}" if query is not None else ""
    return text + (f"#{fragment}" if fragment is not None else "")


# --------------------------------------------------------------------------- intermediate values


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
class _Template:
    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class _Args:
    args: tuple[Expr, ...]
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class _Row:
    values: tuple[Term | None, ...]
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class _GroupBy:
    conditions: tuple[GroupCondition, ...]


@dataclass(frozen=True, slots=True)
class _Having:
    conditions: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class _OrderBy:
    conditions: tuple[OrderCondition, ...]


@dataclass(frozen=True, slots=True)
class _Limit:
    value: int


@dataclass(frozen=True, slots=True)
class _Offset:
    value: int


@dataclass(frozen=True, slots=True)
class _BaseDecl:
    iri: str


@dataclass(frozen=True, slots=True)
class _Elements:
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
        elif isinstance(child, _Template):
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


# --------------------------------------------------------------------------- expression walks


def _expression_children(expr: Node) -> Sequence[Node]:
    if isinstance(expr, BinaryOp):
        return (expr.left, expr.right)
    if isinstance(expr, UnaryOp):
        return (expr.operand,)
    if isinstance(expr, In):
        return (expr.expr, *expr.options)
    if isinstance(expr, FunctionCall):
        return expr.args
    if isinstance(expr, Aggregate):
        return () if expr.expr is None else (expr.expr,)
    return ()


def iter_expression(expr: Node, *, into_aggregates: bool = True) -> Iterator[Node]:
    """The nodes of an expression, without recursion (a `||` chain can be thousands deep); the
    patterns of EXISTS are not entered, they are checked where they were built."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if into_aggregates or not isinstance(node, Aggregate):
            stack.extend(reversed(_expression_children(node)))


def _first_aggregate(expr: Node) -> Aggregate | None:
    return next((node for node in iter_expression(expr) if isinstance(node, Aggregate)), None)


def _has_aggregate(exprs: Iterable[Node]) -> bool:
    return any(_first_aggregate(expr) is not None for expr in exprs)


def _group_keys(conditions: Iterable[GroupCondition]) -> set[str]:
    """The variables GROUP BY makes projectable: `?v`, `(?v)` and `(expr AS ?v)`."""
    keys = {c.var.name for c in conditions if c.var is not None}
    return keys | {c.expr.name for c in conditions if c.var is None and isinstance(c.expr, Var)}


def _triple_vars(triple: TriplePattern) -> Iterator[str]:
    for term in (triple.subject, triple.predicate, triple.object):
        if isinstance(term, Var):
            yield term.name


@dataclass(frozen=True, slots=True)
class _Occurrence:
    name: str
    start: int
    line: int
    column: int


def _position_of(meta: Meta) -> tuple[int, int]:
    return (meta.line, meta.column) if not meta.empty else (1, 1)


def _first_reuse(occurrences: Iterable[_Occurrence], spans: list[tuple[int, int, int]]) -> _Occurrence | None:
    """The first label occurrence that lies in a different span group than the label's first one.
    `spans` are disjoint (start, end, group) character ranges."""
    spans = sorted(spans)
    starts = [start for start, _, _ in spans]
    first_group: dict[str, int] = {}
    for occurrence in sorted(occurrences, key=lambda o: o.start):
        index = bisect_right(starts, occurrence.start) - 1
        if index < 0 or occurrence.start >= spans[index][1]:
            continue
        if first_group.setdefault(occurrence.name, spans[index][2]) != spans[index][2]:
            return occurrence
    return None


# --------------------------------------------------------------------------- the transformer


class SparqlTransformer(Transformer_NonRecursive):  # type: ignore[type-arg]
    """Builds `Query` nodes from `query_unit` trees and validates `update_unit` trees.

    Use one instance per parse: it carries the prologue and the tables of the static checks.
    `base_iri` resolves relative IRIs when the text has no BASE (e.g. the document's URL)."""

    __visit_tokens__ = False

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(visit_tokens=False)
        self.base = base_iri
        self.prefixes: dict[str, str] = {}
        self._anon_prefix = "b"
        self._anon_count = 0
        self._scopes: dict[int, tuple[Node, frozenset[str]]] = {}
        self._positions: dict[int, tuple[object, int, int]] = {}
        self._vars: list[_Occurrence] = []
        self._labels: list[_Occurrence] = []
        self._blank_nodes: list[_Occurrence] = []
        self._spans: dict[int, tuple[BGP, int, int]] = {}
        self._bgp_spans: list[tuple[int, int, int]] = []
        self._bgp_groups = 0
        self._operation_spans: list[tuple[int, int, int]] = []

    # ----------------------------------------------------------------- driving

    def transform(self, tree: Tree[Token]) -> Any:
        self._reserve_anon_prefix(tree)
        result = super().transform(tree)
        self._check_blank_node_labels()
        return result

    def __default__(self, data: str, children: list[Any], meta: Meta) -> Any:
        """Rules of an imported grammar arrive as `<grammar>__<rule>`: dispatch them by base name."""
        base = data.rsplit("__", 1)[-1]
        method = getattr(self, base, None) if base != data else None
        if not callable(method):
            return Tree(data, children, meta)
        wrapper = getattr(method, "visit_wrapper", None)  # set by @v_args, as lark's own dispatch does
        return wrapper(method, base, children, meta) if wrapper is not None else method(children)

    def _reserve_anon_prefix(self, tree: Tree[Token]) -> None:
        """Pick a prefix for generated blank-node labels that no label written in the text starts with."""
        labels: list[str] = []
        stack = [tree]  # not Tree.scan_values, which recurses
        while stack:
            for child in stack.pop().children:
                if isinstance(child, Tree):
                    stack.append(child)
                elif terminal_name(child) == "BLANK_NODE_LABEL":
                    labels.append(str(child)[2:])
        while any(label.startswith(self._anon_prefix) for label in labels):
            self._anon_prefix += "_"

    def new_blank_node(self) -> BNode:
        """A fresh blank node for `[]`, `[ ... ]` and collections."""
        self._anon_count += 1
        return BNode(f"{self._anon_prefix}{self._anon_count - 1}")

    # ----------------------------------------------------------------- bookkeeping for checks

    def fail(self, message: str, where: object | Meta | Token | None = None) -> StaticSemanticsError:
        """The error to raise for a broken static rule at a node, meta or token."""
        line, column = self.position(where)
        return StaticSemanticsError(message, line, column)

    def position(self, where: object | Meta | Token | None) -> tuple[int, int]:
        if isinstance(where, Meta):
            return _position_of(where)
        if isinstance(where, Token):
            return (where.line or 1, where.column or 1)
        entry = self._positions.get(id(where))
        if entry is not None and entry[0] is where:
            return entry[1], entry[2]
        return (1, 1)

    def remember(self, node: object, line: int, column: int) -> None:
        self._positions[id(node)] = (node, line, column)

    def set_scope(self, node: Node, names: Iterable[str]) -> None:
        self._scopes[id(node)] = (node, frozenset(names))

    def scope(self, node: Node) -> frozenset[str]:
        """The variables in scope after `node` (SPARQL §18.2.1), recorded when `node` was built."""
        entry = self._scopes.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else frozenset()

    # ----------------------------------------------------------------- [1]-[28] queries

    def query_unit(self, children: list[Any]) -> Any:
        return children[0]

    def update_unit(self, children: list[Any]) -> None:
        return None

    def query(self, children: list[Any]) -> Any:
        prologue, form, values = children
        return self.finish_query(form, prologue, values)

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        """Attach the prologue and the trailing VALUES ([2] keeps them outside the query form)."""
        if values is not None and isinstance(form, SelectQuery):
            names = frozenset(v.name for v in values.vars)
            self.check_assigned(form.projection, names, "the trailing VALUES clause")
        return replace(form, prologue=prologue, values=values)

    def prologue(self, children: list[Any]) -> Prologue:
        base = None
        prefixes = []
        for child in children:
            if isinstance(child, _BaseDecl):
                base = child.iri
            else:
                prefixes.append(child)
        return Prologue(base, tuple(prefixes))

    def base_decl(self, children: list[Token]) -> _BaseDecl:
        self.base = resolve_iri(self.base, self._iriref_text(children[0]))
        return _BaseDecl(self.base)

    def prefix_decl(self, children: list[Token]) -> tuple[str, str]:
        namespace, reference = children
        iri = resolve_iri(self.base, self._iriref_text(reference))
        self.prefixes[str(namespace)[:-1]] = iri
        return (str(namespace)[:-1], iri)

    def select_query(self, children: list[Any]) -> Node:
        return self.build_select(QueryParts.collect(children))

    def build_select(self, parts: QueryParts) -> SelectQuery:
        """A SelectQuery from its parts, after the projection rules (§18.2.4.1, §11.4)."""
        clause, where = parts.select, parts.where
        assert clause is not None and where is not None
        self.check_projection(clause, where, parts.modifiers)
        return SelectQuery(
            projection=clause.projection,
            where=where,
            distinct=clause.distinct,
            reduced=clause.reduced,
            dataset=tuple(parts.dataset),
            modifiers=parts.modifiers,
            values=parts.values,
        )

    def sub_select(self, children: list[Any]) -> SubSelect:
        parts = QueryParts.collect(children)
        query = self.build_select(parts)
        assert parts.where is not None
        node = SubSelect(query)
        projected = (p.var.name for p in query.projection) if query.projection else self.scope(parts.where)
        self.set_scope(node, projected)
        return node

    @v_args(meta=True)
    def select_clause(self, meta: Meta, children: list[Any]) -> SelectClause:
        keywords = {terminal_name(c): c for c in children if isinstance(c, Token)}
        items = [self._projection(c) for c in children if not isinstance(c, Token)]
        self._check_projection_names(items)
        star = keywords.get("STAR")
        return SelectClause(
            projection=None if star is not None else tuple(items),
            distinct="DISTINCT" in keywords,
            reduced="REDUCED" in keywords,
            star=self.position(star) if star is not None else None,
        )

    @staticmethod
    def _projection(item: Var | Projection) -> Projection:
        return item if isinstance(item, Projection) else Projection(item)

    def select_expression(self, children: list[Any]) -> Projection:
        expr, var = children
        return Projection(var, expr)

    def construct_query(self, children: list[Any]) -> ConstructQuery:
        parts = QueryParts.collect(children)
        template = parts.template or ()
        where = parts.where
        if where is None:  # CONSTRUCT WHERE { triples }: the template is the pattern
            bgp = BGP(template)
            self.set_scope(bgp, (name for t in template for name in _triple_vars(t)))
            where = self._group((bgp,) if template else ())
        return ConstructQuery(template, where, tuple(parts.dataset), parts.modifiers)

    def describe_query(self, children: list[Any]) -> DescribeQuery:
        parts = QueryParts.collect(children)
        targets = None if parts.star else tuple(parts.targets)
        return DescribeQuery(targets, parts.where, tuple(parts.dataset), parts.modifiers)

    def ask_query(self, children: list[Any]) -> AskQuery:
        parts = QueryParts.collect(children)
        assert parts.where is not None
        return AskQuery(parts.where, tuple(parts.dataset), parts.modifiers)

    def dataset_clause(self, children: list[DatasetClause]) -> DatasetClause:
        return children[0]

    def default_graph_clause(self, children: list[IRI]) -> DatasetClause:
        return DatasetClause(children[0])

    def named_graph_clause(self, children: list[Any]) -> DatasetClause:
        return DatasetClause(children[-1], named=True)

    def where_clause(self, children: list[GroupPattern]) -> GroupPattern:
        return children[0]

    def solution_modifier(self, children: list[Any]) -> SolutionModifiers:
        values: dict[str, Any] = {}
        for child in children:
            if isinstance(child, _GroupBy):
                values["group_by"] = child.conditions
            elif isinstance(child, _Having):
                values["having"] = child.conditions
            elif isinstance(child, _OrderBy):
                values["order_by"] = child.conditions
            else:
                values.update(child)
        return SolutionModifiers(**values)

    def group_clause(self, children: list[GroupCondition]) -> _GroupBy:
        return _GroupBy(tuple(children))

    def group_condition(self, children: list[Any]) -> GroupCondition:
        self.reject_aggregates(children[0], "GROUP BY")
        return GroupCondition(children[0], children[1] if len(children) > 1 else None)

    def having_clause(self, children: list[Expr]) -> _Having:
        return _Having(tuple(children))

    def order_clause(self, children: list[OrderCondition]) -> _OrderBy:
        return _OrderBy(tuple(children))

    def order_condition(self, children: list[Any]) -> OrderCondition:
        if isinstance(children[0], Token):
            return OrderCondition(children[1], descending=terminal_name(children[0]) == "DESC")
        return OrderCondition(children[0])

    def limit_offset_clauses(self, children: list[Any]) -> dict[str, int]:
        return {("limit" if isinstance(c, _Limit) else "offset"): c.value for c in children}

    def limit_clause(self, children: list[int]) -> _Limit:
        return _Limit(children[0])

    def offset_clause(self, children: list[int]) -> _Offset:
        return _Offset(children[0])

    @v_args(meta=True)
    def values_clause(self, meta: Meta, children: list[InlineData]) -> InlineData | None:
        """The data, positioned at its VALUES keyword so a dialect that refuses it can say where."""
        if not children:
            return None
        self.remember(children[0], *_position_of(meta))
        return children[0]

    # ----------------------------------------------------------------- [29]-[52] updates (validated only)

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

    def _reject_in_span(self, occurrences: list[_Occurrence], meta: Meta, message: str) -> None:
        found = [o for o in occurrences if meta.start_pos <= o.start < meta.end_pos]
        if found:
            first = min(found, key=lambda o: o.start)
            raise StaticSemanticsError(message, first.line, first.column)

    def _ignore(self, children: list[Any]) -> None:
        return None

    update = load = clear = drop = create = add = move = copy = modify = _ignore
    insert_clause = using_clause = graph_or_default = graph_ref = graph_ref_all = _ignore
    quad_pattern = quad_data = quads = quads_not_triples = _ignore

    def triples_template(self, children: list[tuple[TriplePattern, ...]]) -> tuple[TriplePattern, ...]:
        return tuple(triple for triples in children for triple in triples)

    # ----------------------------------------------------------------- [53]-[72] graph patterns

    def group_graph_pattern(self, children: list[Any]) -> GroupPattern:
        content = children[0]
        return self._group((content,) if isinstance(content, SubSelect) else content.items)

    def _group(self, elements: tuple[Node, ...]) -> GroupPattern:
        group = GroupPattern(elements)
        self.set_scope(group, (name for element in elements for name in self.scope(element)))
        return group

    def group_graph_pattern_sub(self, children: list[Node]) -> _Elements:
        elements = tuple(children)
        self.check_group(elements)
        self._register_bgp_groups(elements)
        return _Elements(elements)

    @v_args(meta=True)
    def triples_block(self, meta: Meta, children: list[tuple[TriplePattern, ...]]) -> BGP:
        bgp = BGP(tuple(triple for triples in children for triple in triples))
        self.set_scope(bgp, (name for triple in bgp.triples for name in _triple_vars(triple)))
        self._spans[id(bgp)] = (bgp, meta.start_pos, meta.end_pos)
        return bgp

    def optional_graph_pattern(self, children: list[GroupPattern]) -> OptionalPattern:
        node = OptionalPattern(children[0])
        self.set_scope(node, self.scope(children[0]))
        return node

    def graph_graph_pattern(self, children: list[Any]) -> GraphGraphPattern:
        name, pattern = children
        node = GraphGraphPattern(name, pattern)
        self.set_scope(node, self.scope(pattern) | ({name.name} if isinstance(name, Var) else set()))
        return node

    def service_graph_pattern(self, children: list[Any]) -> ServicePattern:
        *silent, name, pattern = children
        node = ServicePattern(name, pattern, silent=bool(silent))
        self.set_scope(node, self.scope(pattern))
        return node

    def bind(self, children: list[Any]) -> Bind:
        expr, var = children
        self.reject_aggregates(expr, "BIND")
        node = Bind(expr, var)
        self.set_scope(node, {var.name})
        return node

    def inline_data(self, children: list[InlineData]) -> InlineData:
        return children[0]

    def inline_data_one_var(self, children: list[Any]) -> InlineData:
        var, *values = children
        return self._inline_data((var,), tuple((value,) for value in values))

    def inline_data_full(self, children: list[Any]) -> InlineData:
        variables = tuple(c for c in children if isinstance(c, Var))
        rows = [c for c in children if isinstance(c, _Row)]
        for row in rows:
            if len(row.values) != len(variables):
                message = f"VALUES row has {len(row.values)} value(s) for {len(variables)} variable(s)"
                raise StaticSemanticsError(message, row.line, row.column)
        return self._inline_data(variables, tuple(row.values for row in rows))

    def _inline_data(
        self, variables: tuple[Var, ...], rows: tuple[tuple[Term | None, ...], ...]
    ) -> InlineData:
        node = InlineData(variables, rows)
        self.set_scope(node, (var.name for var in variables))
        return node

    @v_args(meta=True)
    def data_block_row(self, meta: Meta, children: list[Any]) -> _Row:
        values = tuple(c for c in children if not isinstance(c, Token))
        return _Row(values, *_position_of(meta))

    def data_block_value(self, children: list[Any]) -> Term | None:
        value = children[0]
        return None if isinstance(value, Token) else value  # UNDEF

    def minus_graph_pattern(self, children: list[GroupPattern]) -> MinusPattern:
        return MinusPattern(children[0])  # MINUS binds nothing in the enclosing group

    def group_or_union_graph_pattern(self, children: list[GroupPattern]) -> GroupPattern | UnionPattern:
        if len(children) == 1:
            return children[0]
        node = UnionPattern(tuple(children))
        self.set_scope(node, (name for branch in children for name in self.scope(branch)))
        return node

    def filter(self, children: list[Expr]) -> Filter:
        self.reject_aggregates(children[0], "FILTER")
        return Filter(children[0])

    def function_call(self, children: list[Any]) -> FunctionCall:
        name, args = children
        return FunctionCall(name, args.args, args.distinct)

    def arg_list(self, children: list[Any]) -> _Args:
        distinct = any(isinstance(c, Token) and terminal_name(c) == "DISTINCT" for c in children)
        return _Args(tuple(c for c in children if not isinstance(c, Token)), distinct)

    def expression_list(self, children: list[Any]) -> tuple[Expr, ...]:
        return tuple(c for c in children if not isinstance(c, Token))

    # ----------------------------------------------------------------- [73]-[109] triples

    def construct_template(self, children: list[tuple[TriplePattern, ...]]) -> _Template:
        return _Template(children[0] if children else ())

    construct_triples = triples_template

    def triples_same_subject(self, children: list[Any]) -> tuple[TriplePattern, ...]:
        subject, properties = children
        if isinstance(subject, TriplesNode):
            return subject.triples + self._expand(subject.node, properties)
        return self._expand(subject, properties)

    triples_same_subject_path = triples_same_subject

    def _expand(
        self, subject: VarOrTerm, properties: list[tuple[Any, tuple[Any, ...]]]
    ) -> tuple[TriplePattern, ...]:
        """Triples of a property list, each followed by those of its `[ ... ]` or collection object."""
        triples: list[TriplePattern] = []
        for verb, objects in properties:
            for obj in objects:
                if isinstance(obj, TriplesNode):
                    triples.append(TriplePattern(subject, verb, obj.node))
                    triples.extend(obj.triples)
                else:
                    triples.append(TriplePattern(subject, verb, obj))
        return tuple(triples)

    def property_list(self, children: list[Any]) -> list[tuple[Any, tuple[Any, ...]]]:
        return children[0] if children else []

    property_list_path = property_list

    def property_list_not_empty(self, children: list[Any]) -> list[tuple[Any, tuple[Any, ...]]]:
        return list(zip(children[0::2], children[1::2], strict=True))

    property_list_path_not_empty = property_list_not_empty

    def verb(self, children: list[Any]) -> Var | IRI:
        return IRI(RDF_TYPE) if isinstance(children[0], Token) else children[0]

    def object_list(self, children: list[Any]) -> tuple[Any, ...]:
        return tuple(children)

    object_list_path = object_list

    # ----------------------------------------------------------------- [88]-[97] property paths

    def path_alternative(self, children: list[Path]) -> PathAlternative:
        return PathAlternative(tuple(children))

    def path_sequence(self, children: list[Path]) -> PathSequence:
        return PathSequence(tuple(children))

    def path_elt(self, children: list[Any]) -> PathMod:
        return PathMod(children[0], children[1])

    def path_elt_or_inverse(self, children: list[Any]) -> PathInverse:
        return PathInverse(children[-1])

    def path_mod(self, children: list[Token]) -> PathModifier:
        return PathModifier(str(children[0]))

    def path_primary(self, children: list[Any]) -> Path:
        return IRI(RDF_TYPE) if isinstance(children[0], Token) else children[0]

    def path_negated_property_set(self, children: list[tuple[IRI, bool]]) -> PathNegatedSet:
        forward = tuple(iri for iri, inverse in children if not inverse)
        return PathNegatedSet(forward, tuple(iri for iri, inverse in children if inverse))

    def path_one_in_property_set(self, children: list[Any]) -> tuple[IRI, bool]:
        target = children[-1]
        iri = IRI(RDF_TYPE) if isinstance(target, Token) else target
        return (iri, len(children) == 2)

    def integer(self, children: list[Token]) -> int:
        return int(children[0])

    @v_args(meta=True)
    def blank_node_property_list(self, meta: Meta, children: list[Any]) -> TriplesNode:
        node = self._anonymous(meta)
        return TriplesNode(node, self._expand(node, children[0]))

    blank_node_property_list_path = blank_node_property_list

    @v_args(meta=True)
    def collection(self, meta: Meta, children: list[Any]) -> TriplesNode:
        """`( a b )` is `_:c0 rdf:first a ; rdf:rest _:c1 . _:c1 rdf:first b ; rdf:rest rdf:nil`."""
        nodes = [self._anonymous(meta) for _ in children]
        triples: list[TriplePattern] = []
        for index, (node, item) in enumerate(zip(nodes, children, strict=True)):
            rest: BNode | IRI = nodes[index + 1] if index + 1 < len(nodes) else IRI(RDF_NIL)
            member = item.node if isinstance(item, TriplesNode) else item
            triples.append(TriplePattern(node, IRI(RDF_FIRST), member))
            triples.extend(item.triples if isinstance(item, TriplesNode) else ())
            triples.append(TriplePattern(node, IRI(RDF_REST), rest))
        return TriplesNode(nodes[0], tuple(triples))

    collection_path = collection

    def _anonymous(self, meta: Meta) -> BNode:
        node = self.new_blank_node()
        line, column = _position_of(meta)
        self._blank_nodes.append(_Occurrence(node.label, meta.start_pos, line, column))
        return node

    def var(self, children: list[Token]) -> Var:
        token = children[0]
        var = Var(str(token)[1:])
        self.remember(var, token.line or 1, token.column or 1)
        self._vars.append(_Occurrence(var.name, token.start_pos or 0, token.line or 1, token.column or 1))
        return var

    def graph_term(self, children: list[Any]) -> Term:
        return IRI(RDF_NIL) if isinstance(children[0], Token) else children[0]

    def blank_node(self, children: list[Token]) -> BNode:
        token = children[0]
        if terminal_name(token) == "ANON":
            node = self.new_blank_node()
        else:
            node = BNode(str(token)[2:])
            self._labels.append(
                _Occurrence(node.label, token.start_pos or 0, token.line or 1, token.column or 1)
            )
        self._blank_nodes.append(
            _Occurrence(node.label, token.start_pos or 0, token.line or 1, token.column or 1)
        )
        return node

    # ----------------------------------------------------------------- [110]-[138] expressions and terms

    def conditional_or_expression(self, children: list[Expr]) -> Expr:
        return self._fold("||", children)

    def conditional_and_expression(self, children: list[Expr]) -> Expr:
        return self._fold("&&", children)

    @staticmethod
    def _fold(op: str, operands: list[Expr]) -> Expr:
        result = operands[0]
        for operand in operands[1:]:
            result = BinaryOp(op, result, operand)
        return result

    def relational_expression(self, children: list[Any]) -> Expr:
        left, *rest = children
        if isinstance(rest[-1], tuple):  # IN / NOT IN ExpressionList
            return In(left, rest[-1], negated=len(rest) == 3)
        return BinaryOp(str(rest[0]), left, rest[1])

    def additive_expression(self, children: list[Any]) -> Expr:
        """Left-associative + and -. A signed literal right after an operand (`?a -2 * ?b`) is [116]'s
        tail: its sign is the operator and it starts a product of its own (`?a - (2 * ?b)`)."""
        terms: list[tuple[str, Expr]] = []
        index = 1
        while index < len(children):
            item = children[index]
            if isinstance(item, Token) and str(item) in "+-":
                terms.append((str(item), children[index + 1]))
                index += 2
            elif isinstance(item, Token):  # '*' or '/' inside a signed-literal tail
                op, term = terms[-1]
                terms[-1] = (op, BinaryOp(str(item), term, children[index + 1]))
                index += 2
            else:
                terms.append((item.lexical[0], replace(item, lexical=item.lexical[1:])))
                index += 1
        result: Expr = children[0]
        for op, term in terms:
            result = BinaryOp(op, result, term)
        return result

    def multiplicative_expression(self, children: list[Any]) -> Expr:
        result: Expr = children[0]
        for op, operand in zip(children[1::2], children[2::2], strict=True):
            result = BinaryOp(str(op), result, operand)
        return result

    def unary_expression(self, children: list[Any]) -> UnaryOp:
        return UnaryOp(str(children[0]), children[1])

    def built_in_call(self, children: list[Any]) -> Expr:
        head = children[0]
        if not isinstance(head, Token):
            return cast(Expr, head)  # aggregate, REGEX, SUBSTR, REPLACE, EXISTS, NOT EXISTS
        args: list[Expr] = []
        for child in children[1:]:
            if isinstance(child, tuple):
                args.extend(child)  # CONCAT / COALESCE ExpressionList
            elif not isinstance(child, Token):  # NIL of BNODE(), RAND(), NOW() ...
                args.append(child)
        return FunctionCall(self.builtin_name(head), tuple(args))

    @staticmethod
    def builtin_name(keyword: Token) -> str:
        """The upper-case name of a built-in (`isURI` -> "ISIRI", `URI` -> "IRI")."""
        name = str(keyword).upper()
        return _BUILTIN_ALIASES.get(name, name)

    def _named_call(self, children: list[Any]) -> FunctionCall:
        return FunctionCall(self.builtin_name(children[0]), tuple(children[1:]))

    regex_expression = substring_expression = str_replace_expression = _named_call

    def exists_func(self, children: list[GroupPattern]) -> Exists:
        return Exists(children[0])

    def not_exists_func(self, children: list[GroupPattern]) -> Exists:
        return Exists(children[0], negated=True)

    def aggregate(self, children: list[Any]) -> Aggregate:
        name = children[0]
        tokens = {terminal_name(c) for c in children[1:] if isinstance(c, Token)}
        separator = next((c for c in children[1:] if isinstance(c, str) and not isinstance(c, Token)), None)
        expr = cast("Expr | None", next((c for c in children[1:] if isinstance(c, Node)), None))
        node = Aggregate(str(name).upper(), expr, distinct="DISTINCT" in tokens, separator=separator)
        self.remember(node, name.line or 1, name.column or 1)
        return node

    def iri_or_function(self, children: list[Any]) -> IRI | FunctionCall:
        if len(children) == 1:
            return children[0]  # type: ignore[no-any-return]
        return FunctionCall(children[0], children[1].args, children[1].distinct)

    def rdf_literal(self, children: list[Any]) -> Literal:
        lexical = children[0]
        if len(children) == 1:
            return Literal(lexical)
        if isinstance(children[1], Token):  # LANGTAG
            return Literal(lexical, RDF_LANGSTRING, str(children[1])[1:])
        return Literal(lexical, children[1].value)

    def numeric_literal_unsigned(self, children: list[Token]) -> Literal:
        token = children[0]
        return Literal(str(token), _NUMERIC_TYPES[terminal_name(token).split("_")[0]])

    numeric_literal_positive = numeric_literal_negative = numeric_literal_unsigned

    def boolean_literal(self, children: list[Token]) -> Literal:
        return Literal(str(children[0]).lower(), XSD_BOOLEAN)

    def string(self, children: list[Token]) -> str:
        token = children[0]
        quote = 3 if str(token)[:3] in ('"""', "'''") else 1
        try:
            return unescape(str(token)[quote:-quote])
        except ValueError as error:
            raise self.fail(str(error), token) from None

    def iri(self, children: list[Token]) -> IRI:
        token = children[0]
        if terminal_name(token) == "IRIREF":
            return IRI(resolve_iri(self.base, self._iriref_text(token)))
        prefix, _, local = str(token).partition(":")
        if prefix not in self.prefixes:
            raise self.fail(f"undefined prefix '{prefix}:'", token)
        return IRI(self.prefixes[prefix] + _LOCAL_ESCAPE.sub(r"\1", local))

    def _iriref_text(self, token: Token) -> str:
        try:
            return unescape(str(token)[1:-1])
        except ValueError as error:
            raise self.fail(str(error), token) from None

    # ----------------------------------------------------------------- static checks

    def check_group(self, elements: Sequence[Node]) -> None:
        """§18.2.1: the variable of BIND must not be in scope in the group before the BIND."""
        in_scope: set[str] = set()
        for element in elements:
            if isinstance(element, Bind) and element.var.name in in_scope:
                raise self.fail(f"BIND variable ?{element.var.name} is already in scope", element.var)
            in_scope |= self.scope(element)

    def _check_projection_names(self, items: Sequence[Projection]) -> None:
        """§18.2.4.1: the variable of `(expr AS ?v)` is new: not projected elsewhere in the clause."""
        for item in items:
            if item.expr is not None and sum(other.var.name == item.var.name for other in items) > 1:
                raise self.fail(f"?{item.var.name} is projected more than once", item.var)

    def check_assigned(
        self, projection: Sequence[Projection] | None, in_scope: frozenset[str], where: str
    ) -> None:
        """§18.2.1: the variable of `(expr AS ?v)` must not be in scope already (`where` says where)."""
        for item in projection or ():
            if item.expr is not None and item.var.name in in_scope:
                raise self.fail(f"?{item.var.name} is already in scope in {where}", item.var)

    def check_projection(
        self, clause: SelectClause, where: GroupPattern, modifiers: SolutionModifiers
    ) -> None:
        """§18.2.4.1 and §11.4: `(expr AS ?v)` needs ?v out of scope of WHERE; with GROUP BY or
        aggregates, `*` is not allowed and plain projected variables must be grouping keys."""
        self.check_assigned(clause.projection, self.scope(where), "the WHERE clause")
        if self._is_aggregated(clause, modifiers):
            self._check_grouped_projection(clause, modifiers)

    @staticmethod
    def _is_aggregated(clause: SelectClause, modifiers: SolutionModifiers) -> bool:
        exprs: list[Node] = [p.expr for p in clause.projection or () if p.expr is not None]
        exprs += [*modifiers.having, *(c.expr for c in modifiers.order_by)]
        return bool(modifiers.group_by) or _has_aggregate(exprs)

    def _check_grouped_projection(self, clause: SelectClause, modifiers: SolutionModifiers) -> None:
        if clause.projection is None:
            assert clause.star is not None
            raise StaticSemanticsError("SELECT * is not allowed with GROUP BY or aggregates", *clause.star)
        allowed = _group_keys(modifiers.group_by)
        for item in clause.projection:
            if item.expr is None and item.var.name not in allowed:
                raise self.fail(f"?{item.var.name} is neither a GROUP BY key nor aggregated", item.var)
            for node in iter_expression(item.expr, into_aggregates=False) if item.expr is not None else ():
                if isinstance(node, Var) and node.name not in allowed:
                    raise self.fail(f"?{node.name} is neither a GROUP BY key nor aggregated", node)
            allowed.add(item.var.name)

    def reject_aggregates(self, expr: Node, clause: str) -> None:
        """Aggregates belong to SELECT, HAVING and ORDER BY only."""
        aggregate = _first_aggregate(expr)
        if aggregate is not None:
            raise self.fail(f"aggregate {aggregate.name} is not allowed in {clause}", aggregate)

    def _register_bgp_groups(self, elements: Sequence[Node]) -> None:
        """Record the basic graph patterns of a group for the blank-node label rule. As in Oxigraph,
        triples blocks separated only by FILTER, BIND or VALUES count as one BGP; nested groups,
        OPTIONAL, MINUS, UNION, GRAPH, SERVICE and sub-queries start new ones."""
        group = None
        for element in elements:
            if isinstance(element, BGP):
                if group is None:
                    group = self._bgp_groups
                    self._bgp_groups += 1
                _, start, end = self._spans[id(element)]
                self._bgp_spans.append((start, end, group))
            elif not isinstance(element, Filter | Bind | InlineData):
                group = None

    def _check_blank_node_labels(self) -> None:
        """§19.6: a blank-node label names one node in one BGP of a query or one operation of an update."""
        reused = _first_reuse(self._labels, self._bgp_spans)
        if reused is not None:
            raise StaticSemanticsError(
                f"blank node _:{reused.name} is used in more than one basic graph pattern",
                reused.line,
                reused.column,
            )
        reused = _first_reuse(self._labels, self._operation_spans)
        if reused is not None:
            raise StaticSemanticsError(
                f"blank node _:{reused.name} is used in more than one update operation",
                reused.line,
                reused.column,
            )
