"""Matches as named graphs (docs/endpoint.md, "Results").

Each match of a continuous query is one named graph G whose IRI is derived
from the query id, the contributing events' log positions and the solution
mapping, so the same match always gets the same graph (writes are
idempotent). G holds the solution in the W3C result-set vocabulary (SELECT)
or the instantiated template (CONSTRUCT); the graph `urn:rsep:matches` holds
what is known about G: the query that generated it, start and end (typed as
the input wrote them), detection time and the events it was derived from.

Everything here is text (N-Triples terms, N-Quads): the store adapter parses it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rsep.plugin.algebra.terms import iri_nt, literal_nt
from rsep.plugin.graph_events import XSD_DATETIME, Timestamp, timestamp_nt
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.results import Projector, interval_start
from rsep.plugin.vocabulary import EVENT_IRI_PREFIX, MATCH_IRI_PREFIX, MATCHES_GRAPH, PROV, RDF_TYPE, RS, RSEP

_HASH_CHARS = 32


class ResultGraph(Protocol):
    """What the sink writes and listeners receive: a match graph, or a window query's
    evaluation graph (rsep.plugin.service.window_graphs)."""

    @property
    def iri(self) -> str: ...

    def nquads(self) -> str: ...

    def record(self) -> dict[str, object]: ...


@dataclass(frozen=True, slots=True)
class EventRef:
    """What a match graph says about a contributing event."""

    position: int
    name: str
    """The graph name as ingested (N-Triples text of an IRI or blank node)."""
    time: Timestamp
    start: Timestamp | None = None
    """The start of the interval the event spans (`GraphEvent.start`); None for an instant."""

    @property
    def begins(self) -> Timestamp:
        return self.time if self.start is None else self.start

    @property
    def iri(self) -> str:
        """The event graph's IRI, or `urn:rsep:event:<position>` for a blank node."""
        if self.name.startswith("<") and self.name.endswith(">"):
            return self.name[1:-1]
        return f"{EVENT_IRI_PREFIX}{self.position}"


@dataclass(frozen=True, slots=True)
class MatchGraph:
    """One match, ready to be written as a named graph."""

    iri: str
    query_iri: str
    start: Timestamp
    end: Timestamp
    detected: str
    """Detection time, an xsd:dateTime lexical form."""
    derived_from: tuple[str, ...]
    variables: tuple[str, ...]
    bindings: Mapping[str, str]
    """The projected solution: variable -> N-Triples term (unbound ones absent)."""
    triples: tuple[tuple[str, str, str], ...] | None = None
    """CONSTRUCT: the instantiated template (N-Triples terms); None for SELECT."""

    def record(self) -> dict[str, object]:
        """The JSON object pushed to listeners: `rsep run`'s jsonl line plus the graph."""
        return {"start": self.start.json(), "end": self.end.json(), "bindings": dict(self.bindings),
                "graph": self.iri}  # fmt: skip

    def nquads(self) -> str:
        """The graph's content and its metadata in `urn:rsep:matches`, as N-Quads."""
        return "".join(self._content()) + "".join(self._metadata())

    def _content(self) -> Iterator[str]:
        graph = iri_nt(self.iri)
        if self.triples is not None:
            for s, p, o in self.triples:
                yield f"{s} {p} {o} {graph} .\n"
            return
        label = f"_:m{self._label()}"
        rs = f"{label}rs"
        solution = f"{label}s"
        yield f"{rs} <{RDF_TYPE}> <{RS}ResultSet> {graph} .\n"
        for name in self.variables:
            yield f"{rs} <{RS}resultVariable> {literal_nt(name)} {graph} .\n"
        yield f"{rs} <{RS}solution> {solution} {graph} .\n"
        for index, name in enumerate(n for n in self.variables if n in self.bindings):
            binding = f"{label}b{index}"
            yield f"{solution} <{RS}binding> {binding} {graph} .\n"
            yield f"{binding} <{RS}variable> {literal_nt(name)} {graph} .\n"
            yield f"{binding} <{RS}value> {self.bindings[name]} {graph} .\n"

    def _metadata(self) -> Iterator[str]:
        subject = iri_nt(self.iri)
        graph = iri_nt(MATCHES_GRAPH)
        yield f"{subject} <{RDF_TYPE}> <{RSEP}Match> {graph} .\n"
        yield f"{subject} <{PROV}wasGeneratedBy> {iri_nt(self.query_iri)} {graph} .\n"
        yield f"{subject} <{RSEP}start> {timestamp_nt(self.start)} {graph} .\n"
        yield f"{subject} <{RSEP}end> {timestamp_nt(self.end)} {graph} .\n"
        yield f"{subject} <{PROV}generatedAtTime> {literal_nt(self.detected, XSD_DATETIME)} {graph} .\n"
        for event in self.derived_from:
            yield f"{subject} <{PROV}wasDerivedFrom> {iri_nt(event)} {graph} .\n"

    def _label(self) -> str:
        return self.iri.rsplit(":", 1)[-1]


def match_iri(query_id: str, match: Match) -> str:
    """`urn:rsep:match:<query id>:<hash>` of the events and the mapping."""
    key = json.dumps([query_id, list(match.events), sorted(match.mapping.items())], ensure_ascii=False)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return f"{MATCH_IRI_PREFIX}{query_id}:{digest}"


def match_graph(
    query_id: str,
    query_iri: str,
    match: Match,
    events: Sequence[EventRef],
    projector: Projector,
    bindings: Mapping[str, str],
    detected: str,
) -> MatchGraph:
    """The graph of one projected match; `events` in the match's order. It starts when the match
    does (`interval_start`: an EP-SPARQL match over interval events at the earliest start)."""
    iri = match_iri(query_id, match)
    derived = tuple(dict.fromkeys(e.iri for e in events))
    triples = None
    if projector.template is not None:
        triples = projector.construct(match, iri.rsplit(":", 1)[-1])
    start = interval_start(match, events)
    return MatchGraph(iri, query_iri, start, events[-1].time, detected, derived,
                      tuple(projector.names), dict(bindings), triples)  # fmt: skip
