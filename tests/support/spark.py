"""Builders for the Spark stage tests: event queries from algebra nodes (no
parser), events with N-Triples payloads, and the in-process reference run.

The session-scoped `spark` fixture lives in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyoxigraph as ox

from rsep.grammar.spaseq import SPASEQ
from rsep.plugin.algebra.events import (
    Duration,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    MatchElement,
    SelectForm,
    StreamDecl,
)
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    XSD_INTEGER,
    BinaryOp,
    Expr,
    Filter,
    GraphGraphPattern,
    GroupPattern,
    Literal,
    Node,
    OptionalPattern,
    TriplePattern,
    Var,
)
from rsep.plugin.compile.query_plan import QueryPlan, compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

S1 = "urn:stream:1"
S2 = "urn:stream:2"
EV = "urn:ev"
"""Every event's triples describe this subject, so GPMs need no subject variable."""
KB = "urn:kb"


def term(text: str) -> Var | IRI | Literal:
    """`?x` a variable, `<iri>` an IRI, digits an xsd:integer, else a string."""
    if text.startswith("?"):
        return Var(text[1:])
    if text.startswith("<") and text.endswith(">"):
        return IRI(text[1:-1])
    if text.lstrip("-").isdigit():
        return Literal(text, XSD_INTEGER)
    return Literal(text)


def bgp(*triples: str) -> BGP:
    """Triple patterns written `s p o` with `term`'s notation."""
    patterns = []
    for triple in triples:
        s, p, o = triple.split()
        predicate = term(p)
        assert isinstance(predicate, (IRI, Var))
        patterns.append(TriplePattern(term(s), predicate, term(o)))
    return BGP(tuple(patterns))


def compare(op: str, left: str, right: str) -> Filter:
    return Filter(BinaryOp(op, _expr(left), _expr(right)))


def _expr(text: str) -> Expr:
    return term(text)


def in_kb(*elements: Node) -> GraphGraphPattern:
    return GraphGraphPattern(IRI(KB), GroupPattern(tuple(elements)))


def optional(*elements: Node) -> OptionalPattern:
    return OptionalPattern(GroupPattern(tuple(elements)))


def gpm(name: str, *elements: Node, streams: Sequence[str] = (S1,)) -> GraphPatternEvent:
    return GraphPatternEvent(name, tuple(streams), GroupPattern(tuple(elements)))


def typed(
    name: str, kind: str, *extra: Node, value: str | None = None, **options: object
) -> GraphPatternEvent:
    """A GPM matching events of `<urn:{kind}>`, binding ?k (the shared key) and
    optionally its own value variable."""
    triples = [f"<{EV}> <urn:type> <urn:{kind}>", f"<{EV}> <urn:k> ?k"]
    if value is not None:
        triples.append(f"<{EV}> <urn:v> ?{value}")
    return gpm(name, bgp(*triples), *extra, **options)  # type: ignore[arg-type]


def query(pattern: EventPattern, streams: Sequence[str] = (S1,), within: float | None = None) -> EventQuery:
    return EventQuery(
        dialect=SPASEQ,
        form=SelectForm(None),
        streams=tuple(StreamDecl(s) for s in streams),
        where=GroupPattern((MatchElement(pattern),)),
        within=Duration(within) if within is not None else None,
    )


def plan_of(pattern: EventPattern, streams: Sequence[str] = (S1,), within: float | None = None) -> QueryPlan:
    return compile_query(query(pattern, streams, within))


def nt_term(text: str) -> str:
    """N-Triples for `term`'s notation (no variables)."""
    value = term(text)
    if isinstance(value, IRI):
        return f"<{value.value}>"
    assert isinstance(value, Literal)
    if value.datatype == XSD_INTEGER:
        return f'"{value.lexical}"^^<{XSD_INTEGER}>'
    return f'"{value.lexical}"'


def event(
    time: int, kind: str | None, key: str | None = None, value: int | None = None, *, stream: str = S1
) -> GraphEvent:
    """An event of type `<urn:{kind}>` with key and value (kind None: no triples)."""
    lines = []
    if kind is not None:
        lines.append(f"<{EV}> <urn:type> <urn:{kind}> .\n")
    if key is not None:
        lines.append(f'<{EV}> <urn:k> "{key}" .\n')
    if value is not None:
        lines.append(f'<{EV}> <urn:v> "{value}"^^<{XSD_INTEGER}> .\n')
    return GraphEvent(
        stream, f"<urn:event:{time}>", Timestamp.from_literal(str(time), XSD_INTEGER), "".join(lines)
    )


def numbered(*streams: Iterable[GraphEvent]) -> list[NumberedEvent]:
    return number_events([sorted(s, key=lambda e: e.time.seconds) for s in streams])


def knowledge_base(*triples: str) -> KnowledgeBase:
    """A knowledge base with `s p o` triples (term notation) in graph KB."""
    store = ox.Store()
    text = "".join(f"{' '.join(nt_term(t) for t in triple.split())} <{KB}> .\n" for triple in triples)
    store.load(text.encode(), ox.RdfFormat.N_QUADS)
    return KnowledgeBase(store)


def reference(
    plan: QueryPlan, kb: KnowledgeBase, events: Sequence[NumberedEvent], batch_size: int = 5000
) -> list[Match]:
    """What the in-process replay finds: the Spark stage must agree exactly."""
    return Replay(plan, GpmEvaluator(plan.gpms, kb), batch_size=batch_size).run(events)


def found(matches: Iterable[Match]) -> list[tuple[tuple[int, ...], dict[str, str]]]:
    """Matches as (event ids, mapping without the literal decorations) for
    readable expectations: `"k1"` -> k1, `"3"^^xsd:integer` -> 3."""
    return [(m.events, {k: _plain(v) for k, v in sorted(m.mapping.items())}) for m in matches]


def _plain(value: str) -> str:
    if value.endswith(f"^^<{XSD_INTEGER}>"):
        return value[1 : value.index('"', 1)]
    return value.strip('"')
