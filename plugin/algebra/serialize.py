"""SPARQL 1.1 text from the syntax tree of `rsep.plugin.algebra.sparql`.

`to_sparql(node)` prints any node (a query, a group pattern or one of its elements, an
expression, a path, a term) as text that `rsep.grammar` parses back into an equal tree and that
Oxigraph accepts: IRIs in full (`<...>`, no prefixes needed), literals escaped as in
`rsep.plugin.algebra.terms`, parentheses wherever precedence or associativity would otherwise change the
tree (`(a || b) && c`, `a - (b - c)`, `(<p>/<q>)*`).

The printer is iterative: each node expands into a list of parts (text, layout marks, nodes, or
deferred renderings), and one loop expands them with an explicit stack, so a thousand nested groups
or a long `||` chain print without hitting the recursion limit.

Extension nodes (the event algebra's elements) and `PathNested` have no SPARQL 1.1 syntax: they
raise ValueError, to be compiled away before printing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Union

from rsep.plugin.algebra.sparql import (
    AGGREGATES as _AGGREGATES,
)
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    RDF_TYPE,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    Aggregate,
    AskQuery,
    BinaryOp,
    Bind,
    BNode,
    ConstructQuery,
    DatasetClause,
    DescribeQuery,
    Exists,
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
    PathAlternative,
    PathInverse,
    PathMod,
    PathNegatedSet,
    PathNested,
    PathSequence,
    Projection,
    Prologue,
    SelectQuery,
    ServicePattern,
    SolutionModifiers,
    SubSelect,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
)
from rsep.plugin.algebra.sparql import (
    BUILTIN_ARITY as _BUILTIN_ARITY,
)
from rsep.plugin.algebra.sparql import (
    UNBOUNDED_ARITY as _UNBOUNDED,
)
from rsep.plugin.algebra.terms import escape_string


class _Layout(Enum):
    NEWLINE = "newline"
    INDENT = "indent"
    DEDENT = "dedent"


NEWLINE, INDENT, DEDENT = _Layout.NEWLINE, _Layout.INDENT, _Layout.DEDENT


@dataclass(frozen=True, slots=True)
class _Deferred:
    """A rendering that depends on context (e.g. an operand in parentheses), expanded when reached."""

    render: Callable[[Any], list[Part]]
    value: Any


Part = Union[str, Node, _Layout, _Deferred]


_MAX_INDENT = 20  # deeper groups print flush at this depth rather than with quadratic indentation


def to_sparql(node: Node) -> str:
    """SPARQL 1.1 text for `node`; ValueError for trees SPARQL 1.1 cannot express."""
    out: list[str] = []
    depth = 0
    stack: list[Part] = [node]
    while stack:
        part = stack.pop()
        if isinstance(part, str):
            out.append(part)
        elif part is NEWLINE:
            out.append("\n" + "  " * min(depth, _MAX_INDENT))
        elif isinstance(part, _Layout):
            depth += 1 if part is INDENT else -1
        elif isinstance(part, _Deferred):
            stack.extend(reversed(part.render(part.value)))
        else:
            stack.extend(reversed(_parts(part)))
    return "".join(out)


def _parts(node: Node) -> list[Part]:
    for kind in type(node).__mro__:
        render = _RENDERERS.get(kind)
        if render is not None:
            return render(node)
    raise ValueError(f"{type(node).__name__} has no SPARQL 1.1 syntax; compile it to SPARQL nodes first")


def _join(items: Sequence[Part], separator: Part) -> list[Part]:
    parts: list[Part] = []
    for index, item in enumerate(items):
        if index:
            parts.append(separator)
        parts.append(item)
    return parts


# --------------------------------------------------------------------------- terms

_IRI_UNSAFE = re.compile(r'[\x00-\x20<>"{}|^`\\]')
# VARNAME [166] and BLANK_NODE_LABEL [142] of the W3C grammar.
_PN_CHARS_U = (
    "A-Za-z_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d\u2070-\u218f"
    "\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_VARNAME = re.compile(f"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*")
_LABEL = re.compile(f"[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?")
_BARE_NUMBERS = {
    XSD_INTEGER: re.compile(r"[+-]?[0-9]+"),
    XSD_DECIMAL: re.compile(r"[+-]?[0-9]*\.[0-9]+"),
    XSD_DOUBLE: re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+"),
}


def _iri(node: IRI) -> list[Part]:
    """`<iri>`; characters IRIREF cannot hold are written as \\u escapes (which the parser decodes)."""
    return ["<" + _IRI_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04X}", node.value) + ">"]


def _is_bare_number(node: Literal) -> bool:
    pattern = _BARE_NUMBERS.get(node.datatype)
    return pattern is not None and pattern.fullmatch(node.lexical) is not None


def _literal(node: Literal) -> list[Part]:
    if _is_bare_number(node) or (node.datatype == XSD_BOOLEAN and node.lexical in ("true", "false")):
        return [node.lexical]
    text = f'"{escape_string(node.lexical)}"'
    if node.language is not None:
        return [f"{text}@{node.language}"]
    if node.datatype == XSD_STRING:
        return [text]
    return [text, "^^", IRI(node.datatype)]


def _var(node: Var) -> list[Part]:
    if not _VARNAME.fullmatch(node.name):
        raise ValueError(f"{node.name!r} is not a SPARQL variable name")
    return ["?" + node.name]


def _bnode(node: BNode) -> list[Part]:
    if not _LABEL.fullmatch(node.label):
        raise ValueError(f"{node.label!r} is not a SPARQL blank-node label")
    return ["_:" + node.label]


# --------------------------------------------------------------------------- property paths [88]-[96]

_PATH_ALTERNATIVE, _PATH_SEQUENCE, _PATH_INVERSE, _PATH_MOD, _PATH_PRIMARY = range(5)


def _path_level(path: Node) -> int:
    if isinstance(path, PathAlternative):
        return _PATH_ALTERNATIVE
    if isinstance(path, PathSequence):
        return _PATH_SEQUENCE
    if isinstance(path, PathInverse):
        return _PATH_INVERSE
    return _PATH_MOD if isinstance(path, PathMod) else _PATH_PRIMARY


def _path_operand(path: Node, minimum: int) -> Part:
    """A sub-path, in parentheses unless it binds at least as tightly as `minimum`."""
    return path if _path_level(path) >= minimum else _Deferred(_parenthesized, path)


def _verb(node: Node) -> Part:
    """rdf:type reads as `a` where a predicate or path primary stands."""
    return "a" if isinstance(node, IRI) and node.value == RDF_TYPE else node


def _path_alternative(node: PathAlternative) -> list[Part]:
    return _join([_path_operand(option, _PATH_SEQUENCE) for option in node.options], " | ")


def _path_sequence(node: PathSequence) -> list[Part]:
    return _join([_path_operand(step, _PATH_INVERSE) for step in node.steps], " / ")


def _path_inverse(node: PathInverse) -> list[Part]:
    return ["^", _verb(node.path) if isinstance(node.path, IRI) else _path_operand(node.path, _PATH_MOD)]


def _path_mod(node: PathMod) -> list[Part]:
    inner = _verb(node.path) if isinstance(node.path, IRI) else _path_operand(node.path, _PATH_PRIMARY)
    return [inner, node.modifier.value]


def _path_negated_set(node: PathNegatedSet) -> list[Part]:
    members: list[Part] = [_verb(iri) for iri in node.forward]
    members += [_Deferred(lambda iri: ["^", _verb(iri)], iri) for iri in node.inverse]
    if not members:
        raise ValueError("an empty negated property set !() has no SPARQL syntax")
    return ["!", *members] if len(members) == 1 else ["!(", *_join(members, " | "), ")"]


def _path_nested(node: PathNested) -> list[Part]:
    raise ValueError("PathNested (nSPARQL path[test]) is not SPARQL 1.1; compile it away before printing")


# --------------------------------------------------------------------------- expressions [110]-[131]

_OR, _AND, _RELATIONAL, _ADDITIVE, _MULTIPLICATIVE, _UNARY, _PRIMARY = range(7)
_BINARY_LEVELS = {
    "||": _OR,
    "&&": _AND,
    **{op: _RELATIONAL for op in ("=", "!=", "<", ">", "<=", ">=")},
    "+": _ADDITIVE,
    "-": _ADDITIVE,
    "*": _MULTIPLICATIVE,
    "/": _MULTIPLICATIVE,
}


def _level(expr: Node) -> int:
    if isinstance(expr, BinaryOp):
        return _BINARY_LEVELS[expr.op]
    if isinstance(expr, In):
        return _RELATIONAL
    return _UNARY if isinstance(expr, UnaryOp) else _PRIMARY


def _operand(expr: Node, minimum: int) -> Part:
    """An operand, in parentheses unless it binds at least as tightly as `minimum`."""
    return expr if _level(expr) >= minimum else _Deferred(_parenthesized, expr)


def _parenthesized(node: Node) -> list[Part]:
    return ["(", node, ")"]


def _binary(node: BinaryOp) -> list[Part]:
    """Left-associative operators keep a same-level left operand bare; relational ones (which the
    grammar does not chain) and every same-level right operand get parentheses."""
    level = _BINARY_LEVELS.get(node.op)
    if level is None:
        raise ValueError(f"unknown binary operator {node.op!r}")
    left_minimum = level + 1 if level == _RELATIONAL else level
    return [_operand(node.left, left_minimum), f" {node.op} ", _operand(node.right, level + 1)]


def _unary(node: UnaryOp) -> list[Part]:
    """[118] takes a primary expression; a space keeps `- 2` from reading as the literal -2."""
    if node.op not in ("!", "+", "-"):
        raise ValueError(f"unknown unary operator {node.op!r}")
    spaced = isinstance(node.operand, Literal) and _is_bare_number(node.operand)
    return [node.op + (" " if spaced else ""), _operand(node.operand, _PRIMARY)]


def _in(node: In) -> list[Part]:
    keyword = " NOT IN (" if node.negated else " IN ("
    return [_operand(node.expr, _ADDITIVE), keyword, *_join(node.options, ", "), ")"]


def _function_call(node: FunctionCall) -> list[Part]:
    if isinstance(node.name, IRI):
        distinct: list[Part] = ["DISTINCT "] if node.distinct else []
        return [node.name, "(", *distinct, *_join(node.args, ", "), ")"]
    name = node.name.upper()
    low, high = _BUILTIN_ARITY.get(name, (None, None))
    if low is None or high is None:
        raise ValueError(f"unknown built-in function {node.name!r}")
    if len(node.args) < low or (high != _UNBOUNDED and len(node.args) > high):
        raise ValueError(
            f"{name} takes {low}..{high if high != _UNBOUNDED else 'n'} arguments, not {len(node.args)}"
        )
    if name == "BOUND" and not isinstance(node.args[0], Var):
        raise ValueError("BOUND takes a variable")
    return [name, "(", *_join(node.args, ", "), ")"]


def _exists(node: Exists) -> list[Part]:
    return ["NOT EXISTS " if node.negated else "EXISTS ", node.pattern]


def _aggregate(node: Aggregate) -> list[Part]:
    if node.name not in _AGGREGATES:
        raise ValueError(f"unknown aggregate {node.name!r}")
    if node.expr is None and node.name != "COUNT":
        raise ValueError(f"{node.name} needs an argument (only COUNT has a * form)")
    parts: list[Part] = [node.name, "(", "DISTINCT " if node.distinct else "", node.expr or "*"]
    if node.separator is not None:
        parts.append(f'; SEPARATOR="{escape_string(node.separator)}"')
    return [*parts, ")"]


# --------------------------------------------------------------------------- patterns [53]-[83]


def _group(node: GroupPattern) -> list[Part]:
    if not node.elements:
        return ["{ }"]
    if len(node.elements) == 1 and isinstance(node.elements[0], SubSelect):
        return ["{", INDENT, NEWLINE, _Deferred(_sub_query, node.elements[0].query), DEDENT, NEWLINE, "}"]
    parts: list[Part] = ["{", INDENT]
    for element in node.elements:
        parts += [NEWLINE, element]
    return [*parts, DEDENT, NEWLINE, "}"]


def _triples(triples: Sequence[TriplePattern]) -> list[Part]:
    """Triples, with `;` and `,` for runs that share the subject (and predicate), each run ending in `.`."""
    parts: list[Part] = []
    previous: TriplePattern | None = None
    for triple in triples:
        if previous is not None and previous.subject == triple.subject:
            if previous.predicate == triple.predicate:
                parts += [", ", triple.object]
            else:
                parts += [" ;", INDENT, NEWLINE, _verb(triple.predicate), " ", triple.object, DEDENT]
        else:
            if previous is not None:
                parts += [" .", NEWLINE]
            parts += [triple.subject, " ", _verb(triple.predicate), " ", triple.object]
        previous = triple
    return [*parts, " ."] if parts else []


def _bgp(node: BGP) -> list[Part]:
    return _triples(node.triples)


def _triple(node: TriplePattern) -> list[Part]:
    return _triples([node])


def _filter(node: Filter) -> list[Part]:
    return ["FILTER (", node.expr, ")"]


def _optional(node: OptionalPattern) -> list[Part]:
    return ["OPTIONAL ", node.pattern]


def _minus(node: MinusPattern) -> list[Part]:
    return ["MINUS ", node.pattern]


def _union(node: UnionPattern) -> list[Part]:
    return _join(node.branches, " UNION ")


def _graph(node: GraphGraphPattern) -> list[Part]:
    return ["GRAPH ", node.name, " ", node.pattern]


def _service(node: ServicePattern) -> list[Part]:
    return ["SERVICE ", "SILENT " if node.silent else "", node.name, " ", node.pattern]


def _bind(node: Bind) -> list[Part]:
    return ["BIND (", node.expr, " AS ", node.var, ")"]


def _inline_data(node: InlineData) -> list[Part]:
    parts: list[Part] = ["VALUES (", *_join(node.vars, " "), ") {"]
    for row in node.rows:
        if len(row) != len(node.vars):
            raise ValueError(f"VALUES row {row!r} does not match {len(node.vars)} variables")
        if any(isinstance(value, BNode) for value in row):
            raise ValueError("VALUES cannot hold blank nodes")
        parts += [" (", *_join(["UNDEF" if value is None else value for value in row], " "), ")"]
    return [*parts, " }"]


def _sub_select(node: SubSelect) -> list[Part]:
    return [GroupPattern((node,))]


def _sub_query(query: SelectQuery) -> list[Part]:
    """[8] has no prologue (IRIs print in full, so it is not needed) and no dataset clause."""
    if query.dataset:
        raise ValueError("a sub-select cannot have FROM clauses")
    return _select(replace(query, prologue=Prologue()))


# --------------------------------------------------------------------------- queries [1]-[28]


def _prologue(node: Prologue) -> list[Part]:
    parts: list[Part] = []
    if node.base is not None:
        parts += ["BASE ", IRI(node.base), NEWLINE]
    for prefix, iri in node.prefixes:
        parts += [f"PREFIX {prefix}: ", IRI(iri), NEWLINE]
    return parts


def _dataset(node: DatasetClause) -> list[Part]:
    return ["FROM NAMED " if node.named else "FROM ", node.graph]


def _projection(node: Projection) -> list[Part]:
    return [node.var] if node.expr is None else ["(", node.expr, " AS ", node.var, ")"]


def _group_condition(node: GroupCondition) -> list[Part]:
    if node.var is not None:
        return ["(", node.expr, " AS ", node.var, ")"]
    return [node.expr] if isinstance(node.expr, Var) else ["(", node.expr, ")"]


def _order_condition(node: OrderCondition) -> list[Part]:
    if node.descending:
        return ["DESC(", node.expr, ")"]
    return [node.expr] if isinstance(node.expr, Var) else ["(", node.expr, ")"]


def _modifiers(node: SolutionModifiers) -> list[Part]:
    parts: list[Part] = []
    if node.group_by:
        parts += [NEWLINE, "GROUP BY ", *_join(node.group_by, " ")]
    if node.having:
        parts += [NEWLINE, "HAVING ", *_join([_Deferred(_parenthesized, e) for e in node.having], " ")]
    if node.order_by:
        parts += [NEWLINE, "ORDER BY ", *_join(node.order_by, " ")]
    if node.limit is not None:
        parts += [NEWLINE, f"LIMIT {node.limit}"]
    if node.offset is not None:
        parts += [NEWLINE, f"OFFSET {node.offset}"]
    return parts


def _clauses(query: Any, head: list[Part]) -> list[Part]:
    """Prologue, the query form's head, then the clauses every query form shares."""
    parts: list[Part] = [query.prologue, *head]
    for clause in query.dataset:
        parts += [NEWLINE, clause]
    if query.where is not None:
        parts += [NEWLINE, "WHERE ", query.where]
    parts += [query.modifiers]
    if query.values is not None:
        parts += [NEWLINE, query.values]
    return parts


