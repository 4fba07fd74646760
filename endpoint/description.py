"""The SPARQL 1.1 Service Description: what GET /sparql, /query or /update without a query or
update answers, as Oxigraph's server does (in an RDF format chosen by content negotiation,
Turtle by default). rsep's own part, the event dialects and routes, is listed here from the
grammar's registry and the blueprints; `rsep.plugin`'s `describe_service` writes it with
pyoxigraph.
"""

from __future__ import annotations

from typing import Literal

from flask import Response, current_app, request

from rsep.endpoint.negotiation import content_type, negotiate_request
from rsep.grammar import DIALECTS
from rsep.plugin import (
    GRAPH_MEDIA_TYPES,
    OFFERS,
    ServiceDescription,
    ServiceDialect,
    ServiceRoute,
    describe_service,
)

TITLES = {"spaseq": "SPAseq", "ep-sparql": "EP-SPARQL", "c-sparql": "C-SPARQL", "cqels": "CQELS-QL"}
"""How the papers write each dialect's name (the `dialect=` names are DIALECTS' keys)."""

ROUTES = (
    ("ContinuousQueries", "Continuous event queries",
     "POST a query in an event dialect to register it (201 and its Location); GET lists them", "queries"),
    ("EventIngest", "Event ingest",
     "POST TriG or N-Quads events of the stream named by ?stream=IRI, in time order (202 once durable)",
     "streams"),
    ("MatchResults", "Matches as SPARQL results",
     "GET a query's matches as SPARQL JSON results, one row per match with start and end",
     "queries/{id}/results"),
    ("MatchPush", "Matches pushed as Server-Sent Events",
     "GET a text/event-stream of a query's matches as they are detected", "queries/{id}/events"),
    ("MatchGraphs", "Matches as named graphs",
     "every match is a named graph, described in the graph urn:rsep:matches, read with SPARQL", "sparql"),
)  # fmt: skip
"""(feature, title, what it does, path under the endpoint's root) of each event route."""


def wants_description() -> bool:
    """A GET (or HEAD) with no parameter but `format` asks for the description; one with other
    parameters (a dataset, say) but no query is a query missing its text (400)."""
    return request.method in ("GET", "HEAD") and all(name == "format" for name in request.args)


def description_response(languages: Literal["query", "update", "both"]) -> Response:
    """The description of the endpoint at the request's URL (`languages`: query, update or both)."""
    root = request.host_url
    description = ServiceDescription(
        endpoint=request.base_url,
        languages=languages,
        result_formats=tuple(dict.fromkeys([*OFFERS["solutions"], *OFFERS["graph"]])),
        union_default_graph=bool(current_app.config.get("RSEP_UNION_DEFAULT_GRAPH")),
        dialects=tuple(ServiceDialect(name, TITLES.get(name, name)) for name in DIALECTS),
        routes=tuple(
            ServiceRoute(feature, title, comment, root + path) for feature, title, comment, path in ROUTES
        ),
    )
    chosen = negotiate_request(GRAPH_MEDIA_TYPES)
    response = Response(
        describe_service(description, chosen.offer), content_type=content_type(chosen.media_type)
    )
    response.vary.add("Accept")
    return response
