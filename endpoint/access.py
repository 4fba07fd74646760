"""Who may do what, checked before any view: the `Host` a request names, whether it writes, and
from which web origin (docs/endpoint.md, "Access").

A browser lets any web page send a form POST or a `fetch` to `http://127.0.0.1:7878`, and a DNS
name an attacker controls can point at it (DNS rebinding), so an endpoint without a token would
take `update=DROP ALL` from any page its user visits. Hence, whatever the mode:

- `Host` must name this server: `localhost`, an IP address, the address it was bound to, or one
  of `--allowed-host` (`*` turns the check off; 400 otherwise);

and by `--access` (`RSEP_ACCESS`, `rsep.endpoint.settings.ACCESS_MODES`):

- `same-origin` (the default): reads are open; a write (anything but GET/HEAD/OPTIONS, and a
  POST to /sparql that only queries) needs the token if one is set, and without one comes from
  the endpoint's own page or a client that is not a browser: `Sec-Fetch-Site` must be
  `same-origin` or `none`, else `Origin` must be this server's (403 otherwise);
- `open`: no origin check (local development; the token, if set, still applies to everything);
- `writes-token`: reads need no token, writes need it (a token is required to start);
- `read-only`: no writes at all (403).

With a token and any mode but `writes-token`, every request but `/` needs it (`check_token`).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import parse_qsl, urlsplit

from flask import Flask, current_app, request

from rsep.endpoint.http_errors import ApiError, BadRequest, check_token

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE = frozenset({"same-origin", "none"})


class Forbidden(ApiError):
    status, title = 403, "Forbidden"


def check_access() -> None:
    """The application's first check on every request."""
    _check_host()
    mode = current_app.config.get("RSEP_ACCESS") or "same-origin"
    writes = is_write()
    if mode == "read-only" and writes:
        raise Forbidden("this endpoint is read-only (rsep serve --access read-only)")
    if mode != "writes-token" or writes:
        check_token()
    if mode == "same-origin" and writes and not current_app.config.get("RSEP_TOKEN") and _cross_site():
        raise Forbidden(
            "a write from another web origin: without a token, rsep takes writes only from its own "
            "page or from clients that are not browsers (start rsep serve with --token, or with "
            "--access open for local development)"
        )


def is_write() -> bool:
    """Does the request change anything? Every method but GET/HEAD/OPTIONS does, except a POST
    to /sparql that carries a query."""
    if request.method in _SAFE_METHODS:
        return False
    if request.endpoint == "sparql.sparql" and request.method == "POST":
        mimetype = request.mimetype
        if mimetype == "application/sparql-query":
            return False
        if mimetype == "application/x-www-form-urlencoded":  # read as the view will, kept for it
            fields = parse_qsl(request.get_data(cache=True).decode("latin-1"), keep_blank_values=True)
            return any(name == "update" for name, _ in fields)
    return True


def _cross_site() -> bool:
    """Did a browser send this from another origin? `Sec-Fetch-Site` when the browser sends it,
    else `Origin` against `Host`; a client that sends neither is not a browser page."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site.strip().lower() not in _SAME_SITE
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    return urlsplit(origin.strip()).netloc.lower() != request.host.lower()


def _check_host() -> None:
    allowed: tuple[str, ...] = tuple(current_app.config.get("RSEP_ALLOWED_HOSTS") or ())
    if "*" in allowed:
        return
    name = _host_name(request.host)
    bound = str(current_app.config.get("RSEP_BIND_HOST") or "").lower()
    if name in ("localhost", bound) or name in (host.lower() for host in allowed) or _is_address(name):
        return
    raise BadRequest(
        f"this server does not answer to the name {name!r} (start rsep serve with --allowed-host {name} "
        "if it should: names other than its own are refused against DNS rebinding)",
        parameter="Host",
    )


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def init_app(app: Flask) -> None:
    app.before_request(check_access)
