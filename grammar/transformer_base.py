"""What every rule of the SPARQL transformer builds on: one instance per parse, its driving
(`transform`, the dispatch of imported rules), and the bookkeeping the static checks read
(positions, scopes, variable and blank-node occurrences).

`rsep.grammar.sparql_transformer` explains the layering: each `*_rules` module adds the methods of
one part of the grammar on top of this class."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lark import Token, Transformer_NonRecursive, Tree
from lark.tree import Meta

from rsep.grammar.lexical import terminal_name
from rsep.plugin.algebra.sparql import (
    BGP,
    BNode,
    Node,
)
from rsep.plugin.errors import InternalError


class StaticSemanticsError(InternalError):
    """A static rule of SPARQL is broken at (line, column); see `rsep.grammar.parser.SparqlSyntaxError`."""

    line: int
    column: int

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where a variable, blank-node label or generated blank node is written."""

    name: str
    start: int
    line: int
    column: int


def position_of(meta: Meta) -> tuple[int, int]:
    """(line, column) of a rule's meta; (1, 1) for an empty rule, which has none."""
    return (meta.line, meta.column) if not meta.empty else (1, 1)


class TransformerBase(Transformer_NonRecursive):  # type: ignore[type-arg]
    """The state of one parse and the helpers every rule method uses.

    `base_iri` resolves relative IRIs when the text has no BASE (e.g. the document's URL)."""

    __visit_tokens__ = False

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(visit_tokens=False)
        self.base = base_iri
        self.prefixes: dict[str, str] = {}
        self._anon_prefix: str | None = None
        self._tree: Tree[Token] | None = None
        self._imported: dict[str, Callable[[list[Any], Meta], Any]] = {}
        self._anon_count = 0
        self._scopes: dict[int, tuple[Node, frozenset[str]]] = {}
        self._positions: dict[int, tuple[object, int, int]] = {}
        self._vars: list[Occurrence] = []
        self._labels: list[Occurrence] = []
        self._blank_nodes: list[Occurrence] = []
        self._spans: dict[int, tuple[BGP, int, int]] = {}
        self._bgp_spans: list[tuple[int, int, int]] = []
        self._bgp_groups = 0
        self._operation_spans: list[tuple[int, int, int]] = []

    # ----------------------------------------------------------------- driving

    def transform(self, tree: Tree[Token]) -> Any:
        self._tree, self._anon_prefix = tree, None
        try:
            result = super().transform(tree)
            self.check_whole_tree()
        finally:  # the table's bound methods refer back to self: no cycle keeps the tree alive
            self._tree = None
            self._imported.clear()
        return result

    def check_whole_tree(self) -> None:
        """The checks that need the whole tree, run after it is transformed (`StaticChecks`)."""

    def __default__(self, data: str, children: list[Any], meta: Meta) -> Any:
        """Rules of an imported grammar arrive as `<grammar>__<rule>`: dispatch them by base name
        (looked up once per rule name and transformer: a large text has thousands of each)."""
        rule = self._imported.get(data)
        if rule is None:
            rule = self._imported[data] = self._imported_rule(data)
        return rule(children, meta)

    def _imported_rule(self, data: str) -> Callable[[list[Any], Meta], Any]:
        """How `__default__` builds a `data` node: the rule method of its base name, called as
        lark calls its own (with `@v_args` wrappers), or a plain tree."""
        base = data.rsplit("__", 1)[-1]
        method = getattr(self, base, None) if base != data else None
        if not callable(method):
            return lambda children, meta: Tree(data, children, meta)
        wrapper = getattr(method, "visit_wrapper", None)  # set by @v_args, as lark's own dispatch does
        if wrapper is None:
            return lambda children, meta: method(children)
        return lambda children, meta: wrapper(method, base, children, meta)

    def _reserve_anon_prefix(self, tree: Tree[Token] | None) -> str:
        """A prefix for generated blank-node labels that no label written in the text starts with.
        Chosen at the first `[]` or collection: a walk of the whole tree, which most texts never need
        (a transformer builds new nodes and leaves the parse tree as it was)."""
        labels: list[str] = []
        stack = [tree] if tree is not None else []  # not Tree.scan_values, which recurses
        while stack:
            for child in stack.pop().children:
                if isinstance(child, Tree):
                    stack.append(child)
                elif terminal_name(child) == "BLANK_NODE_LABEL":
                    labels.append(str(child)[2:])
        prefix = "b"
        while any(label.startswith(prefix) for label in labels):
            prefix += "_"
        return prefix

    def new_blank_node(self) -> BNode:
        """A fresh blank node for `[]`, `[ ... ]` and collections."""
        if self._anon_prefix is None:
            self._anon_prefix = self._reserve_anon_prefix(self._tree)
        self._anon_count += 1
        return BNode(f"{self._anon_prefix}{self._anon_count - 1}")

    # ----------------------------------------------------------------- bookkeeping for checks

    def fail(self, message: str, where: object | Meta | Token | None = None) -> StaticSemanticsError:
        """The error to raise for a broken static rule at a node, meta or token."""
        line, column = self.position(where)
        return StaticSemanticsError(message, line, column)

    def position(self, where: object | Meta | Token | None) -> tuple[int, int]:
        if isinstance(where, Meta):
            return position_of(where)
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
