"""The event-query dialects rsep reads, and how a query finds its dialect.

A dialect is a grammar file plus a transformer to the one event algebra (the
sqlglot way: a small table per dialect, nothing dialect-specific downstream).
Without an explicit dialect, each one is tried; a query that none accepts
gets the error of the dialect that read furthest into it, except where a
dialect's own syntax shows which one was meant (`_owner`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lark import Transformer

from rsep.grammar.cqels import CqelsTransformer
from rsep.grammar.csparql import CsparqlTransformer
from rsep.grammar.epsparql import EpsparqlTransformer
from rsep.grammar.parser import SparqlSyntaxError, parse_with
from rsep.grammar.spaseq import SpaseqTransformer
from rsep.plugin.algebra.events import EventQuery


@dataclass(frozen=True, slots=True)
class DialectSyntax:
    name: str
    grammar: str
    transformer: Callable[[str | None], Transformer]  # type: ignore[type-arg]


DIALECTS: dict[str, DialectSyntax] = {
    "spaseq": DialectSyntax("spaseq", "spaseq", SpaseqTransformer),
    "ep-sparql": DialectSyntax("ep-sparql", "epsparql", EpsparqlTransformer),
    "c-sparql": DialectSyntax("c-sparql", "csparql", CsparqlTransformer),
    "cqels": DialectSyntax("cqels", "cqels", CqelsTransformer),
}


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


_EP_OPERATOR = re.compile(r"(UNION|SEQ|EQUALS|OPTIONALSEQ|EQUALSOPTIONAL)\s*\{", re.IGNORECASE)


def _owner(text: str, errors: dict[str, SparqlSyntaxError]) -> SparqlSyntaxError | None:
    """The error of the dialect the text is evidently written in, if any.

    Every plain SPARQL query is an EP-SPARQL query (WWW 2011 §4.2), so a text
    that EP-SPARQL's grammar reads whole gets EP-SPARQL's error, not another
    dialect's complaint that it has no stream. An EP-SPARQL operator followed
    by a group (`SEQ {`) is EP-SPARQL's syntax (SPAseq and CQELS write `SEQ (`):
    when EP-SPARQL stops at it, the operator is misplaced."""
    error = errors.get("ep-sparql")
    if error is None:
        return None
    if error.static:
        return error
    offset = _offset(text, error.line, error.column)
    found = _EP_OPERATOR.match(text, offset)
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
        column=error.column,
    )


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(each) + 1 for each in lines[: line - 1]) + column - 1
