"""`POST /streams/merged`: several event files of several streams in one request, merged by time as
`rsep post` merges them, for the query page (a browser cannot parse TriG to merge files itself).

The body is `multipart/form-data`: per file a `stream` field (its stream IRI) followed by the file
(`events`; TriG, or N-Quads when its name ends in `.nq` or its part says `application/n-quads`).
Every file is parsed before anything is stored, the events of all files are merged by time (ties
in the order of the files, then of each file) and appended as ONE request of `POST /streams`
would append them: one fsynced record, REGISTER STREAM producers evaluated, the same 400s (the
file's name, line and column; an event older than the log's newest; a produced stream), 202 once
durable. Blank nodes are scoped per file.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response, jsonify, request
from werkzeug.datastructures import FileStorage

from rsep.endpoint.engines import streaming
from rsep.endpoint.http_errors import BadRequest, UnsupportedMediaType
from rsep.endpoint.streams import arrival_time, not_produced, submitted_json
from rsep.plugin import (
    DataError,
    GraphEvent,
    LateEventError,
    MixedTimeError,
    Timestamp,
    TooManyCloses,
    is_absolute_iri,
    parse_events,
)

bp = Blueprint("merged_ingest", __name__)


@bp.post("/streams/merged")
def ingest_merged() -> tuple[Response, int]:
    if request.mimetype != "multipart/form-data":
        raise UnsupportedMediaType(
            f"post multipart/form-data (stream, events, ...), not {request.mimetype or 'nothing'}"
        )
    files = _files()
    service = streaming()
    with service.ingest_lock:
        for stream, _ in files:
            not_produced(service, stream)
        arrival = arrival_time(service.ingest.newest())
        scope = service.ingest.scope()
        events = merged(
            [_parse(stream, part, f"{scope}f{index}", arrival) for index, (stream, part) in enumerate(files)]
        )
        try:
            submitted = service.ingest.submit(events)
        except (LateEventError, MixedTimeError, TooManyCloses) as error:
            raise BadRequest(str(error), parameter="events") from None
    streams = sorted({stream for stream, _ in files})
    return jsonify({"streams": streams, **submitted_json(submitted)}), 202


def _files() -> list[tuple[str, FileStorage]]:
    """(stream IRI, file) pairs, in the order of the form: the n-th `stream` names the n-th file."""
    streams = [value.strip().strip("<>") for value in request.form.getlist("stream")]
    parts = request.files.getlist("events")
    if not parts:
        raise BadRequest("missing: one or more files, each after its stream IRI", parameter="events")
    if len(streams) != len(parts):
        raise BadRequest(
            f"{len(streams)} stream IRIs for {len(parts)} files: give one per file", parameter="stream"
        )
    for stream in streams:
        if not is_absolute_iri(stream):
            raise BadRequest(f"{stream!r} is not an absolute IRI", parameter="stream")
    return list(zip(streams, parts, strict=True))


def _parse(stream: str, part: FileStorage, scope: str, arrival: Timestamp) -> list[GraphEvent]:
    name = part.filename or "events"
    nquads = name.endswith(".nq") or part.mimetype in ("application/n-quads", "text/x-nquads")
    fmt = "application/n-quads" if nquads else "application/trig"
    try:
        return parse_events(part.read(), fmt, stream, source=name, scope=scope, default_time=arrival)
    except DataError as error:
        raise BadRequest(error.message, parameter=name, line=error.line, column=error.column) from None


def merged(files: list[list[GraphEvent]]) -> list[GraphEvent]:
    """All files' events by time; ties keep the order of the files, then of each file."""
    order = sorted(
        (event.time.seconds, f, i) for f, events in enumerate(files) for i, event in enumerate(events)
    )
    return [files[f][i] for _, f, i in order]


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
