"""The event-query dialects rsep reads, and how a query finds its dialect.

A dialect is one object, `DIALECT` in grammar/<dialect>.py (rsep.grammar.dialect_spec): its
grammar file, its transformer to the one event algebra (the sqlglot way: a small table per
dialect, nothing dialect-specific downstream), its defaults and the leniencies its grammar reads
that are not event syntax. Adding a dialect: write grammar/<dialect>.lark and grammar/<dialect>.py
and list its `DIALECT` in `REGISTRY`.

Without an explicit dialect, every dialect reads the text and the one whose event syntax it uses
owns it (rsep.grammar.detection, whose docstring is the rule): the order of `REGISTRY` never
matters. `event_syntax` tells an event query from plain SPARQL the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from rsep.grammar import cqels, csparql, epsparql, spaseq
from rsep.grammar.collector import collector_paused
from rsep.grammar.detection import answer, detect, read
from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.parser import SparqlSyntaxError, check_bounds
from rsep.plugin.algebra.events import EventQuery
from rsep.plugin.errors import InvalidInput

REGISTRY: tuple[DialectSpec, ...] = (spaseq.DIALECT, epsparql.DIALECT, csparql.DIALECT, cqels.DIALECT)
"""Every dialect rsep reads (in the order their names are listed to users; detection ignores it)."""

DIALECTS: Mapping[str, DialectSpec] = MappingProxyType({dialect.name: dialect for dialect in REGISTRY})
"""The dialects by name (`POST /queries?dialect=`)."""

if len(DIALECTS) != len(REGISTRY):
    raise ValueError("two dialects of the registry share a name")


def event_syntax(text: str, dialects: Iterable[DialectSpec] = REGISTRY) -> str | None:
    """The dialect whose event syntax `text` uses (None: the text is plain SPARQL, as far as any
    dialect reads it; several names joined by " or " when it reads as more than one alike).

    A dialect's grammar that reads the whole text is asked about its parse tree; one that stops,
    about what it read up to there and the token it stopped at, so a malformed event query
    (`FROM STREAM <s> [RANGE 1x]`, a misplaced `SEQ {`) is recognised as one and gets its dialect's
    error, while plain SPARQL with a mistake gets SPARQL 1.1's."""
    found = detect(text, dialects)
    return " or ".join(dialect.name for dialect in found.owners) if found.claimed else None


def parse_event_query(
    text: str, *, source: str = "<query>", dialect: str | None = None, base_iri: str | None = None
) -> EventQuery:
    """Parse an event query of the given dialect, or of the dialect whose event syntax it uses."""
    if dialect is not None and dialect not in DIALECTS:
        raise InvalidInput(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    check_bounds(text, source=source)
    if dialect is not None:
        with collector_paused(len(text)):
            found = answer(read(DIALECTS[dialect], text), source=source, base_iri=base_iri)
    else:
        found = detect(text, REGISTRY, source=source, base_iri=base_iri).answer
    if isinstance(found, SparqlSyntaxError):
        raise found
    if found is None:
        raise SparqlSyntaxError(
            "not an event query: it has no stream, window or event operator of any dialect (plain SPARQL "
            "goes to the endpoint's /sparql)",
            source=source,
            line=1,
            column=1,
        )
    return found
