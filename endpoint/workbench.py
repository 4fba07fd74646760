"""The query page at `/yasgui`: YASGUI for plain SPARQL (highlighting, a results table, download),
the same editor for the event dialects with a dialect selector and an example per dialect, and a
live timeline of every registered query's matches (vis-timeline).

The editor and the timeline are third-party assets from the npm registry (`ui/package.json`),
which `scripts/setup.sh` copies into `endpoint/static/vendor` and git never holds: without them
the page says how to get them. Everything the page loads comes from the endpoint (it works
offline); YASGUI, CodeMirror and vis-timeline set styles inline, which this page's Content
Security Policy allows for styles only. The examples are the repository's `examples/` folders,
served when the endpoint runs from a checkout (`GET /ui/examples`, 404 from an installed wheel).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from flask import Blueprint, Flask, Response, abort, current_app, render_template, send_from_directory

from rsep.plugin import GraphEvent, parse_events

bp = Blueprint("workbench", __name__)

VENDOR = Path(__file__).resolve().parent / "static" / "vendor"
ASSETS = ("yasgui/yasgui.min.js", "yasgui/yasgui.min.css", "vis-timeline/vis-timeline-graph2d.min.js",
          "vis-timeline/vis-timeline-graph2d.min.css")  # fmt: skip
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
"""The repository's examples (endpoint/ is a top-level folder of the checkout)."""

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)


@bp.get("/yasgui")
def page() -> Response:
    missing = [asset for asset in ASSETS if not (VENDOR / asset).is_file()]
    response = Response(render_template("yasgui.html", missing=missing), mimetype="text/html")
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/ui/examples")
def examples() -> Response:
    """Each example folder's manifest with its query text and the lateness its files need posted
    one at a time; the data files are fetched one by one. `event_time`: the endpoint's policy
    (`--max-lateness`, `--idle-timeout`, `--late`), which the page compares with that need."""
    if not EXAMPLES.is_dir():
        abort(404)
    found = []
    for folder in sorted(path for path in EXAMPLES.iterdir() if (path / "manifest.json").is_file()):
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        query = (folder / "query.rq").read_text(encoding="utf-8")
        files = {**manifest["streams"], **manifest.get("then", {})}
        need = lateness_needed([_events(folder, stream, name) for stream, name in files.items()])
        found.append({"name": folder.name, **manifest, "query": query, "lateness_needed": need})
    config = current_app.config
    policy = {"max_lateness": config["RSEP_MAX_LATENESS"], "idle_timeout": config["RSEP_IDLE_TIMEOUT"],
              "late": config["RSEP_LATE"]}  # fmt: skip
    body = {"examples": found, "event_time": policy}
    return Response(json.dumps(body, ensure_ascii=False), mimetype="application/json")


def _events(folder: Path, stream: str, name: str) -> list[GraphEvent]:
    media = "application/n-quads" if name.endswith(".nq") else "application/trig"
    return parse_events((folder / name).read_bytes(), media, stream, source=name, scope="x")


def lateness_needed(files: Sequence[Sequence[GraphEvent]]) -> float:
    """The smallest `--max-lateness` under which none of these files' events is late when each
    file is posted in one request, in this order, and no stream goes idle meanwhile: the
    watermark before file i is the most any earlier request moved it to, min over the streams
    seen of (their newest - L) (rsep.plugin.service.reorder), and file i's oldest event must
    not be older."""
    newest: dict[str, float] = {}
    moved = -math.inf
    """Max over the requests so far of min over the streams seen of their newest."""
    need = 0.0
    for events in files:
        if not events:
            continue
        need = max(need, moved - min(event.time.seconds for event in events))
        for event in events:
            newest[event.stream] = max(newest.get(event.stream, -math.inf), event.time.seconds)
        moved = max(moved, min(newest.values()))
    return need


@bp.get("/ui/examples/<name>/<path:file>")
def example_file(name: str, file: str) -> Response:
    folder = EXAMPLES / name
    if not (folder / "manifest.json").is_file():
        abort(404)
    return send_from_directory(folder, file, mimetype="text/plain")


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
