"""A request body with a Content-Encoding is refused with 415 before anything reads it: the
endpoint reads bodies as sent, and werkzeug does not decode them (a gzipped TriG body was a 400
about a prefix name at 1:1; a plain body labelled `br` was stored as if it were unlabelled)."""

from __future__ import annotations

import gzip
import urllib.parse

import pytest

from tests.support.servers import Server, http_exchange

EVENT = (
    b'<http://example.org/e1> <http://example.org/p> "1" <http://example.org/e1> .\n'
    b"<http://example.org/e1> <http://www.w3.org/ns/prov#generatedAtTime> "
    b'"1"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
)
TRIPLE = b'<http://example.org/s> <http://example.org/p> "o" .\n'
QUERY = b"SELECT ?s FROM STREAM S <http://example.org/s> WHERE { SEQ (A) DEFINE GPM A ON S { ?s ?p ?o } }"

REQUESTS = [
    ("POST", "/streams?stream=http://example.org/s", EVENT, "application/n-quads"),
    ("PUT", "/store?graph=http://example.org/g", TRIPLE, "application/n-triples"),
    ("POST", "/store", TRIPLE, "application/n-triples"),
    ("POST", "/sparql", b"INSERT DATA { <http://example.org/a> <http://example.org/b> 1 }",
     "application/sparql-update"),
    ("POST", "/queries", QUERY, "application/sparql-query"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "media_type"), REQUESTS)
@pytest.mark.parametrize("coding", ["gzip", "br", "identity, gzip"])
def test_a_coded_body_is_415_and_stores_nothing(
    server: Server, method: str, path: str, body: bytes, media_type: str, coding: str
) -> None:
    sent = gzip.compress(body) if coding.endswith("gzip") else body  # `br`: a plain body, mislabelled
    before = _state(server)
    status, text = http_exchange(server, method, path, sent, media_type, {"Content-Encoding": coding})
    assert status == 415, text
    assert f"Content-Encoding {coding.removeprefix('identity, ')}:" in text and "uncompressed" in text, text
    assert _state(server) == before


def test_identity_is_no_coding(server: Server) -> None:
    status, text = http_exchange(server, "PUT", "/store?graph=http://example.org/identity", TRIPLE,
                                 "application/n-triples", {"Content-Encoding": "identity"})  # fmt: skip
    assert status == 201, text


def _state(server: Server) -> tuple[object, ...]:
    """What a write could have changed: the log, the registrations, the store's quads."""
    health = server.get("/health")
    count = "SELECT (COUNT(*) AS ?n) WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
    status, text = http_exchange(server, "GET", "/sparql?" + urllib.parse.urlencode({"query": count}))
    assert status == 200, text
    return health["log_position"], health["queries"], text
