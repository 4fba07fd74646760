"""Rule methods for graph patterns, W3C productions [53]-[72]: groups (with their scope, for the
static checks), OPTIONAL, GRAPH, SERVICE, BIND, VALUES, MINUS, UNION, FILTER and function calls."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from rsep.grammar.data_blocks import Block, iri_terminal, string_terminal, terminal_of
from rsep.grammar.expression_walks import triple_vars
from rsep.grammar.lexical import terminal_name
from rsep.grammar.query_parts import Args, Elements, Row
from rsep.grammar.transformer_base import StaticSemanticsError, position_of
from rsep.grammar.triple_rules import TripleRules
from rsep.plugin.algebra.sparql import (
    BGP,
    Bind,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupPattern,
    InlineData,
    MinusPattern,
    Node,
    OptionalPattern,
    ServicePattern,
    SubSelect,
    Term,
    TriplePattern,
    UnionPattern,
    Var,
)

_NUMERIC_RULES = {
    "": "numeric_literal_unsigned",
    "POSITIVE": "numeric_literal_positive",
    "NEGATIVE": "numeric_literal_negative",
}


class GraphPatternRules(TripleRules):
    """[53]-[72] graph patterns."""

    def group_graph_pattern(self, children: list[Any]) -> GroupPattern:
        content = children[0]
        return self._group((content,) if isinstance(content, SubSelect) else content.items)

    def _group(self, elements: tuple[Node, ...]) -> GroupPattern:
        group = GroupPattern(elements)
        self.set_scope(group, (name for element in elements for name in self.scope(element)))
        return group

    def group_graph_pattern_sub(self, children: list[Node]) -> Elements:
        elements = tuple(children)
        self.check_group(elements)
        self._register_bgp_groups(elements)
        return Elements(elements)

    @v_args(meta=True)
    def triples_block(self, meta: Meta, children: list[tuple[TriplePattern, ...]]) -> BGP:
        bgp = BGP(tuple(triple for triples in children for triple in triples))
        self.set_scope(bgp, (name for triple in bgp.triples for name in triple_vars(triple)))
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
        rows = [c for c in children if isinstance(c, Row)]
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
    def data_block_row(self, meta: Meta, children: list[Any]) -> Row:
        values = tuple(c for c in children if not isinstance(c, Token))
        return Row(values, *position_of(meta))

    def data_block_value(self, children: list[Any]) -> Term | None:
        value = children[0]
        return None if isinstance(value, Token) else value  # UNDEF

    def data_block_token(self, children: list[Token]) -> InlineData:
        """D11: a block the lexer read whole, built as [62]-[65] build it token by token."""
        block = Block(children[0])
        pieces = block.pieces()
        kind, head = next(pieces)
        if kind == "var":
            variable = self._block_var(block, head)
            return self.inline_data_one_var([variable, *(self._block_value(block, *p) for p in pieces)])
        found: list[Any] = []
        for kind, match in pieces if head.group() == "(" else ():  # the variables, up to ')'
            if kind == "close":
                break
            found.append(self._block_var(block, match))
        row: list[Term | None] = []
        line = column = 1
        for kind, match in pieces:
            if kind == "open":
                line, column = block.position(match.start())
                row = []
                if match.group() != "(":  # NIL
                    found.append(Row((), line, column))
            elif kind == "close":
                found.append(Row(tuple(row), line, column))
            else:
                row.append(self._block_value(block, kind, match))
        return self.inline_data_full(found)

    def _block_var(self, block: Block, match: re.Match[str]) -> Var:
        return self.var([block.token(terminal_of("var", match.group()), match.group(), match.start())])

    def _block_value(self, block: Block, kind: str, match: re.Match[str]) -> Term | None:
        """A value of a DATA_BLOCK through the rule methods of [65]."""
        return self.data_block_value([self._plain_value(block, kind, match)])

    def value_list_token(self, children: list[Token]) -> tuple[Expr, ...]:
        """D12: an expression list the lexer read whole, its values built as [72]'s expressions
        (a constant's rule method, [109]'s primary expression) build them."""
        block = Block(children[0])
        return tuple(self._plain_value(block, *piece) for piece in block.list_values())

    def _plain_value(self, block: Block, kind: str, match: re.Match[str]) -> Any:
        """A plain value of a DATA_BLOCK or VALUE_LIST through its rule methods; placed in the text
        only when a rule refuses it, which it then does again with the value's line and column."""
        try:
            return self._data_value(block, kind, match, placed=False)
        except StaticSemanticsError:
            return self._data_value(block, kind, match, placed=True)

    def _data_value(self, block: Block, kind: str, match: re.Match[str], *, placed: bool) -> Any:
        text = match.group(kind)
        if kind == "string":
            at = match.start() if placed else None
            lexical = self.string([block.token(string_terminal(text), text, at)])
            tail: list[Any] = []
            if (lang := match.group("lang")) is not None:
                tail.append(block.token("LANGTAG", lang, match.start("lang") if placed else None))
            elif (datatype := match.group("datatype")) is not None:
                at = match.start("datatype") if placed else None
                tail.append(self.iri([block.token(iri_terminal(datatype), datatype, at)]))
            return self.rdf_literal([lexical, *tail])
        token = block.token(terminal_of(kind, text), text, match.start() if placed else None)
        value: Any
        if kind == "number":
            value = getattr(self, _NUMERIC_RULES[token.type.partition("_")[2]])([token])
        elif token.type in ("TRUE", "FALSE"):
            value = self.boolean_literal([token])
        elif token.type == "UNDEF":
            value = token
        else:
            value = self.iri([token])
        return value

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

    def arg_list(self, children: list[Any]) -> Args:
        distinct = any(isinstance(c, Token) and terminal_name(c) == "DISTINCT" for c in children)
        return Args(tuple(c for c in children if not isinstance(c, Token)), distinct)

    def expression_list(self, children: list[Any]) -> tuple[Expr, ...]:
        if len(children) == 1 and isinstance(children[0], tuple):  # value_list_token's (D12)
            return children[0]
        return tuple(c for c in children if not isinstance(c, Token))
