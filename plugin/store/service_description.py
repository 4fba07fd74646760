"""The SPARQL 1.1 Service Description of the endpoint (https://www.w3.org/TR/sparql11-service-description/),
written by pyoxigraph's serialisers.

What Oxigraph's server describes (the languages, the result formats by their W3C format IRIs,
`sd:EmptyGraphs`, `sd:BasicFederatedQuery`, `sd:UnionDefaultGraph` when it is on, simple
entailment) and what rsep adds: each event dialect as an `sd:languageExtension` and each
event route (`/queries`, `/streams`, the matches as results and as Server-Sent Events) as an
`sd:feature`, with a label, what it does, and its address on this server (`rsep:endpoint`).
The HTTP edge gives the names; this module owns the vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pyoxigraph as ox

SD = "http://www.w3.org/ns/sparql-service-description#"
RSEP = "https://w3id.org/rsep#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
RDFS_COMMENT = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#comment")
PREFIXES = {"sd": SD, "rsep": RSEP, "rdfs": "http://www.w3.org/2000/01/rdf-schema#"}

Languages = Literal["query", "update", "both"]


@dataclass(frozen=True, slots=True)
class ServiceDialect:
    """An event dialect the endpoint reads: its `dialect=` name and a title."""

    name: str
    title: str


@dataclass(frozen=True, slots=True)
class ServiceRoute:
    """An event route: the feature's local name in the rsep vocabulary, its title, what it does,
    and its address on this server (a URL template for per-query routes)."""

    feature: str
    title: str
    comment: str
    address: str


@dataclass(frozen=True, slots=True)
class ServiceDescription:
    endpoint: str
    """The absolute URL of the endpoint described (`/sparql`, `/query` or `/update`)."""
    languages: Languages
    result_formats: Sequence[str]
    """Media types of the answers, each with a W3C format IRI (pyoxigraph knows them)."""
    union_default_graph: bool
    dialects: Sequence[ServiceDialect] = ()
    routes: Sequence[ServiceRoute] = ()


def describe_service(description: ServiceDescription, media_type: str) -> bytes:
    """The description serialised as `media_type` (an RDF media type pyoxigraph writes)."""
    rdf_format = ox.RdfFormat.from_media_type(media_type)
    if rdf_format is None:
        raise ValueError(f"not an RDF media type: {media_type}")
    written = ox.serialize(triples(description), format=rdf_format, prefixes=PREFIXES)
    assert written is not None  # no output given: the bytes are returned
    return written


def triples(description: ServiceDescription) -> list[ox.Triple]:
    service = ox.BlankNode()
    out = [
        ox.Triple(service, RDF_TYPE, _sd("Service")),
        ox.Triple(service, _sd("endpoint"), ox.NamedNode(description.endpoint)),
    ]
    if description.languages in ("query", "both"):
        out += [
            ox.Triple(service, _sd("supportedLanguage"), _sd(name))
            for name in ("SPARQL10Query", "SPARQL11Query")
        ]
    if description.languages in ("update", "both"):
        out.append(ox.Triple(service, _sd("supportedLanguage"), _sd("SPARQL11Update")))
    if description.languages != "update":
        out += [ox.Triple(service, _sd("resultFormat"), _format_iri(m)) for m in description.result_formats]
        out.append(ox.Triple(service, _sd("feature"), _sd("BasicFederatedQuery")))
    out.append(ox.Triple(service, _sd("feature"), _sd("EmptyGraphs")))
    if description.union_default_graph:
        out.append(ox.Triple(service, _sd("feature"), _sd("UnionDefaultGraph")))
    simple = ox.NamedNode("http://www.w3.org/ns/entailment/Simple")
    out.append(ox.Triple(service, _sd("defaultEntailmentRegime"), simple))
    details: list[ox.Triple] = []  # after the service's own triples, which Turtle then groups
    for dialect in description.dialects:
        node = _rsep(f"dialect-{dialect.name}")
        out.append(ox.Triple(service, _sd("languageExtension"), node))
        details += [
            ox.Triple(node, RDFS_LABEL, ox.Literal(dialect.title)),
            ox.Triple(node, _rsep("dialectName"), ox.Literal(dialect.name)),
        ]
    for route in description.routes:
        node = _rsep(route.feature)
        out.append(ox.Triple(service, _sd("feature"), node))
        details += [
            ox.Triple(node, RDFS_LABEL, ox.Literal(route.title)),
            ox.Triple(node, RDFS_COMMENT, ox.Literal(route.comment)),
            ox.Triple(node, _rsep("endpoint"), ox.Literal(route.address)),
        ]
    return out + details


def _format_iri(media_type: str) -> ox.NamedNode:
    known = ox.QueryResultsFormat.from_media_type(media_type) or ox.RdfFormat.from_media_type(media_type)
    if known is None:
        raise ValueError(f"no format IRI for {media_type}")
    return ox.NamedNode(known.iri)


def _sd(name: str) -> ox.NamedNode:
    return ox.NamedNode(SD + name)


def _rsep(name: str) -> ox.NamedNode:
    return ox.NamedNode(RSEP + name)