def _select(node: SelectQuery) -> list[Part]:
    head: list[Part] = ["SELECT ", "DISTINCT " if node.distinct else "", "REDUCED " if node.reduced else ""]
    if node.projection is None:
        return _clauses(node, [*head, "*"])
    if not node.projection:
        raise ValueError("a SELECT projects at least one variable (or *)")
    return _clauses(node, [*head, *_join(node.projection, " ")])


def _construct(node: ConstructQuery) -> list[Part]:
    if any(not isinstance(t.predicate, Var | IRI) for t in node.template):
        raise ValueError("a CONSTRUCT template cannot hold property paths")
    template: list[Part] = ["CONSTRUCT {", INDENT, NEWLINE, *_triples(node.template), DEDENT, NEWLINE, "}"]
    return _clauses(node, template if node.template else ["CONSTRUCT { }"])


def _ask(node: AskQuery) -> list[Part]:
    return _clauses(node, ["ASK"])


def _describe(node: DescribeQuery) -> list[Part]:
    targets: list[Part] = ["*"] if node.targets is None else _join(node.targets, " ")
    if not targets:
        raise ValueError("a DESCRIBE names at least one resource (or *)")
    return _clauses(node, ["DESCRIBE ", *targets])


_RENDERERS: dict[type, Callable[[Any], list[Part]]] = {
    Var: _var,
    IRI: _iri,
    Literal: _literal,
    BNode: _bnode,
    PathAlternative: _path_alternative,
    PathSequence: _path_sequence,
    PathInverse: _path_inverse,
    PathMod: _path_mod,
    PathNegatedSet: _path_negated_set,
    PathNested: _path_nested,
    BinaryOp: _binary,
    UnaryOp: _unary,
    In: _in,
    FunctionCall: _function_call,
    Exists: _exists,
    Aggregate: _aggregate,
    TriplePattern: _triple,
    BGP: _bgp,
    Filter: _filter,
    OptionalPattern: _optional,
    MinusPattern: _minus,
    UnionPattern: _union,
    GraphGraphPattern: _graph,
    ServicePattern: _service,
    Bind: _bind,
    InlineData: _inline_data,
    SubSelect: _sub_select,
    GroupPattern: _group,
    Prologue: _prologue,
    DatasetClause: _dataset,
    Projection: _projection,
    OrderCondition: _order_condition,
    GroupCondition: _group_condition,
    SolutionModifiers: _modifiers,
    SelectQuery: _select,
    ConstructQuery: _construct,
    AskQuery: _ask,
    DescribeQuery: _describe,
}

__all__ = ["to_sparql"]
