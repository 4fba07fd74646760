"""Limits with clear errors (issue 15, item 6): body (413), query text (413), literal (400,
also past the parser's own 16 MiB buffer, which was a 500), registered queries (403); on a real
`rsep serve` started with small limits."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.events import QUERIES
from tests.support.servers import Server, http_exchange

NQUADS = "application/n-quads"
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder: Path = tmp_path_factory.mktemp("limits")
    options = ("--engine", "inprocess", "--max-body", "64K", "--max-query-size", "2K", "--max-literal", "1K",
               "--max-queries", "2")  # fmt: skip
    server = Server(folder / "data", folder / "server.log", options=options)
    yield server
    server.terminate()


def _event(value: str, index: int = 1) -> bytes:
    name = f"<http://example.org/e{index}>"
    return (f'{name} <http://example.org/p> "{value}" {name} .\n'
            f'{name} {PROV} "{index}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n').encode()  # fmt: skip


def _ingest(server: Server, body: bytes) -> tuple[int, str]:
    return http_exchange(server, "POST", "/streams?stream=http://example.org/s", body, NQUADS)


def _register(server: Server) -> tuple[int, str]:
    return http_exchange(server, "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query")


def test_a_body_over_max_body_is_413(small: Server) -> None:
    status, body = http_exchange(small, "POST", "/streams?stream=http://example.org/s", b"#" * 70_000, NQUADS)
    assert status == 413, body
    status, body = http_exchange(small, "PUT", "/store?default", b"#" * 70_000, "text/turtle")
    assert status == 413, body
    assert http_exchange(small, "GET", "/sparql?query=ASK%7B%7D")[0] == 200


def test_a_query_over_max_query_size_is_413_naming_it(small: Server) -> None:
    query = "SELECT * WHERE { ?s ?p ?o } # " + "x" * 3000
    status, body = http_exchange(small, "GET", "/sparql?" + urllib.parse.urlencode({"query": query}))
    assert (status, body.split(":")[0]) == (413, "query"), body
    status, body = http_exchange(small, "POST", "/sparql", ("INSERT DATA {} #" + "x" * 3000).encode(),
                                 "application/sparql-update")  # fmt: skip
    assert (status, body.split(":")[0]) == (413, "update"), body
    status, body = http_exchange(small, "POST", "/queries", query.encode(), "application/sparql-query")
    assert status == 413, body


def test_a_literal_over_max_literal_is_400_and_nothing_is_stored(small: Server) -> None:
    status, body = http_exchange(
        small, "POST", "/streams?stream=http://example.org/s", _event("x" * 2000), NQUADS
    )
    assert status == 400 and "literals may be 1024 bytes at most" in body, body
    status, body = http_exchange(small, "PUT", "/store?graph=http://example.org/g",
                                 b'<urn:a> <urn:b> "' + b"y" * 2000 + b'" .\n', "text/turtle")  # fmt: skip
    assert status == 400 and "literals may be 1024 bytes at most" in body, body
    assert (
        http_exchange(small, "POST", "/streams?stream=http://example.org/s", _event("short"), NQUADS)[0]
        == 202
    )
    status, body = http_exchange(small, "GET", "/sparql?query=ASK%7BGRAPH%3Chttp://example.org/g%3E%7B%7D%7D")
    assert "false" in body


def test_registered_queries_are_capped(small: Server) -> None:
    for _ in range(2):
        status, body = http_exchange(
            small, "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201, body
    status, body = http_exchange(
        small, "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
    )
    assert status == 403 and "--max-queries" in body, body


def test_concurrent_registrations_do_not_pass_the_cap(tmp_path: Path) -> None:
    """The count was checked before the query compiled and not when it was stored: 8 concurrent
    registrations under --max-queries 3 all got 201."""
    server = Server(tmp_path / "data", tmp_path / "server.log",
                    options=("--engine", "inprocess", "--max-queries", "3"))  # fmt: skip
    try:

        def register(_: int) -> int:
            body = QUERIES["any"].encode()
            return http_exchange(server, "POST", "/queries", body, "application/sparql-query")[0]

        with ThreadPoolExecutor(8) as pool:
            statuses = sorted(pool.map(register, range(8)))
        assert statuses == [201] * 3 + [403] * 5
        assert len(server.get("/queries")["queries"]) == 3
    finally:
        server.terminate()


def test_a_literal_past_the_parsers_buffer_is_400_not_500(tmp_path: Path) -> None:
    options = ("--engine", "inprocess", "--max-literal", "64M")
    server = Server(tmp_path / "data", tmp_path / "server.log", options=options)
    try:
        status, body = _ingest(server, _event("z" * (17 * 2**20)))
        assert status == 400 and "parser's 16777216 bytes" in body, body
    finally:
        server.terminate()
