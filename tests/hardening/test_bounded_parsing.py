"""Texts that overflowed Oxigraph's native stack and killed the endpoint (issue 15, item 1) are
refused with 400 and a position by rsep's bounds check, and the process keeps serving."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.support.servers import Server, http_exchange

SELECT_DEEP_BRACES = "SELECT * WHERE " + "{" * 3000 + "?s ?p ?o" + "}" * 3000
DEEP_PARENS = "SELECT * WHERE { FILTER(" + "(" * 10000 + "1" + ")" * 10000 + ") }"
LONG_SUM = "SELECT * WHERE { FILTER(" + "+".join(["1"] * 10000) + ") }"
DEEP_UPDATE = "INSERT { ?s ?p ?o } WHERE " + "{" * 3000 + "?s ?p ?o" + "}" * 3000
LONG_UNION = "SELECT * WHERE { " + " UNION ".join(["{ ?s ?p ?o }"] * 10000) + " }"
DEEP_EVENT_QUERY = (
    "SELECT ?s FROM STREAM <http://example.org/s> [RANGE 10s STEP 1s] WHERE "
    + "{" * 3000 + "?s <http://example.org/p> ?o" + "}" * 3000
)  # fmt: skip
SPARQL_QUERY = "application/sparql-query"


def _get(server: Server, query: str) -> tuple[int, str]:
    return http_exchange(server, "GET", "/sparql?" + urllib.parse.urlencode({"query": query}))


@pytest.mark.parametrize(
    ("method", "text", "expected"),
    [
        ("GET", SELECT_DEEP_BRACES, "query:1:144: nested more than 128 levels deep"),
        ("query", DEEP_PARENS, "query:1:151: nested more than 128 levels deep"),
        ("query", LONG_SUM, "query:1:2026: more than 1000 operators"),
        ("update", DEEP_UPDATE, "update:1:155: nested more than 128 levels deep"),
        ("update", "INSERT DATA { <a:b> <a:c> " + "(" * 5000 + ")" * 5000 + " }", "update:1:154: nested"),
        ("form", LONG_UNION, "query:1:"),
    ],
)
def test_deep_text_is_400_with_position_and_the_server_lives(
    server: Server, method: str, text: str, expected: str
) -> None:
    if method == "GET":
        status, body = _get(server, text)
    elif method == "form":
        form = urllib.parse.urlencode({"query": text}).encode()
        status, body = http_exchange(server, "POST", "/sparql", form, "application/x-www-form-urlencoded")
    else:
        media = f"application/sparql-{method}"
        status, body = http_exchange(server, "POST", "/sparql", text.encode(), media)
    assert status == 400, body
    assert body.startswith(expected), body
    assert server.process.poll() is None
    status, body = _get(server, "ASK { }")
    assert status == 200 and '"boolean"' in body


def test_deep_continuous_query_is_400(server: Server) -> None:
    status, body = http_exchange(
        server, "POST", "/queries", DEEP_EVENT_QUERY.encode(), "application/sparql-query"
    )
    assert status == 400, body
    assert "nested more than 128 levels deep" in body
    assert server.process.poll() is None


def test_large_query_within_bounds_is_answered(server: Server) -> None:
    """A large plain query (over the size rsep's grammar reads before Oxigraph) is still run, and
    a mistake in it still gets a position."""
    values = " ".join(f"<http://example.org/i{i}>" for i in range(5000))
    text = f"SELECT ?x WHERE {{ VALUES ?x {{ {values} }} }}"
    status, body = http_exchange(server, "POST", "/sparql", text.encode(), SPARQL_QUERY)
    assert status == 200 and body.count('"uri"') == 5000
    status, body = http_exchange(server, "POST", "/sparql", text[:-1].encode(), SPARQL_QUERY)
    assert status == 400 and body.startswith("query:1:"), body


def test_a_sequence_within_the_bounds_but_too_long_to_plan_is_400(server: Server) -> None:
    """990 atoms pass the parser's bounds; the NFA compiler's recursion did not (a 500)."""
    names = [f"A{i}" for i in range(990)]
    gpms = " ".join(f"DEFINE GPM {name} ON S1 {{ ?k <urn:p{i}> ?v{i} }}" for i, name in enumerate(names))
    text = f"SELECT ?k FROM STREAM S1 <http://example.org/s> WHERE {{ SEQ ({'; '.join(names)}) {gpms} }}"
    status, body = http_exchange(server, "POST", "/queries", text.encode(), SPARQL_QUERY)
    assert status == 400 and "too large to compile" in body, body
    assert server.process.poll() is None
