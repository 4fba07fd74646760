"""The SPARQL 1.1 Graph Store HTTP Protocol at /store.

A graph is named indirectly (`/store?graph=<IRI>`, `/store?default`) or directly: a URL under
/store/ is itself the graph's IRI, which is how graphs that POST /store creates are named.
/store with neither addresses the whole graph store: GET returns every graph (TriG, N-Quads,
JSON-LD); POST of a dataset merges it, POST of a graph creates a new graph (201, its IRI in
Location).

Checks come in Fuseki's order: method (405), content type (415), parameters (400 naming the
parameter), then the payload (400 with line and column; it is parsed whole before anything is
written, so a bad one changes nothing) and existence (404).
"""

from __future__ import annotations

import re
import string
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, request

from rsep.endpoint.http_errors import BadRequest, NotFound, UnsupportedMediaType
from rsep.endpoint.negotiation import canonical, content_type, negotiate_request, parse_content_type
from rsep.endpoint.resources import resources
from rsep.plugin import (
    DATASET_MEDIA_TYPES,
    GRAPH_MEDIA_TYPES,
    GRAPH_PAYLOAD_MEDIA_TYPES,
    Payload,
    is_absolute_iri,
)

bp = Blueprint("store", __name__)

METHODS = ["GET", "PUT", "POST", "DELETE"]
MULTIPART = "multipart/form-data"
PAYLOAD_MEDIA_TYPES = tuple(dict.fromkeys(GRAPH_PAYLOAD_MEDIA_TYPES + DATASET_MEDIA_TYPES))


@dataclass(frozen=True, slots=True)
class Target:
    """What a request addresses: one graph (`graph`; None is the default graph), or the whole
    graph store (`store`)."""

    graph: str | None = None
    store: bool = False


STORE = Target(store=True)


@bp.route("/store", methods=METHODS)
def indirect() -> Response:
    media_type = _payload_media_type()
    return _dispatch(_indirect_target(), media_type)


@bp.route("/store/<path:_path>", methods=METHODS)
def direct(_path: str) -> Response:
    media_type = _payload_media_type()
    for name in ("graph", "default"):
        if name in request.args:
            raise BadRequest("a URL under /store/ names its own graph", parameter=name)
    return _dispatch(Target(graph=_request_iri()), media_type)


def _request_iri() -> str:
    """The graph a direct URL names: the request's URL as an IRI (RFC 3987 §3.2). An escape of
    an unreserved character or of a UTF-8 encoded non-ASCII one stands for it (`caf%C3%A9` is
    `café`: a client can only send that IRI escaped); every other escape is kept as written.
    Werkzeug's `base_url` decoded them all and quoted back only some characters, so `x%3Cy` was
    `x<y` (not an IRI: a 500), `x%2Fy` the graph of `x/y`, and `x%FFy` one with U+FFFD."""
    raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI")
    if not raw:
        return request.base_url
    path = (raw if raw.startswith("/") else urlsplit(raw).path).split("?", 1)[0]
    try:
        path = path.encode("latin-1").decode("utf-8")  # WSGI strings are bytes as latin-1
    except UnicodeError:
        raise BadRequest(f"the URL path {path!r} is not UTF-8", parameter="graph") from None
    iri = request.host_url.rstrip("/") + _ESCAPES.sub(_unescaped, path)
    if not is_absolute_iri(iri):
        raise BadRequest(f"the URL {iri!r} is not an IRI that can name a graph", parameter="graph")
    return iri


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _unescaped(run: re.Match[str]) -> str:
    """A run of escapes with those of unreserved and non-ASCII characters decoded."""
    escapes = run.group()
    octets = bytes.fromhex(escapes.replace("%", ""))
    out, index = [], 0
    while index < len(octets):
        character = _utf8_character(octets, index)
        if character in _UNRESERVED or (
            len(character) == 1 and ord(character) > 0x7F and _is_iri_character(character)
        ):
            out.append(character)
            index += len(character.encode("utf-8"))
        else:
            out.append(escapes[3 * index : 3 * index + 3])
            index += 1
    return "".join(out)


def _utf8_character(octets: bytes, index: int) -> str:
    """The character whose UTF-8 encoding starts at `index`, or "" where none does."""
    for size in range(1, 5):
        try:
            return octets[index : index + size].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def _is_iri_character(character: str) -> bool:
    """RFC 3987's ucschar: the non-ASCII characters an IRI may hold unescaped (not the private
    use areas, which only a query may hold, nor surrogates, noncharacters or bidi controls)."""
    code = ord(character)
    return code not in _BIDI_CONTROLS and any(low <= code <= high for low, high in _UCSCHAR)


