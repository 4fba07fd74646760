"""Request bodies are read as sent: a `Content-Encoding` other than `identity` is a 415.

Werkzeug hands views the raw bytes whatever `Content-Encoding` says, so a gzipped TriG body
was parsed as text (a 400 about a prefix name at 1:1) and a body labelled `br` but sent plain
was stored as if nothing were said. Decoding would put a decompressed size past `--max-body`,
which bounds the bytes received, so the endpoint takes no coding and says so (RFC 9110 §15.5.16:
a 415 for a content coding, with the codings it accepts in `Accept-Encoding`), before any view
reads the body.
"""

from __future__ import annotations

from flask import Flask, request

from rsep.endpoint.http_errors import UnsupportedMediaType

IDENTITY = "identity"


def codings(header: str | None) -> list[str]:
    """The content codings a `Content-Encoding` header lists, lower case, in order applied;
    `identity` and empty entries are no coding."""
    names = (name.strip().lower() for name in (header or "").split(","))
    return [name for name in names if name and name != IDENTITY]


def _refuse_coded_bodies() -> None:
    found = codings(request.headers.get("Content-Encoding"))
    if found:
        raise UnsupportedMediaType(
            f"Content-Encoding {', '.join(found)}: the endpoint reads request bodies as sent; "
            "send the body uncompressed (no Content-Encoding)",
            headers={"Accept-Encoding": IDENTITY},
        )


def init_app(app: Flask) -> None:
    app.before_request(_refuse_coded_bodies)
