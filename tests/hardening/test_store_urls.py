"""A graph named directly (`/store/<path>`) is the URL as the client wrote it: werkzeug's
`base_url` decodes the path and quotes back only some characters, so a percent-encoded `<`, `"`,
`{`, `|`, `\\`, `^` or a backquote became a raw one, which no IRI holds (a 500 from Oxigraph),
`%FF` became U+FFFD, and `a%2Fb` addressed the graph of `a/b`."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from tests.support.servers import Server, http_exchange

TRIPLE = b'<http://example.org/s> <http://example.org/p> "o" .\n'
NTRIPLES = "application/n-triples"


def _graphs(server: Server) -> set[str]:
    query = urllib.parse.urlencode({"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"})
    status, body = http_exchange(server, "GET", f"/sparql?{query}")
    assert status == 200, body
    return {row["g"]["value"] for row in json.loads(body)["results"]["bindings"]}


@pytest.mark.parametrize("path", ["x%3Cy", "x%3Ey", "x%22y", "x%7By%7D", "x%7Cy", "x%5Cy", "x%5Ey", "x%60y",
                                  "x%FFy", "x%C3y", "x%20y", "x%E2%80%8Fy"])  # fmt: skip
def test_a_percent_encoded_path_names_the_graph_as_written(server: Server, path: str) -> None:
    status, body = http_exchange(server, "PUT", f"/store/{path}", TRIPLE, NTRIPLES)
    assert status == 201, body
    status, body = http_exchange(server, "GET", f"/store/{path}", headers={"Accept": NTRIPLES})
    assert status == 200 and body == TRIPLE.decode(), body
    assert f"{server.base}/store/{path}" in _graphs(server)
    assert http_exchange(server, "DELETE", f"/store/{path}")[0] == 204


@pytest.mark.parametrize(
    ("path", "iri"),
    [("caf%C3%A9", "café"), ("caf%c3%a9", "café"), ("%7Euser%2Dx", "~user-x"), ("%F0%9F%98%80", "\U0001f600"),
     ("a%C3%A9%2Fb", "aé%2Fb")],
)  # fmt: skip
def test_an_escaped_iri_character_is_that_character(server: Server, path: str, iri: str) -> None:
    """RFC 3987 §3.2: a client can only send the IRI .../café escaped, and it names the graph
    .../café, as it did before escapes were kept, however its escapes are spelt."""
    status, body = http_exchange(server, "PUT", f"/store/{path}", TRIPLE, NTRIPLES)
    assert status == 201, body
    assert f"{server.base}/store/{iri}" in _graphs(server)
    quoted = urllib.parse.quote(iri, safe="%")
    status, body = http_exchange(server, "GET", f"/store/{quoted}", headers={"Accept": NTRIPLES})
    assert status == 200 and body == TRIPLE.decode(), body
    assert http_exchange(server, "DELETE", f"/store/{path}")[0] == 204
    assert f"{server.base}/store/{iri}" not in _graphs(server)


def test_an_encoded_slash_is_not_a_slash(server: Server) -> None:
    assert http_exchange(server, "PUT", "/store/a%2Fb", TRIPLE, NTRIPLES)[0] == 201
    assert http_exchange(server, "GET", "/store/a/b")[0] == 404
    assert f"{server.base}/store/a%2Fb" in _graphs(server)


@pytest.mark.parametrize("path", ["x<y", 'x"y', "x{y}"])
def test_a_path_that_is_not_an_iri_is_400(server: Server, path: str) -> None:
    before = _graphs(server)
    status, body = http_exchange(server, "PUT", f"/store/{path}", TRIPLE, NTRIPLES)
    assert status == 400 and "not an IRI that can name a graph" in body, body
    assert http_exchange(server, "GET", f"/store/{path}")[0] == 400
    assert _graphs(server) == before