_UCSCHAR = (
    (0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
    (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD),
    (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
)  # fmt: skip
_BIDI_CONTROLS = frozenset((0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E))


def _dispatch(target: Target, media_type: str | None) -> Response:
    if request.method in ("GET", "HEAD"):
        return _get(target)
    if request.method == "DELETE":
        return _delete(target)
    assert media_type is not None
    return _put(target, media_type) if request.method == "PUT" else _post(target, media_type)


# --------------------------------------------------------------------------- reading the request


def _payload_media_type() -> str | None:
    """The canonical media type of a PUT or POST body (415 if we cannot read it)."""
    if request.method not in ("PUT", "POST"):
        return None
    ctype = parse_content_type(request.headers.get("Content-Type"))
    kinds = ", ".join(PAYLOAD_MEDIA_TYPES)
    if ctype is None:
        raise UnsupportedMediaType(f"{request.method} needs a Content-Type: {kinds}")
    if not ctype.utf8:
        raise UnsupportedMediaType(f"charset={ctype.charset}: RDF payloads are read as UTF-8")
    if ctype.media_type == MULTIPART and request.method == "POST":
        return MULTIPART
    found = canonical(ctype.media_type, PAYLOAD_MEDIA_TYPES)
    if found is None:
        raise UnsupportedMediaType(f"cannot read {ctype.media_type}; use {kinds}")
    return found


def _indirect_target() -> Target:
    graphs, default = request.args.getlist("graph"), "default" in request.args
    if graphs and default:
        raise BadRequest("give either graph=IRI or default, not both", parameter="default")
    if len(graphs) > 1:
        raise BadRequest(f"given {len(graphs)} times; one graph per request", parameter="graph")
    if graphs:
        if not is_absolute_iri(graphs[0]):
            raise BadRequest(f"not an absolute IRI: {graphs[0]!r}", parameter="graph")
        return Target(graph=graphs[0])
    return Target() if default else STORE


def _graph_payloads(media_type: str) -> list[Payload]:
    """The body as payloads of one graph: itself, or each file of a multipart/form-data POST."""
    kinds = ", ".join(GRAPH_PAYLOAD_MEDIA_TYPES)
    if media_type == MULTIPART:
        for name in request.form:
            raise UnsupportedMediaType(f"multipart part {name!r} is not a file; send files of {kinds}")
        if not request.files:  # also a body werkzeug cannot split (no boundary): it reads no part
            raise BadRequest(f"missing: one or more files of {kinds} in the multipart body", parameter="body")
        return [_part_payload(name, kinds) for name in request.files]
    if media_type not in GRAPH_PAYLOAD_MEDIA_TYPES:
        raise UnsupportedMediaType(f"{media_type} holds a dataset; a graph is sent as {kinds}")
    return [Payload(request.get_data(), media_type)]


def _part_payload(name: str, kinds: str) -> Payload:
    part = request.files[name]
    media_type = canonical(part.mimetype, GRAPH_PAYLOAD_MEDIA_TYPES)
    if media_type is None:
        raise UnsupportedMediaType(f"multipart part {name!r} is {part.mimetype or 'untyped'}; use {kinds}")
    return Payload(part.read(), media_type)


def _base_iri(target: Target) -> str:
    """Relative IRIs in a payload resolve against the graph's IRI, or the request URL."""
    return target.graph if target.graph is not None else request.base_url


def _written(status: int, headers: dict[str, str] | None = None) -> Response:
    response = Response(status=status, headers=headers)
    del response.headers["Content-Type"]  # no body, so no type
    return response


# --------------------------------------------------------------------------- the methods


def _get(target: Target) -> Response:
    kb = resources().kb
    if target.store:
        chosen = negotiate_request(DATASET_MEDIA_TYPES)
        body = kb.get_dataset(chosen.offer)
    else:
        chosen = negotiate_request(GRAPH_MEDIA_TYPES)
        if not kb.graph_exists(target.graph):
            raise NotFound(f"no graph <{target.graph}> in the store")
        body = kb.get_graph(target.graph, chosen.offer)
    response = Response(body, content_type=content_type(chosen.media_type))
    response.vary.add("Accept")
    return response


def _put(target: Target, media_type: str) -> Response:
    if target.store:
        raise BadRequest(
            "PUT needs ?graph=IRI or ?default (the whole store is not replaced)", parameter="graph"
        )
    payloads = _graph_payloads(media_type)
    created = resources().kb.put_graph(target.graph, payloads[0], base_iri=_base_iri(target))
    return _written(201 if created else 204)


def _post(target: Target, media_type: str) -> Response:
    kb = resources().kb
    if target.store and media_type in DATASET_MEDIA_TYPES:
        kb.post_dataset(Payload(request.get_data(), media_type), base_iri=request.base_url)
        return _written(204)
    if target.store:
        return _create_graph(media_type)
    payloads = _graph_payloads(media_type)
    created = kb.post_graph(target.graph, payloads, base_iri=_base_iri(target))
    return _written(201 if created else 204)


def _create_graph(media_type: str) -> Response:
    """POST of a graph to the store itself: a new graph, named by a fresh URL under /store/."""
    graph = f"{request.base_url.rstrip('/')}/{uuid.uuid4().hex}"
    payloads = _graph_payloads(media_type)
    resources().kb.post_graph(graph, payloads, base_iri=graph)
    return _written(201, {"Location": graph})


def _delete(target: Target) -> Response:
    if target.store:
        raise BadRequest(
            "DELETE needs ?graph=IRI or ?default (the whole store is not dropped)", parameter="graph"
        )
    if not resources().kb.delete_graph(target.graph):
        raise NotFound(f"no graph <{target.graph}> in the store")
    return _written(204)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
