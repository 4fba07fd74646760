"""The page at `/`: a small workbench on the endpoint's own HTTP API.

Plain HTML (`templates/index.html`), CSS and JavaScript (`static/rsep.css`, `static/rsep.js`)
served by Flask, with no build step and nothing loaded from another host, so the page works
offline. It runs SPARQL queries and updates (`/sparql`), loads RDF data (`/store`), registers
event queries (`/queries`), ingests events (`/streams`), lists the registered queries with their
counts, and shows a query's matches as they arrive (`/queries/{id}/events`, Server-Sent Events).

The page and the static files are exempt from the bearer-token check (`http_errors.check_token`):
the token is typed into the page, kept in the browser's localStorage, and sent by the page's
requests as `Authorization: Bearer`.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response, render_template

bp = Blueprint("ui", __name__)

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
"""Everything the page loads comes from the endpoint itself; no inline script or style."""


@bp.get("/")
def index() -> Response:
    response = Response(render_template("index.html"), mimetype="text/html")
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def init_app(app: Flask) -> None:
    """Register the page. Its static files are the application's (`endpoint/static`, served at
    `/static/`), its template is in `endpoint/templates`."""
    app.register_blueprint(bp)
