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
from pathlib import Path

from flask import Blueprint, Flask, Response, abort, render_template, send_from_directory

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
    """Each example folder's manifest with its query text; the data files are fetched one by one."""
    if not EXAMPLES.is_dir():
        abort(404)
    found = []
    for folder in sorted(path for path in EXAMPLES.iterdir() if (path / "manifest.json").is_file()):
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        query = (folder / "query.rq").read_text(encoding="utf-8")
        found.append({"name": folder.name, **manifest, "query": query})
    return Response(json.dumps({"examples": found}, ensure_ascii=False), mimetype="application/json")


@bp.get("/ui/examples/<name>/<path:file>")
def example_file(name: str, file: str) -> Response:
    folder = EXAMPLES / name
    if not (folder / "manifest.json").is_file():
        abort(404)
    return send_from_directory(folder, file, mimetype="text/plain")


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
