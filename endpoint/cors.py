"""Cross-origin requests (`rsep serve --cors`, `RSEP_CORS`; off by default), as Oxigraph's
`--cors` answers them: any origin (`Access-Control-Allow-Origin: *`), a preflight `OPTIONS`
answered 204 with the methods of the route and the headers asked for.

A preflight carries no `Authorization` header (browsers never send one), so it is answered
before the bearer-token check; the request that follows it carries the token as usual. No
cookies are involved, so the wildcard origin is safe: a page elsewhere can read what its own
requests may read, nothing more.
"""

from __future__ import annotations

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

EXPOSED = "Location, Content-Type, Content-Disposition"
"""Response headers a cross-origin script may read (POST /queries answers with a Location)."""
MAX_AGE = "600"


def preflight() -> Response | None:
    """The answer to a CORS preflight, or None for any other request."""
    if not current_app.config.get("RSEP_CORS") or request.method != "OPTIONS":
        return None
    if "Origin" not in request.headers or "Access-Control-Request-Method" not in request.headers:
        return None
    try:
        methods = request.url_rule.methods if request.url_rule is not None else None
    except HTTPException:
        methods = None
    if not methods:
        return None  # no such route: the usual 404
    response = Response(status=204)
    response.headers["Access-Control-Allow-Methods"] = ", ".join(sorted(methods))
    asked = request.headers.get("Access-Control-Request-Headers")
    if asked:
        response.headers["Access-Control-Allow-Headers"] = asked
    response.headers["Access-Control-Max-Age"] = MAX_AGE
    return response


def allow_origin(response: Response) -> Response:
    if current_app.config.get("RSEP_CORS") and "Origin" in request.headers:
        response.headers["Access-Control-Allow-Origin"] = "*"
        response.headers["Access-Control-Expose-Headers"] = EXPOSED
        response.vary.add("Origin")
    return response


def init_app(app: Flask) -> None:
    """Registered before the token check (`http_errors.init_app`), which a preflight skips."""
    app.before_request(preflight)
    app.after_request(allow_origin)
