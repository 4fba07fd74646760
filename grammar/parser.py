"""Parsing entry points: the lark parsers, built once, and the one error type their failures become.

`parse_query` and `parse_update` read SPARQL 1.1; dialect modules call `parse_with` with their own
grammar file (which `%import`s sparql11.lark, see its header) and transformer, and get the same
error handling: every failure, lexical, grammatical or static, is a `SparqlSyntaxError` with the
source name, line and column, and the tokens that would have been accepted, in the words a user
types (`expected a variable, an IRI or '('`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr, TerminalDef
from lark.load_grammar import FromPackageLoader, PackageResource
from lark.parse_tree_builder import ExpandSingleChild, PropagatePositions
from lark.visitors import Transformer

from rsep.grammar.collector import collector_paused
from rsep.grammar.limits import first_violation
from rsep.grammar.sparql_transformer import SparqlTransformer, StaticSemanticsError, terminal_name
from rsep.plugin.algebra.sparql import AGGREGATES, BUILTIN_ARITY, Query
from rsep.plugin.errors import InvalidInput

GRAMMAR_PACKAGE = "rsep.grammar"
SPARQL_GRAMMAR = "sparql11"


class SparqlSyntaxError(InvalidInput):
    """A query or update that does not parse or breaks a static rule of SPARQL.

    `str(error)` is `"<source>:<line>:<column>: <message>"`; `expected` lists what would have been
    accepted at that point (empty for static-rule violations); `static` tells
    a text that parsed but broke a rule from one that did not parse."""

    static = False
    source: str
    line: int
    column: int

    def __init__(
        self, message: str, *, source: str, line: int, column: int, expected: Iterable[str] = ()
    ) -> None:
        super().__init__(message, source=source, line=line, column=column)
        self.expected = list(expected)

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable (keyword-only fields), e.g. to cross a process boundary."""
        return (_rebuild_error, (self.message, self.source, self.line, self.column, self.expected))


def _rebuild_error(
    message: str, source: str, line: int, column: int, expected: list[str]
) -> SparqlSyntaxError:
    return SparqlSyntaxError(message, source=source, line=line, column=column, expected=expected)


class QueryTooComplex(SparqlSyntaxError):
    """A text that nests deeper, or chains longer, than rsep lets through to any parser
    (`rsep.grammar.limits`): static, so it is never passed on to Oxigraph."""

    static = True


def check_bounds(text: str, *, source: str) -> None:
    """Raise `QueryTooComplex` at the first place `text` passes a bound of `rsep.grammar.limits`."""
    found = first_violation(text)
    if found is not None:
        offset, message = found
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise QueryTooComplex(message, source=source, line=line, column=column)


# --------------------------------------------------------------------------- building parsers

_LOADER = FromPackageLoader(GRAMMAR_PACKAGE, ("",))


def build_parser(
    grammar_text: str, start: str | tuple[str, ...], *, name: str = "dialect.lark", pass_units: bool = True
) -> Lark:
    """An LALR parser for grammar text that lives, or could live, in grammar/ as `name`: its
    `%import .sparql11 (...)` lines resolve to the grammars of this package. `pass_units=False`
    keeps lark's own reductions (`_pass_unit_reductions`; the tests compare the two)."""
    parser = Lark(
        grammar_text,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        start=start if isinstance(start, str) else list(start),
        cache=True,
        regex=True,
        source_path=PackageResource(GRAMMAR_PACKAGE, name),
        import_paths=[_LOADER],
    )
    if pass_units:
        _pass_unit_reductions(parser)
    return parser


def _pass_unit_reductions(parser: Lark) -> None:
    """A `?rule` reduced from one child returns that child at once.

    Such reductions are most of a SPARQL parse (each precedence level of an expression, each level
    of a property path: 3 in 4 reductions of a query of triple patterns and FILTERs). lark runs
    each through ExpandSingleChild and then PropagatePositions, which finds the child's positions
    already set and sets them again: two calls and some twenty attribute reads per reduction for
    the same tree (tests/grammar/test_positions.py holds every position equal to lark's). Rules
    built otherwise (another tree class, no positions, a newer lark) are left as lark built them."""
    builder = getattr(parser, "_parse_tree_builder", None)
    callbacks = getattr(parser, "_callbacks", None)
    if builder is None or not isinstance(callbacks, dict):
        return
    for rule, chain in builder.rule_builders:
        if chain == [ExpandSingleChild, PropagatePositions] and rule in callbacks:
            callbacks[rule] = _passing_one_child(callbacks[rule])


