"""Continuous queries: `/queries` (register, list), `/queries/{id}` (read,
delete) and `/queries/{id}/events` (matches pushed as Server-Sent Events).

A query is parsed and compiled before it is registered, so a bad query is a
400 with its position and nothing is stored. A new query reads the events
ingested after its registration (`from=now`, the default) or the log from a
position (`from=0`: all history). docs/endpoint.md describes the API.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, request, url_for

from rsep.endpoint.engines import Streaming, match_limit, streaming
from rsep.endpoint.http_errors import BadRequest, NotFound, UnsupportedMediaType
from rsep.endpoint.limits import check_query_count, check_text_size
from rsep.endpoint.parameters import FORM, parameters, single
from rsep.endpoint.plans import compiled
from rsep.endpoint.workers import ServiceUnavailable, client_left, query_slot, take_listener, workers
from rsep.grammar import DIALECTS
from rsep.plugin import (
    FAILED,
    REGIMES,
    ChildCancelled,
    CompileError,
    ConsumptionPolicy,
    ProducerError,
    QueryPlan,
    RegisteredQuery,
    Subscription,
    WindowPlan,
    is_absolute_iri,
    produced_stream,
    query_iri,
    registration_warnings,
)

bp = Blueprint("queries", __name__)

QUERY_BODY = "application/sparql-query"
OPTIONS = ("policy", "dialect", "from", "entailment", "base", "match-limit")
"""The registration options, URL parameters or fields of a form body."""
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@bp.post("/queries")
def register() -> tuple[Response, int, dict[str, str]]:
    text = _query_text()
    _refuse_unknown_parameters()
    return register_text(text, request_options())


def register_text(text: str, options: dict[str, str]) -> tuple[Response, int, dict[str, str]]:
    """Compile and register a continuous query (POST /queries, and a C-SPARQL `REGISTER`
    posted to /sparql): 201 with its Location, or a 400 before anything is stored."""
    service = streaming()
    check_text_size(text, "query")
    check_query_count(len(service.registry.all()))
    start = _start(service)
    try:
        limit = match_limit(options)
        found = workers()
        plan = compiled(text, options.get("dialect"), options, limit, in_child=found.in_child,
                        cancelled=client_left(), timeout=found.timeout, slot=query_slot)  # fmt: skip
    except ChildCancelled:
        raise ServiceUnavailable("the client left before the query was compiled; it was stopped") from None
    except CompileError as error:
        where = error.position
        line, column = (where.line, where.column) if where is not None else (None, None)
        raise BadRequest(error.message, parameter="query", line=line, column=column) from None
    produces = produced_stream(plan)
    with service.registrations:  # checked again: others may have registered while this compiled
        check_query_count(len(service.registry.all()))
        if produces is None:
            query = _create(service, text, plan, start, options)
        else:
            assert isinstance(plan, WindowPlan)
            query = _create_producer(service, text, plan, options)
    location = url_for("queries.read", query_id=query.id)
    body = {"id": query.id, "iri": query.iri, "dialect": query.dialect, "streams": list(query.streams),
            "start": query.start, "warnings": [*plan.warnings, *registration_warnings(plan)]}  # fmt: skip
    if produces is not None:
        body["produces"] = produces
    return jsonify(body), 201, {"Location": location}


def _create(
    service: Streaming, text: str, plan: QueryPlan | WindowPlan, start: int, options: dict[str, str]
) -> RegisteredQuery:
    """Store the registration and hand it to the engine (nothing stays if the engine refuses)."""
    t0 = service.log.time_before(start)  # the registration's time in stream time (its windows' t0)
    query = service.registry.create(text, plan.query.dialect.name, plan.streams, start, options, t0)
    try:
        service.engine.register(query)
    except Exception:
        service.registry.remove(query.id)
        raise
    return query


def _create_producer(
    service: Streaming, text: str, plan: WindowPlan, options: dict[str, str]
) -> RegisteredQuery:
    """A REGISTER STREAM query producing a stream: it starts at the head of the log (its events
    cannot go into the log's past), checked and added while no ingest request runs."""
    if (single(parameters(), "from") or "now") != "now":
        raise BadRequest(
            "a REGISTER STREAM query produces events at the head of the log, which cannot take events "
            "in its past: it reads from=now only",
            parameter="from",
        )
    with service.ingest_lock:
        try:
            service.producers.check(plan)
        except ProducerError as error:
            raise BadRequest(str(error), parameter="query") from None
        query = _create(service, text, plan, service.log.next_position, options)
        try:
            service.producers.add(query, plan)
        except Exception:
            service.registry.remove(query.id)
            service.engine.unregister(query.id)
            raise
    return query


@bp.get("/queries")
def index() -> Response:
    service = streaming()
    return jsonify(
        {"queries": [_summary(service, q) for q in service.registry.all()], "ingest": _ingest(service)}
    )


def _ingest(service: Streaming) -> dict[str, object]:
    """Event time as ingest sees it: late events refused or kept, and with a reorder buffer the
    watermark and the events it holds (docs/endpoint.md, "Event time")."""
    late = service.ingest.late
    body: dict[str, object] = {"late_refused": late.refused, "late_kept": late.kept}
    buffer = service.ingest.buffer
    if buffer is not None:
        watermark = buffer.watermark_time()
        body |= {"watermark": watermark.json() if watermark is not None else None, "held": buffer.held}
    return body


@bp.get("/queries/<query_id>")
def read(query_id: str) -> Response:
    service = streaming()
    query = _registered(service, query_id)
    return jsonify({**_summary(service, query), "text": query.text, "options": dict(query.options)})


@bp.delete("/queries/<query_id>")
def delete(query_id: str) -> tuple[str, int]:
    service = streaming()
    query = service.registry.get(query_id)
    if query is None:
        if request.args.get("purge", "").lower() in TRUE:
            return _purge_unregistered(service, query_id)
        raise NotFound(f"no continuous query {query_id}")
    purge = _flag("purge")
    service.registry.remove(query.id)  # first: a crash now leaves no query to replay
    service.producers.remove(query.id)  # its derived events stay in the log
    service.engine.unregister(query.id, purge=purge)
    return "", 204


def _purge_unregistered(service: Streaming, query_id: str) -> tuple[str, int]:
    """`?purge=true` of a query no longer registered whose match graphs remain (it was deleted
    without purge, or a crash interrupted the purge: the registration goes first) drops them;
    404 when there are none."""
    iri = query_iri(query_id)
    if iri is None or service.sink.count(iri) == 0:
        raise NotFound(f"no continuous query {query_id}")
    service.engine.unregister(query_id, purge=True)
    return "", 204


@bp.get("/queries/<query_id>/events")
def events(query_id: str) -> Response:
    service = streaming()
    query = _registered(service, query_id)
    give_back = take_listener()
    try:
        subscription = service.engine.listeners.subscribe(query.id)
    except BaseException:
        give_back()
        raise
    stream = sse_stream(subscription, query.iri, service.heartbeat)
    response = Response(stream, status=200, content_type="text/event-stream", headers=SSE_HEADERS)
    response.call_on_close(give_back)
    # also when the stream never starts (a HEAD: the subscription stayed, collecting matches)
    response.call_on_close(subscription.close)
    return response


def sse_stream(subscription: Subscription, iri: str, heartbeat: float) -> Iterator[str]:
    """`event: match` per created match graph, a comment line as heartbeat."""
    try:
        yield f": matches of {iri}\n\n"
        while True:
            record = subscription.get(timeout=heartbeat)
            if record is None:
                if subscription.closed:
                    return
                yield ": heartbeat\n\n"
                continue
            yield f"event: match\ndata: {json.dumps(record, ensure_ascii=False)}\n\n"
    finally:
        subscription.close()


# --------------------------------------------------------------------------- reading the request


def _query_text() -> str:
    mimetype = request.mimetype
    if mimetype == QUERY_BODY:
        try:
            text = request.get_data(cache=False).decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("the query is not UTF-8 text", parameter="query") from None
    elif mimetype == FORM:
        parameters()  # each one UTF-8
        text = single(request.form, "query") or ""
    else:
        raise UnsupportedMediaType(
            f"post the query as {QUERY_BODY} (or a form with query=), not {mimetype or 'nothing'}"
        )
    if not text.strip():
        raise BadRequest("missing: the text of the continuous query", parameter="query")
    return text


def _refuse_unknown_parameters() -> None:
    """A misspelt option (`polcy=`) is a 400, not a registration without it."""
    parameters()  # each one UTF-8
    fields = [name for name in request.form if name != "query"] if request.mimetype == FORM else []
    for name in [*request.args, *fields]:
        if name not in OPTIONS:
            raise BadRequest(
                f"unknown parameter; POST /queries takes {', '.join(OPTIONS)} (the query is the body, or "
                "a form's query field)",
                parameter=name,
            )


def request_options() -> dict[str, str]:
    """The registration options of the request (URL parameters or form fields), validated; `from`
    is read by `_start`."""
    params = parameters()
    options: dict[str, str] = {}
    policy = single(params, "policy")
    if policy is not None:
        known = [p.value for p in ConsumptionPolicy]
        if policy not in known:
            raise BadRequest(
                f"{policy!r} is not a consumption policy ({', '.join(known)})", parameter="policy"
            )
        options["policy"] = policy
    dialect = single(params, "dialect")
    if dialect is not None:
        if dialect not in DIALECTS:
            raise BadRequest(
                f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})", parameter="dialect"
            )
        options["dialect"] = dialect
    entailment = single(params, "entailment")
    if entailment is not None:
        if entailment not in REGIMES:
            message = f"unknown entailment regime {entailment!r} (known: {', '.join(REGIMES)})"
            raise BadRequest(message, parameter="entailment")
        options["entailment"] = entailment
    base = single(params, "base")
    if base is not None:
        if not is_absolute_iri(base):
            raise BadRequest(f"expected an absolute IRI, got {base!r}", parameter="base")
        options["base"] = base
    limit = single(params, "match-limit")
    if limit is not None:
        if not (limit.isascii() and limit.isdigit() and int(limit) > 0):
            raise BadRequest(f"expected a positive number of matches, got {limit!r}", parameter="match-limit")
        options["match-limit"] = str(int(limit))
    return options


