"""Ingest: `POST /streams?stream=<IRI>` with TriG or N-Quads events.

Checks in Fuseki's order: content type (415), the `stream` parameter (400),
the payload (400 with line and column; a bad payload is rejected whole), the
order of timestamps and their kind (400; the log holds xsd:dateTimes or
numbers, never both: they do not compare). The 202 answer is sent only once
the events are fsynced in the event log; then the streaming engine is told.

The REGISTER STREAM queries (rsep.plugin.service.producers) are evaluated at
the closes the request makes final, and the events they derive go into the
request's log record before the events that made them final; a stream such
a query produces takes no events from clients (400).

Events without a `prov:generatedAtTime` get one arrival time per request,
never earlier than the newest event in the log. Blank nodes are scoped to the
request (`r<first log position>`): ingest requests are serialised, so that
number is unique, and a request that fails stores nothing.
"""

from __future__ import annotations

import re

from flask import Blueprint, Flask, Response, jsonify, request

from rsep.endpoint import engines as streaming_setup
from rsep.endpoint.engines import Streaming, streaming
from rsep.endpoint.http_errors import BadRequest, UnsupportedMediaType
from rsep.endpoint.settings import duration
from rsep.plugin import (
    MEDIA_TYPES,
    DataError,
    InvalidInput,
    LateEventError,
    MixedTimeError,
    Submitted,
    Timestamp,
    TooManyCloses,
    parse_events,
    payload_timestamp_position,
)

bp = Blueprint("streams", __name__)

_ABSOLUTE_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\x7f<>\"{}|\\^`]*$")


@bp.post("/streams")
def ingest() -> tuple[Response, int]:
    fmt = _format()
    stream = _stream()
    lateness = _lateness()
    service = streaming()
    data = request.get_data(cache=False)
    with service.ingest_lock:
        not_produced(service, stream)
        arrival = arrival_time(service.ingest.newest())
        try:
            events = parse_events(
                data, fmt, stream, source="body", scope=service.ingest.scope(), default_time=arrival
            )
            submitted = service.ingest.submit(events, lateness)
        except DataError as error:
            raise BadRequest(error.message, parameter="body", line=error.line, column=error.column) from None
        except (LateEventError, TooManyCloses) as error:
            raise BadRequest(str(error), parameter="body") from None
        except MixedTimeError as error:
            raise _mixed_kinds(error, data, arrival) from None
    return jsonify({"stream": stream, **submitted_json(submitted)}), 202


def submitted_json(submitted: Submitted) -> dict[str, object]:
    """The 202's body: what was taken, what it released into the log (positions, derived events),
    and under an event-time policy the watermark, the events held and the late ones kept."""
    appended = submitted.appended
    positions = appended.positions if appended is not None else None
    body: dict[str, object] = {
        "accepted": submitted.accepted,
        "first_position": positions.start if positions is not None else None,
        "next_position": positions.stop if positions is not None else None,
        "derived": [
            {"position": r.position, "stream": r.event.stream, "time": r.event.time.json()}
            for r in (appended.derived if appended is not None else ())
        ],
    }
    if submitted.watermark is not None or submitted.held or submitted.late:
        watermark = submitted.watermark
        body |= {"watermark": watermark.json() if watermark is not None else None,
                 "held": submitted.held, "late": list(submitted.late)}  # fmt: skip
    return body


def _lateness() -> float | None:
    """`max-lateness=` (seconds or PT5S): this stream's allowed lateness from this request on."""
    given = request.args.get("max-lateness")
    if given is None:
        return None
    try:
        return duration(given)
    except InvalidInput as error:
        raise BadRequest(str(error), parameter="max-lateness") from None


def _mixed_kinds(error: MixedTimeError, data: bytes, arrival: Timestamp) -> BadRequest:
    """The 400 for an event of the other kind of time than the log's, at its timestamp triple."""
    message = str(error)
    if error.event.time is arrival:
        message += f" ({error.event.name} has no prov:generatedAtTime: it was given the arrival time)"
    line, column = payload_timestamp_position(data, error.event.name)
    return BadRequest(message, parameter="body", line=line, column=column)


def not_produced(service: Streaming, stream: str) -> None:
    """A stream a REGISTER STREAM query produces takes no events from clients: its events are
    that query's evaluations, in time order with everything else (docs/endpoint.md)."""
    if stream.startswith("urn:rsep:"):
        raise BadRequest(
            f"<{stream}> is one of rsep's own streams: clients do not post to it", parameter="stream"
        )
    owner = service.producers.owner(stream)
    if owner is not None:
        raise BadRequest(
            f"<{stream}> is produced by the continuous query {owner} (REGISTER STREAM): "
            "its events are derived from the query's evaluations, not posted",
            parameter="stream",
        )


def _format() -> str:
    mimetype = request.mimetype
    if mimetype not in MEDIA_TYPES:
        given = mimetype or "no content type"
        raise UnsupportedMediaType(f"events are application/trig or application/n-quads, not {given}")
    return mimetype


def _stream() -> str:
    given = request.args.getlist("stream")
    if len(given) > 1:
        raise BadRequest(f"given {len(given)} times; a request posts to one stream", parameter="stream")
    stream = given[0] if given else None
    if not stream:
        raise BadRequest("missing: the IRI of the stream the events belong to", parameter="stream")
    stream = stream.strip()
    if stream.startswith("<") and stream.endswith(">"):
        stream = stream[1:-1]
    if not _ABSOLUTE_IRI.match(stream):
        raise BadRequest(f"{stream!r} is not an absolute IRI", parameter="stream")
    return stream


def arrival_time(newest: Timestamp | None) -> Timestamp:
    """Now, or the newest accepted xsd:dateTime if that is later (clocks differ), as it was
    written: no conversion of the log's times that could fail (a number, epoch milliseconds or
    abstract units, leaves now, which ingest then refuses as the other kind of time)."""
    now = Timestamp.now()
    if newest is None or newest.numeric or newest.seconds <= now.seconds:
        return now
    return newest


def init_app(app: Flask) -> None:
    """The ingest side owns the event log, so the streaming service starts here."""
    streaming_setup.init_app(app)
    app.register_blueprint(bp)