def _passing_one_child(reduce: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def passing(children: list[Any]) -> Any:
        """lark's reduction of the rule, without it when there is one child to pass on."""
        return children[0] if len(children) == 1 else reduce(children)

    return passing


@functools.cache
def get_parser(grammar_name: str, start: str | tuple[str, ...]) -> Lark:
    """The parser of `grammar/<grammar_name>.lark` for a start rule (or several), built once per process
    (lark also caches the analysed tables on disk, keyed by the grammar text)."""
    path, text = _LOADER(None, f"{grammar_name}.lark")
    return build_parser(text, start, name=path.path)


def parse_with(
    grammar: str | Lark,
    text: str,
    transformer_factory: Callable[[], Transformer[Token, Any]],
    *,
    start: str,
    source: str,
) -> Any:
    """Parse `text` with a grammar of this package (its name, or a parser from `build_parser`) and
    transform the tree with a fresh transformer; lark and static-rule errors become `SparqlSyntaxError`."""
    check_bounds(text, source=source)
    parser = get_parser(grammar, start) if isinstance(grammar, str) else grammar
    with collector_paused(len(text)):
        try:
            tree = parser.parse(text, start=start)
        except UnexpectedInput as error:
            raise syntax_error(error, text, parser, source) from None
        return transform_tree(tree, transformer_factory, source=source)


def transform_tree(
    tree: Tree[Token], transformer_factory: Callable[[], Transformer[Token, Any]], *, source: str
) -> Any:
    """Transform a parse tree with a fresh transformer; static-rule errors become `SparqlSyntaxError`."""
    try:
        return transformer_factory().transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, StaticSemanticsError):
            raise _static_error(error.orig_exc, source) from None
        raise
    except StaticSemanticsError as error:
        raise _static_error(error, source) from None


def parse_query(text: str, *, source: str = "<query>", base_iri: str | None = None) -> Query:
    """A SPARQL 1.1 query as a SelectQuery, ConstructQuery, AskQuery or DescribeQuery.

    `base_iri` resolves relative IRIs when the query has no BASE (e.g. the URL it was read from)."""
    result: Query = parse_with(
        SPARQL_GRAMMAR, text, lambda: SparqlTransformer(base_iri), start="query_unit", source=source
    )
    return result


def parse_update(text: str, *, source: str = "<update>", base_iri: str | None = None) -> None:
    """Check a SPARQL 1.1 Update request (grammar and static rules); it is executed as text."""
    parse_with(SPARQL_GRAMMAR, text, lambda: SparqlTransformer(base_iri), start="update_unit", source=source)


# --------------------------------------------------------------------------- error messages


def _static_error(error: StaticSemanticsError, source: str) -> SparqlSyntaxError:
    found = SparqlSyntaxError(error.message, source=source, line=error.line, column=error.column)
    found.static = True
    return found


def syntax_error(error: UnexpectedInput, text: str, parser: Lark, source: str) -> SparqlSyntaxError:
    """The `SparqlSyntaxError` for where lark stopped in `text`: what it found and what would have
    been accepted there."""
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        found = f"unexpected {_quote(str(error.token))}"
        line, column = error.line, error.column
    elif isinstance(error, UnexpectedCharacters):
        found = f"unexpected character {_quote(error.char)}"
        line, column = error.line, error.column
    else:  # end of input (UnexpectedToken on $END or UnexpectedEOF)
        found = "unexpected end of input"
        line, column = _end_position(text)
    terminals = {terminal.name: terminal for terminal in parser.terminals}
    expected = expected_names(_accepted(error), terminals)
    message = f"{found}; expected {_join(expected)}" if expected else found
    return SparqlSyntaxError(message, source=source, line=line, column=column, expected=expected)


def _accepted(error: UnexpectedInput) -> set[str]:
    """The terminals the parser can take at the error. lark's `expected` is the LALR lookahead set,
    which merges the follow sets of every context sharing the state; `accepts()` tries each one."""
    interactive = getattr(error, "interactive_parser", None)
    if interactive is not None:
        return _accepts(interactive)
    return set(getattr(error, "expected", None) or getattr(error, "allowed", None) or ())