def _start(service: Streaming) -> int:
    """The log position the query starts at: `from=now` (default) or a position."""
    given = single(parameters(), "from") or "now"
    head = service.log.next_position
    if given == "now":
        return head
    if not (given.isascii() and given.isdigit()) or int(given) > head:  # `²` is a digit int() refuses
        raise BadRequest(f"expected now or a log position from 0 to {head}, got {given!r}", parameter="from")
    return int(given)


TRUE = ("true", "1", "yes")


def _flag(name: str) -> bool:
    value = request.args.get(name, "false").lower()
    if value not in (*TRUE, "false", "0", "no"):
        raise BadRequest(f"expected true or false, got {value!r}", parameter=name)
    return value in TRUE


def _registered(service: Streaming, query_id: str) -> RegisteredQuery:
    query = service.registry.get(query_id)
    if query is None:
        raise NotFound(f"no continuous query {query_id}")
    return query


def _summary(service: Streaming, query: RegisteredQuery) -> dict[str, Any]:
    progress = service.engine.progress(query.id)
    head = service.log.next_position
    summary: dict[str, Any] = {
        "id": query.id,
        "iri": query.iri,
        "href": url_for("queries.read", query_id=query.id),
        "dialect": query.dialect,
        "streams": list(query.streams),
        "created": query.created,
        "start": query.start,
    }
    produces = service.producers.produced(query.id)
    if produces is not None:
        summary["produces"] = produces
    if progress is None:
        return {**summary, "status": query.status, "error": query.error, "events": None, "matches": None,
                "position": None, "lag": None}  # fmt: skip
    failure = service.producers.failure(query.id)
    state, error = (FAILED, failure) if failure is not None else (progress.state, progress.error)
    return {**summary, "status": state, "error": error, "events": progress.events,
            "matches": progress.matches, "position": progress.position,
            "lag": max(0, head - progress.position)}  # fmt: skip


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
