"""The sizes a request may have (docs/endpoint.md, "Access and limits"), so that no request
can take the server's memory or its registry:

- `--max-body` (`RSEP_MAX_BODY`, default 64 MiB): any request body; 413 past it (Flask's
  `MAX_CONTENT_LENGTH`, and waitress's own limit, which `rsep serve` sets to the same);
- `--max-query-size` (`RSEP_MAX_QUERY_SIZE`, default 1 MiB): the text of a query or update,
  however it is sent; 413 past it;
- `--max-literal` (`RSEP_MAX_LITERAL`, default 4 MiB): one literal of an ingest or Graph Store
  payload; 400 (`rsep.plugin.store.literal_limit`);
- `--max-queries` (`RSEP_MAX_QUERIES`, default 1000): registered continuous queries (there is
  one token per server, so this is the token's share); 403 past it.
"""

from __future__ import annotations

from flask import Flask, current_app

from rsep.endpoint.http_errors import ApiError
from rsep.plugin import limit_literals

MIB = 2**20


class PayloadTooLarge(ApiError):
    status, title = 413, "Payload Too Large"


class TooManyQueries(ApiError):
    status, title = 403, "Forbidden"


def check_text_size(text: str, parameter: str) -> None:
    """413 for a query or update text over `RSEP_MAX_QUERY_SIZE` bytes."""
    limit = int(current_app.config["RSEP_MAX_QUERY_SIZE"])
    if len(text) > limit // 4 and len(text.encode("utf-8")) > limit:
        raise PayloadTooLarge(
            f"{len(text.encode('utf-8'))} bytes; a {parameter} may be {limit} bytes at most "
            "(rsep serve --max-query-size)",
            parameter=parameter,
        )


def check_query_count(registered: int) -> None:
    """403 when registering one more query would pass `RSEP_MAX_QUERIES`."""
    limit = int(current_app.config["RSEP_MAX_QUERIES"])
    if registered >= limit:
        raise TooManyQueries(
            f"{registered} continuous queries are registered, the most this server takes "
            "(rsep serve --max-queries): delete one first"
        )


def init_app(app: Flask) -> None:
    app.config["MAX_CONTENT_LENGTH"] = app.config["RSEP_MAX_BODY"]
    limit_literals(int(app.config["RSEP_MAX_LITERAL"]))
