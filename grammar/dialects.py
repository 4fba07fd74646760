"""The event-query dialects rsep reads, and how a query finds its dialect.

A dialect is a grammar file plus a transformer to the one event algebra (the
sqlglot way: a small table per dialect, nothing dialect-specific downstream).
Without an explicit dialect, each one is tried; a query that none accepts
gets the error of the dialect that read furthest into it.
"""

from __future__ import annotations

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
    errors: list[SparqlSyntaxError] = []
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
            errors.append(error)
    if not errors:  # every dialect read it as plain SPARQL: not an event query
        raise SparqlSyntaxError(
            "not an event query: it has no stream, window or event operator of any dialect (plain SPARQL "
            "goes to the endpoint's /sparql)",
            source=source,
            line=1,
            column=1,
        )
    # A dialect whose grammar read the whole text knows best what is wrong with it.
    parsed = [e for e in errors if e.static]
    raise max(parsed or errors, key=lambda e: (e.line, e.column))
