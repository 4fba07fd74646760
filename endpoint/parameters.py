"""Request parameters: the URL's and a form body's, read alike and checked to be UTF-8.

Werkzeug decodes percent-encoded bytes that are not UTF-8 (`%FF`) to U+FFFD, so a form would
carry text the client never sent into a query, an update or the store. A SPARQL request is UTF-8
(a query body that is not is a 400), so a parameter that is not is a 400 naming it.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from flask import request
from werkzeug.datastructures import CombinedMultiDict, MultiDict

from rsep.endpoint.http_errors import BadRequest

FORM = "application/x-www-form-urlencoded"

Params = MultiDict[str, str] | CombinedMultiDict[str, str]


def parameters() -> Params:
    """The URL's parameters and, for a form body, its fields (400 for one that is not UTF-8)."""
    check_utf8(request.query_string)
    if request.mimetype != FORM:
        return request.args
    check_utf8(request.get_data())  # kept: werkzeug then parses the form from these bytes
    return CombinedMultiDict([request.args, request.form])


def single(params: Params, name: str) -> str | None:
    """A parameter given at most once (in the URL and the form body together)."""
    values = params.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"given {len(values)} times; send it once", parameter=name)
    return values[0] if values else None


def check_utf8(encoded: bytes) -> None:
    """400 naming the first `name=value` pair of an `application/x-www-form-urlencoded` text
    (a URL's query or a form body) whose name or value, percent-decoded, is not UTF-8."""
    for pair in encoded.split(b"&"):
        raw_name, _, raw_value = pair.partition(b"=")
        name, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in (raw_name, raw_value))
        for where, part in (("its name", name), ("its value", value)):
            try:
                part.decode("utf-8")
            except UnicodeDecodeError as error:
                raise BadRequest(
                    f"not UTF-8 ({where}, byte {error.start})", parameter=name.decode("utf-8", "replace")
                ) from None
