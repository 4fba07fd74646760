"""Rule methods for expressions and terms, W3C productions [110]-[138]: operators folded
left-associatively, built-in calls, aggregates, literals and IRIs (prefixed names and relative
IRIs resolved as they are read), and [97] Integer (LIMIT, OFFSET)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from lark import Token

from rsep.grammar.lexical import resolve_iri, terminal_name, unescape, unescape_local_name
from rsep.grammar.static_checks import StaticChecks
from rsep.plugin.algebra.sparql import (
    IRI,
    RDF_LANGSTRING,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    Aggregate,
    BinaryOp,
    Exists,
    Expr,
    FunctionCall,
    GroupPattern,
    In,
    Literal,
    Node,
    UnaryOp,
)

_BUILTIN_ALIASES = {"URI": "IRI", "ISURI": "ISIRI"}
_NUMERIC_TYPES = {"INTEGER": XSD_INTEGER, "DECIMAL": XSD_DECIMAL, "DOUBLE": XSD_DOUBLE}


class ExpressionRules(StaticChecks):
    """[110]-[138] expressions and terms."""

    def expression(self, children: list[Expr]) -> Expr:
        """[110]/[111] (sparql11.lark D13): operands joined by `||`."""
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
        return IRI(self.prefixes[prefix] + unescape_local_name(local))

    def _iriref_text(self, token: Token) -> str:
        try:
            return unescape(str(token)[1:-1])
        except ValueError as error:
            raise self.fail(str(error), token) from None

    def integer(self, children: list[Token]) -> int:
        return int(children[0])
