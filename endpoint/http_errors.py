"""The endpoint's errors and the one place they become HTTP responses.

Views raise an `ApiError` subclass (or let any `RsepError` escape: its kind decides the status,
rsep.plugin.errors); `handle` renders all of them, and werkzeug's own HTTP errors, the same way: `text/plain`
such as `query:1:24: unexpected '}'; expected ...` (the parameter, then the position), or JSON
when the client accepts JSON but not plain text. The bearer-token check lives here too, because
its only output is an error.
"""

from __future__ import annotations

import hmac
import json
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, request
from werkzeug import exceptions as http
from werkzeug.exceptions import HTTPException, InternalServerError

from rsep.plugin import RsepError


class ApiError(RsepError):
    """An error the client should see, with its HTTP status. `parameter` names the request
    parameter (or `body`) at fault; `line` and `column` locate the error inside it."""

    status: int = 500
    title: str = "Internal Server Error"

    def __init__(
        self,
        message: str,
        *,
        parameter: str | None = None,
        line: int | None = None,
        column: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.parameter, self.line, self.column = message, parameter, line, column
        self.headers = headers or {}

    def __str__(self) -> str:
        if self.parameter is None:
            return self.message
        if self.line is None:
            return f"{self.parameter}: {self.message}"
        return f"{self.parameter}:{self.line}:{self.column or 1}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        fields = {"parameter": self.parameter, "line": self.line, "column": self.column}
        extra = {name: value for name, value in fields.items() if value is not None}
        return {"status": self.status, "error": self.title, "message": self.message, **extra}


class BadRequest(ApiError):
    status, title = 400, "Bad Request"


class Unauthorized(ApiError):
    status, title = 401, "Unauthorized"

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="rsep"'})


class NotFound(ApiError):
    status, title = 404, "Not Found"


class MethodNotAllowed(ApiError):
    status, title = 405, "Method Not Allowed"

    def __init__(self, message: str, *, allow: list[str]) -> None:
        super().__init__(message, headers={"Allow": ", ".join(allow)})


class NotAcceptable(ApiError):
    status, title = 406, "Not Acceptable"


class UnsupportedMediaType(ApiError):
    status, title = 415, "Unsupported Media Type"


class BadGateway(ApiError):
    status, title = 502, "Bad Gateway"


class _HttpError(ApiError):
    """A werkzeug HTTP error (unknown route, method not routed, ...) in our clothes."""

    def __init__(self, error: HTTPException) -> None:
        headers = {name: value for name, value in error.get_headers() if name.lower() != "content-type"}
        super().__init__(error.description or error.name, headers=headers)
        self.status, self.title = error.code or 500, error.name


def as_api_error(error: Exception) -> ApiError:
    """The ApiError a core exception means to a client."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, RsepError):
        return _of_kind(error)
    if isinstance(error, InternalServerError):
        return _HttpError(InternalServerError())  # never the original exception's text
    if isinstance(error, http.MethodNotAllowed):
        allow = sorted(error.valid_methods or ())
        return MethodNotAllowed(f"{request.method} is not allowed here; use {', '.join(allow)}", allow=allow)
    if isinstance(error, HTTPException):
        return _HttpError(error)
    raise TypeError(f"not an error the endpoint renders: {type(error).__name__}")


def _of_kind(error: RsepError) -> ApiError:
    """A core error as the status its kind says (rsep.plugin.errors), located where it knows."""
    found = ApiError(error.detail, parameter=error.source, line=error.line, column=error.column)
    found.status = error.http_status
    found.title = HTTPStatus(error.http_status).phrase
    return found


def error_response(error: ApiError) -> Response:
    """The response for an error: JSON for clients that take JSON but not plain text."""
    if _wants_json():
        body, mimetype = json.dumps(error.as_json()), "application/json"
    else:
        body, mimetype = f"{error}\n", "text/plain"
    response = Response(body, status=error.status, mimetype=mimetype)
    response.headers.update(error.headers)
    return response


def handle(error: Exception) -> Response:
    """The one error handler of the application."""
    if isinstance(error, InternalServerError):
        current_app.logger.error("unhandled error", exc_info=error.original_exception)
    return error_response(as_api_error(error))


def _wants_json() -> bool:
    accept = request.accept_mimetypes
    if not accept or accept["text/plain"] > 0:
        return False
    return any(value == "application/json" or value.endswith("+json") for value, q in accept if q > 0)


# --------------------------------------------------------------------------- bearer token

_EXEMPT_PATHS = frozenset({"/", "/yasgui"})
_QUERY_TOKEN_ENDPOINTS = frozenset({"queries.events"})
"""Endpoints that also take the token as `?token=` (Server-Sent Events: EventSource sends no headers)."""


def check_token() -> None:
    """With RSEP_TOKEN configured, every request but the static page at `/` (and static files)
    needs `Authorization: Bearer <token>` (called by `rsep.endpoint.access`, which decides
    which requests the token guards)."""
    token = current_app.config.get("RSEP_TOKEN")
    if not token or request.path in _EXEMPT_PATHS or (request.endpoint or "").endswith("static"):
        return
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not scheme and request.endpoint in _QUERY_TOKEN_ENDPOINTS:
        # EventSource (the page's live matches) cannot send headers: its URL carries the token.
        scheme, given = "bearer", request.args.get("token", "")
    if scheme.lower() != "bearer" or not given.strip():
        raise Unauthorized("this endpoint needs an Authorization: Bearer <token> header")
    if not hmac.compare_digest(given.strip().encode(), str(token).encode()):
        raise Unauthorized("wrong bearer token")


def init_app(app: Flask) -> None:
    for kind in (RsepError, HTTPException):
        app.register_error_handler(kind, handle)
