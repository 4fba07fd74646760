"""The event-query dialects rsep reads, and how a query finds its dialect.

A dialect is a grammar file plus a transformer to the one event algebra (the
sqlglot way: a small table per dialect, nothing dialect-specific downstream).
Without an explicit dialect, each one is tried; a query that none accepts
gets the error of the dialect that read furthest into it, except where a
dialect's own syntax shows which one was meant (`_owner`). `event_syntax`
tells an event query from plain SPARQL by the parse trees: whether a
dialect's grammar reads one of its event constructs in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lark import Token, Transformer, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken

from rsep.grammar.cqels import CqelsTransformer
from rsep.grammar.csparql import CsparqlTransformer
from rsep.grammar.epsparql import EpsparqlTransformer
from rsep.grammar.parser import SparqlSyntaxError, get_parser, parse_with
from rsep.grammar.spaseq import SpaseqTransformer
from rsep.plugin.algebra.events import EventQuery


@dataclass(frozen=True, slots=True)
class DialectSyntax:
    name: str
    grammar: str
    transformer: Callable[[str | None], Transformer]  # type: ignore[type-arg]
    events: frozenset[str] = frozenset()
    """The dialect's event constructs: rules of its grammar and terminals (keywords included) that
    SPARQL 1.1 has not and that are about streams, windows or events. The leniencies that let a
    dialect read its paper's queries (EP-SPARQL's `?a / ?b AS ?c`, WHERE without braces) are not
    among them: a text that only uses those is plain SPARQL, written loosely."""


DIALECTS: dict[str, DialectSyntax] = {
    "spaseq": DialectSyntax(
        "spaseq",
        "spaseq",
        SpaseqTransformer,
        frozenset(
            {
                "stream_clause",
                "within_clause",
                "partition_clause",
                "spaseq_where",
                "seq_clause",
                "gpm_definition",
                "STREAM",
                "WITHIN",
                "PARTITION",
                "SEQ",
                "DEFINE",
                "GPM",
            }
        ),
    ),
    "ep-sparql": DialectSyntax(
        "ep-sparql", "epsparql", EpsparqlTransformer, frozenset({"PATTERN_OPERATOR", "TIME_FUNCTION"})
    ),
    "c-sparql": DialectSyntax(
        "c-sparql",
        "csparql",
        CsparqlTransformer,
        frozenset({"register_clause", "stream_clause", "REGISTER", "STREAM", "TIMESTAMP_FUNCTION"}),
    ),
    "cqels": DialectSyntax(
        "cqels",
        "cqels",
        CqelsTransformer,
        frozenset(
            {
                "named_window_clause",
                "stream_graph_pattern",
                "window_graph_pattern",
                "event_clause",
                "STREAM",
                "WINDOW",
                "SEQ",
            }
        ),
    ),
}

_SPARQL_OPERATORS = frozenset({"UNION"})
"""SPARQL 1.1's own words among a dialect's event terminals (EP-SPARQL's PATTERN_OPERATOR)."""


def event_syntax(text: str) -> str | None:
    """The first dialect whose grammar reads one of its event constructs in `text` (None: the
    text is plain SPARQL, as far as any dialect reads it).

    A dialect that reads the whole text is asked about its parse tree; one that stops is asked
    about what it read up to there (the trees and tokens on its parser's stack) and the token it
    stopped at, so a malformed event query (`FROM STREAM <s> [RANGE 1x]`, a misplaced `SEQ {`)
    is recognised as one and gets its dialect's error, while plain SPARQL with a mistake gets
    SPARQL 1.1's."""
    for syntax in DIALECTS.values():
        if _has_event_construct(_read(syntax, text), syntax.events):
            return syntax.name
    return None


def _read(syntax: DialectSyntax, text: str) -> list[Tree[Token] | Token]:
    """The parse tree of `text` in the dialect, or what its parser read before it stopped."""
    try:
        return [get_parser(syntax.grammar, "query_unit").parse(text)]
    except UnexpectedInput as error:
        parser = getattr(error, "interactive_parser", None)
        read: list[Tree[Token] | Token] = list(parser.parser_state.value_stack) if parser is not None else []
        if isinstance(error, UnexpectedToken):
            read.append(error.token)
        return read


def _has_event_construct(read: list[Tree[Token] | Token], events: frozenset[str]) -> bool:
    for item in read:
        if isinstance(item, Token):
            if item.type in events and item.upper() not in _SPARQL_OPERATORS:
                return True
            continue
        for node in item.iter_subtrees():
            if node.data in events or _has_event_construct(
                [child for child in node.children if isinstance(child, Token)], events
            ):
                return True
    return False


def parse_event_query(
    text: str, *, source: str = "<query>", dialect: str | None = None, base_iri: str | None = None
) -> EventQuery:
    """Parse an event query of the given dialect, or of whichever dialect accepts it."""
    if dialect is not None and dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    candidates = [DIALECTS[dialect]] if dialect else list(DIALECTS.values())
    errors: list[tuple[str, SparqlSyntaxError]] = []
    for syntax in candidates:
        try:
            query = parse_with(
                syntax.grammar,
                text,
                lambda s=syntax: s.transformer(base_iri),  # type: ignore[misc]
                start="query_unit",
                source=source,
            )
            if isinstance(query, EventQuery):
                return query
        except SparqlSyntaxError as error:
            errors.append((syntax.name, error))
    if not errors:  # every dialect read it as plain SPARQL: not an event query
        raise SparqlSyntaxError(
            "not an event query: it has no stream, window or event operator of any dialect (plain SPARQL "
            "goes to the endpoint's /sparql)",
            source=source,
            line=1,
            column=1,
        )
    owned = _owner(text, dict(errors))
    if owned is not None:
        raise owned
    # A dialect whose grammar read the whole text knows best what is wrong with it.
    parsed = [e for _, e in errors if e.static]
    raise max(parsed or [e for _, e in errors], key=lambda e: (e.line, e.column))


_EP_OPERATOR = re.compile(
    r"(UNION|SEQ|EQUALS|OPTIONALSEQ|EQUALSOPTIONAL)(?!\w)\s*\{", re.IGNORECASE | re.ASCII
)
_WORD_END = re.compile(r"[A-Za-z0-9_]+$")


def _owner(text: str, errors: dict[str, SparqlSyntaxError]) -> SparqlSyntaxError | None:
    """The error of the dialect the text is evidently written in, if any.

    Every plain SPARQL query is an EP-SPARQL query (WWW 2011 §4.2), so a text
    that EP-SPARQL's grammar reads whole gets EP-SPARQL's error, not another
    dialect's complaint that it has no stream. An EP-SPARQL operator followed
    by a group (`SEQ {`) is EP-SPARQL's syntax (SPAseq and CQELS write `SEQ (`):
    when EP-SPARQL stops at it, the operator is misplaced. The operator is the
    whole word EP-SPARQL stopped in (it stops after `OPTIONAL` of a misplaced
    `OPTIONALSEQ`, SPARQL's OPTIONAL being a keyword), reported where it starts."""
    error = errors.get("ep-sparql")
    if error is None:
        return None
    if error.static:
        return error
    offset = _offset(text, error.line, error.column)
    before = _WORD_END.search(text, 0, offset)
    start = before.start() if before is not None else offset
    found = _EP_OPERATOR.match(text, start)
    if found is None:
        return None
    operator = found.group(1).upper()
    return SparqlSyntaxError(
        f"{operator} joins two group graph patterns, {{ P1 }} {operator} {{ P2 }}: "
        "the pattern before it must be a group in braces in the same group as the one after it (a "
        "sub-SELECT without the WHERE keyword takes a single group: write WHERE { P1 } "
        f"{operator} {{ P2 }})",
        source=error.source,
        line=error.line,
        column=error.column - (offset - start),
    )


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(each) + 1 for each in lines[: line - 1]) + column - 1