def _accepts(interactive: Any) -> set[str]:
    """lark's `InteractiveParser.accepts()`, but also for terminals a dialect imported (they are
    renamed `sparql11__NAME`, which its `isupper()` test skips)."""
    accepted = set()
    for name in interactive.choices():
        if not terminal_base(name).isupper():
            continue
        probe = interactive.copy()
        try:
            probe.feed_token(Token.new_borrow_pos(name, "", Token(name, "")))
        except UnexpectedToken:
            continue
        accepted.add(name)
    return accepted


def _end_position(text: str) -> tuple[int, int]:
    return text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1


def _quote(found: str) -> str:
    return repr(found if len(found) <= 40 else found[:37] + "...")


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


# What a user types, for terminals that are not a fixed keyword or punctuation string.
_CATEGORIES = {
    "VAR1": "a variable",
    "VAR2": "a variable",
    "IRIREF": "an IRI",
    "PNAME_LN": "an IRI",
    "PNAME_NS": "a prefix name",  # only where an IRI cannot stand
    "BLANK_NODE_LABEL": "a blank node",
    "ANON": "a blank node",
    "NIL": "'()'",
    "LANGTAG": "a language tag",
    "$END": "end of input",
    **{
        name: "a literal"
        for name in [
            "STRING_LITERAL1",
            "STRING_LITERAL2",
            "STRING_LITERAL_LONG1",
            "STRING_LITERAL_LONG2",
            "INTEGER",
            "DECIMAL",
            "DOUBLE",
            "INTEGER_POSITIVE",
            "DECIMAL_POSITIVE",
            "DOUBLE_POSITIVE",
            "INTEGER_NEGATIVE",
            "DECIMAL_NEGATIVE",
            "DOUBLE_NEGATIVE",
            "TRUE",
            "FALSE",
        ]
    },
}
_ORDER = [
    "a variable",
    "an IRI",
    "a prefix name",
    "a literal",
    "an integer",
    "a blank node",
    "a function call",
    "'()'",
]
_LAST = ["end of input"]
_FUNCTION_KEYWORDS = frozenset(BUILTIN_ARITY) | AGGREGATES | {"EXISTS"}
_IGNORED = frozenset({"WHITESPACE", "COMMENT"})


def expected_names(names: Iterable[str], terminals: dict[str, TerminalDef]) -> list[str]:
    """Friendly, de-duplicated, ordered names for a set of lark terminal names: categories first
    (`a variable`, `an IRI`, `a literal`, `a function call`), then keywords, then punctuation."""
    names = set(names)
    bases = {terminal_base(name) for name in names}
    friendly = {_friendly_name(name, terminals) for name in names if terminal_base(name) not in _IGNORED}
    if bases & {"IRIREF", "PNAME_LN"}:
        friendly.discard("a prefix name")  # `ex:` alone is also an IRI
    if "a literal" in friendly and {b for b in bases if _CATEGORIES.get(b) == "a literal"} == {"INTEGER"}:
        friendly = (friendly - {"a literal"}) | {"an integer"}  # LIMIT, OFFSET
    categories = [name for name in _ORDER if name in friendly]
    rest = sorted(friendly - set(_ORDER) - set(_LAST), key=lambda n: (not n[1:2].isalpha(), n))
    return categories + rest + [name for name in _LAST if name in friendly]


def terminal_base(name: str) -> str:
    return name.rsplit("__", 1)[-1]


def _friendly_name(name: str, terminals: dict[str, TerminalDef]) -> str:
    base = terminal_base(name)
    if base in _CATEGORIES:
        return _CATEGORIES[base]
    if base in _FUNCTION_KEYWORDS:
        return "a function call"
    terminal = terminals.get(name)
    if terminal is not None and isinstance(terminal.pattern, PatternStr):
        value = terminal.pattern.value
        return value.upper() if value.isalpha() and value != "a" else repr(value)
    return base


__all__ = [
    "SparqlSyntaxError",
    "build_parser",
    "expected_names",
    "get_parser",
    "parse_query",
    "parse_update",
    "parse_with",
    "syntax_error",
    "terminal_base",
    "terminal_name",
    "transform_tree",
]
