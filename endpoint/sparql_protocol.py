"""The SPARQL 1.1 Protocol at /sparql: queries by GET or POST, updates by POST.

A request is checked in Fuseki's order: method (405, by the route), content type (415),
parameters (400 naming the parameter), then the text (400 with line and column). Plain SPARQL is
checked with our grammar first, for its positions and messages in a user's words, and Oxigraph
then runs the text exactly as the client sent it (a text over `FULL_READ_SIZE` only has its
nesting bounded first, `rsep.grammar.limits`, and is read by our grammar if Oxigraph rejects
it). Text our grammar does not read goes to Oxigraph as well, unless it uses a dialect's event
syntax (`event_query_or_plain`): Oxigraph reads more than SPARQL 1.1 (LATERAL, RDF 1.2 triple
terms, ADJUST). What only Oxigraph rejects gets its error with its line and column, what neither
reads ours (`rejection`). An event query posted here is recognised and answered by
`_event_query_response`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from flask import Blueprint, Flask, Response, current_app, make_response, request

from rsep.endpoint.description import description_response, wants_description
from rsep.endpoint.http_errors import ApiError, BadRequest, UnsupportedMediaType, error_response
from rsep.endpoint.limits import check_text_size
from rsep.endpoint.negotiation import content_type, negotiate_request, parse_content_type
from rsep.endpoint.parameters import FORM, Params, parameters
from rsep.endpoint.queries import register_text, request_options
from rsep.endpoint.resources import resources
from rsep.endpoint.workers import evaluate_query
from rsep.grammar import SparqlSyntaxError, parse_event_query, parse_query, parse_update
from rsep.grammar.dialects import event_syntax
from rsep.grammar.parser import check_bounds
from rsep.grammar.updates import with_using_clauses as add_using_clauses
from rsep.plugin import OFFERS, Dataset, EventQuery, QueryForm, QuerySyntaxError, is_absolute_iri

bp = Blueprint("sparql", __name__)

QUERY_BODY = "application/sparql-query"
UPDATE_BODY = "application/sparql-update"
QUERY_DATASET = ("default-graph-uri", "named-graph-uri")
UPDATE_DATASET = ("using-graph-uri", "using-named-graph-uri")

Kind = Literal["query", "update"]

SERVICE_KEYWORD = re.compile(r"\bSERVICE\b", re.IGNORECASE)
"""A query that may call a remote endpoint (a match in a literal only costs the stall check of
its child process, rsep.plugin.service.query_child)."""
FULL_READ_SIZE = 64 * 1024
"""Texts longer than this go to Oxigraph first, after the bounds check (`check_bounds`): rsep's
grammar, some 50 times slower than Oxigraph's parser on large texts (bench/bench_parse.py),
reads them only when Oxigraph does not (for its position and message, or event syntax)."""


@dataclass(frozen=True, slots=True)
class Operation:
    """What a protocol request asks for: a query or an update, its text as sent, and the
    dataset the protocol parameters give (None: the one the text names, or the store's)."""

    kind: Kind
    text: str
    dataset: Dataset | None


@bp.route("/sparql", methods=["GET", "POST"])
@bp.route("/sparql/", methods=["GET", "POST"])
def sparql() -> Response:
    if wants_description():
        return description_response("both")
    operation = read_operation()
    return run_query(operation) if operation.kind == "query" else run_update(operation)


@bp.route("/query", methods=["GET", "POST"])
def query() -> Response:
    """Oxigraph's and Fuseki's query endpoint: /sparql for queries only."""
    if wants_description():
        return description_response("query")
    return run_query(read_operation(only="query"))


@bp.route("/update", methods=["GET", "POST"])
def update() -> Response:
    """Oxigraph's and Fuseki's update endpoint: /sparql for updates only (a GET is answered with
    its service description: updates need a POST)."""
    if wants_description():
        return description_response("update")
    return run_update(read_operation(only="update"))


# --------------------------------------------------------------------------- reading the request


def read_operation(only: Kind | None = None) -> Operation:
    """The operation of the current request; 415 and 400 errors for what does not fit the protocol
    (or the route: `only` is the one kind /query and /update take)."""
    if request.method in ("GET", "HEAD"):
        return _only(_operation(parameters()), only)
    ctype = parse_content_type(request.headers.get("Content-Type"))
    bodies = {"query": (QUERY_BODY,), "update": (UPDATE_BODY,), None: (QUERY_BODY, UPDATE_BODY)}[only]
    kinds = f"{FORM} or {' or '.join(bodies)}"
    if ctype is None:
        raise UnsupportedMediaType(f"a POST needs a Content-Type: {kinds}")
    if ctype.media_type not in (FORM, *bodies):
        raise UnsupportedMediaType(f"{ctype.media_type} is not a SPARQL request here; use {kinds}")
    if not ctype.utf8:
        raise UnsupportedMediaType(f"charset={ctype.charset}: SPARQL requests are UTF-8")
    if ctype.media_type == FORM:
        return _only(_operation(parameters()), only)
    kind: Kind = "query" if ctype.media_type == QUERY_BODY else "update"
    return _operation(parameters(), body=(kind, _body_text()))


def _only(operation: Operation, only: Kind | None) -> Operation:
    if only is not None and operation.kind != only:
        other = "update" if only == "query" else "query"
        article = {"query": "a query", "update": "an update"}
        raise BadRequest(
            f"/{only} takes {article[only]}, not {article[other]}: send it to /{other} or /sparql",
            parameter=other,
        )
    return operation


def _body_text() -> str:
    try:
        return request.get_data().decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(f"not UTF-8 (byte {error.start})", parameter="body") from None


def _operation(params: Params, body: tuple[Kind, str] | None = None) -> Operation:
    if body is not None:
        for name in ("query", "update"):
            if name in params:
                raise BadRequest(
                    f"the request body is the {body[0]}; do not also send the parameter {name}",
                    parameter=name,
                )
        kind, text = body
    else:
        kind, text = _text_parameter(params)
    check_text_size(text, kind)
    return Operation(kind, text, _dataset(params, kind))


def _text_parameter(params: Params) -> tuple[Kind, str]:
    queries, updates = params.getlist("query"), params.getlist("update")
    if queries and updates:
        raise BadRequest("a request carries a query or an update, not both", parameter="update")
    for name, values in (("query", queries), ("update", updates)):
        if len(values) > 1:
            raise BadRequest(f"given {len(values)} times; send one {name} per request", parameter=name)
    if updates and request.method != "POST":
        raise BadRequest("updates must be sent with POST", parameter="update")
    if queries:
        return "query", queries[0]
    if updates:
        return "update", updates[0]
    raise BadRequest("missing: send ?query=... (GET or POST), or update=... (POST)", parameter="query")


def _dataset(params: Params, kind: Kind) -> Dataset | None:
    """The protocol dataset: default-graph-uri/named-graph-uri for a query, using-graph-uri/
    using-named-graph-uri for an update; the other pair is a client mistake."""
    own, other = (QUERY_DATASET, UPDATE_DATASET) if kind == "query" else (UPDATE_DATASET, QUERY_DATASET)
    for name in other:
        if name in params:
            raise BadRequest(f"applies to {'updates' if kind == 'query' else 'queries'} only", parameter=name)
    graphs = [params.getlist(name) for name in own]
    for name, iris in zip(own, graphs, strict=True):
        for iri in iris:
            if not is_absolute_iri(iri):
                raise BadRequest(f"not an absolute IRI: {iri!r}", parameter=name)
    if not any(graphs):
        return None
    return Dataset(tuple(graphs[0]), tuple(graphs[1]))


# --------------------------------------------------------------------------- queries


def run_query(operation: Operation) -> Response:
    if len(operation.text) > FULL_READ_SIZE:
        check_bounds(operation.text, source="query")
        try:
            return _answer_query(operation)
        except QuerySyntaxError:
            pass  # ours reads it, for its position and message, or its event syntax
    ours: SparqlSyntaxError | None = None
    try:
        parse_query(operation.text, source="query", base_iri=request.base_url)
    except SparqlSyntaxError as error:
        response = _event_query_response(operation, error)
        if response is not None:
            return response
        ours = error
    try:
        return _answer_query(operation)
    except QuerySyntaxError as theirs:
        raise rejection(ours, theirs) from None


def _answer_query(operation: Operation) -> Response:
    """Oxigraph's answer to the query (`QuerySyntaxError` if it does not read it either)."""
    labels: dict[str, str] = {}
    chosen: dict[str, str | ApiError] = {}
    for form, offers in OFFERS.items():  # negotiated here: the query runs on the query pool
        try:
            found = negotiate_request(offers)
        except ApiError as error:
            chosen[form] = error
        else:
            chosen[form], labels[found.offer] = found.offer, found.media_type

    def choose(form: QueryForm) -> str:
        """The offer to serialise as (its Content-Type, the offer or the alias the client named,
        is in `labels`)."""
        offer = chosen[form]
        if isinstance(offer, ApiError):
            raise offer
        return offer

    kb, base, dataset = resources().kb, request.base_url, operation.dataset
    union = bool(current_app.config["RSEP_UNION_DEFAULT_GRAPH"])  # read here: the query runs on the pool
    media_type, body = evaluate_query(
        lambda: kb.query(
            operation.text, choose=choose, base_iri=base, dataset=dataset, union_default_graph=union
        ),
        probe=kb.probe,
        remote=SERVICE_KEYWORD.search(operation.text) is not None,
    )
    response = Response(body, content_type=content_type(labels[media_type]))
    response.vary.add("Accept")
    return response


def event_query_or_plain(text: str, plain: SparqlSyntaxError) -> EventQuery | None:
    """What a text that SPARQL 1.1 as rsep reads it rejects (`plain`) is: an event query, None for
    plain SPARQL (beyond our grammar, which Oxigraph judges: LATERAL, triple terms, ADJUST, ...;
    or mistaken, which gets SPARQL 1.1's error), or a malformed event query, whose dialect error
    is raised: the one POST /queries gives for the same text.

    A text is an event query when a dialect's grammar reads one of its event constructs in it (a
    stream, a window, an event operator, `getDURATION()`, ...: `event_syntax`), whether or not
    the text then parses; one that only a dialect's leniency reads (EP-SPARQL's draft projection
    `?a / ?b AS ?c`) is plain SPARQL. A text our grammar read whole but for a static rule is plain
    (`plain` is raised)."""
    if plain.static:
        raise plain
    if event_syntax(text) is None:
        return None
    try:
        return parse_event_query(text, source=plain.source, base_iri=request.base_url)
    except SparqlSyntaxError:  # a ValueError too: its dialect's positioned error, as it is
        raise
    except ValueError as error:  # a dialect read it and rejected it
        raise BadRequest(str(error), parameter=plain.source) from None


def rejection(ours: SparqlSyntaxError | None, theirs: QuerySyntaxError) -> Exception:
    """The error to answer when Oxigraph rejects a text: ours if our grammar rejected it too (its
    position is where SPARQL 1.1 stops, its message names what was expected in a user's words;
    Oxigraph's PEG parser reports the furthest point any alternative looked at, which for
    `CLEAR XYZ` is the end of the text), else Oxigraph's, with its line and column."""
    return theirs if ours is None else ours


def _event_query_response(operation: Operation, plain: SparqlSyntaxError) -> Response | None:
    """What /sparql answers to a continuous (event) query, or None if the text is plain SPARQL.

    A C-SPARQL `REGISTER QUERY|STREAM name AS ...` posted here is registered as by POST
    /queries (same options, from the URL or the form body, same answer; the protocol dataset
    does not apply to it); other event queries are registered with POST /queries, which this
    answer says."""
    query = event_query_or_plain(operation.text, plain)
    if query is None:
        return None
    if query.name is not None and request.method == "POST":
        _refuse_dataset(operation.dataset)
        return make_response(register_text(operation.text, request_options()))
    message = (
        "a REGISTER query changes the service: send it with POST"
        if query.name is not None
        else "this is a continuous event query, which /sparql does not run: register it with POST /queries"
    )
    return error_response(BadRequest(message, parameter="query"))


def _refuse_dataset(dataset: Dataset | None) -> None:
    if dataset is not None:
        parameter = QUERY_DATASET[0] if dataset.default_graphs else QUERY_DATASET[1]
        raise BadRequest(
            "a registered query reads its streams and the store's graphs as its text says; the "
            "protocol dataset does not apply to it",
            parameter=parameter,
        )


# --------------------------------------------------------------------------- updates


def run_update(operation: Operation) -> Response:
    base = request.base_url
    text = operation.text
    if len(text) > FULL_READ_SIZE and operation.dataset is None:
        check_bounds(text, source="update")
        try:
            return _updated(text, base)
        except QuerySyntaxError:
            pass  # ours reads it, for its position and message
    try:
        parse_update(text, source="update", base_iri=base)
    except SparqlSyntaxError as error:
        if error.static or operation.dataset is not None:  # USING clauses go where our parser says
            raise
        _refuse_event_query_as_update(text)
        ours: SparqlSyntaxError | None = error
    else:
        ours = None
        if operation.dataset is not None:
            text = with_using_clauses(text, operation.dataset)
    try:
        return _updated(text, base)
    except QuerySyntaxError as theirs:
        raise rejection(ours, theirs) from None


def _updated(text: str, base: str) -> Response:
    resources().kb.update(text, base_iri=base)
    response = Response(status=204)
    del response.headers["Content-Type"]  # no body, so no type
    return response


def _refuse_event_query_as_update(text: str) -> None:
    """A 400 for an event query sent as an update (its dialect's error if it is malformed); an
    update our grammar does not read, or a query sent as an update, is Oxigraph's to judge."""
    try:
        parse_query(text, source="update", base_iri=request.base_url)
    except SparqlSyntaxError as error:
        if event_query_or_plain(text, error) is not None:
            message = "this is a continuous event query, not an update: register it with POST /queries"
            raise BadRequest(message, parameter="update") from None


def with_using_clauses(text: str, dataset: Dataset) -> str:
    """The update with the protocol's using-graph-uri/using-named-graph-uri parameters as the
    USING clauses of every operation with a WHERE (SPARQL 1.1 Protocol §2.2.3,
    `rsep.grammar.updates`); 400 if the update already has USING or WITH."""
    found = add_using_clauses(text, dataset.default_graphs, dataset.named_graphs)
    if found is None:
        parameter = UPDATE_DATASET[0] if dataset.default_graphs else UPDATE_DATASET[1]
        raise BadRequest("cannot be used with an update that has USING or WITH", parameter=parameter)
    return found


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
