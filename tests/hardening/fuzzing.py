"""What the fuzz tests send (tests/hardening/test_fuzz.py, scripts/fuzz.sh): valid payloads and
queries of every route and dialect, and Hypothesis strategies that mutate them (cut, repeat,
insert characters and tokens a parser trips on)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import strategies as st

from tests.support.events import QUERIES
from tests.support.paths import REPO

FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = int(os.environ.get("RSEP_FUZZ_EXAMPLES", "120"))
"""Hypothesis examples per fuzz test: small in the suite, large from scripts/fuzz.sh."""

PLAIN_QUERIES = (
    "SELECT * WHERE { ?s ?p ?o } LIMIT 3",
    "PREFIX ex: <http://example.org/> SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s ex:p ?o FILTER(?o > 1 && "
    'REGEX(STR(?o), "^a")) OPTIONAL { ?o ex:q ?x } } GROUP BY ?s ORDER BY DESC(?n)',
    "ASK { GRAPH ?g { ?s ?p ?o } }",
    'CONSTRUCT { ?s <urn:p> ?o } WHERE { ?s ?p ?o . BIND(CONCAT(STR(?o), "x") AS ?y) }',
    "DESCRIBE <urn:a>",
    'SELECT * { VALUES (?a ?b) { (1 2) (UNDEF "x"@en) } ?a (<urn:p>|^<urn:q>)+ ?b }',
)
UPDATES = (
    'INSERT DATA { <urn:a> <urn:p> 1 . GRAPH <urn:g> { <urn:a> <urn:p> "x" } }',
    "DELETE WHERE { <urn:a> ?p ?o }",
    "PREFIX ex: <urn:ex:> WITH <urn:g> DELETE { ?s ?p ?o } INSERT { ?s ex:q ?o } WHERE { ?s ?p ?o }",
    "CLEAR SILENT GRAPH <urn:g> ; DROP SILENT GRAPH <urn:h> ; CREATE SILENT GRAPH <urn:i>",
    "COPY DEFAULT TO <urn:g>",
)
EVENT_QUERIES = (
    *QUERIES.values(),
    *(path.read_text() for path in sorted(FIXTURES.glob("spaseq/*/query.rq"))[:6]),
    *(path.read_text() for path in sorted(FIXTURES.glob("entailment/*/query.rq"))),
)
NQUADS = (
    '<http://example.org/e1> <http://example.org/p> "1" <http://example.org/e1> .\n'
    "<http://example.org/e1> <http://www.w3.org/ns/prov#generatedAtTime> "
    '"2026-11-26T10:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
)
TRIG = (
    "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
    ':e2 { :s :p 2 ; :q "two"@en . _:b :r :s . }\n'
    ':e2 prov:generatedAtTime "2026-11-26T10:00:01Z"^^xsd:dateTime .\n'
)
TURTLE = '@prefix : <http://example.org/> .\n:a :p 1, 2 ; :q [ :r "x" ] .\n'
QUERY_MEDIA = ("application/sparql-query", "text/plain", "application/sparql-query; charset=latin-1")
FORM = "application/x-www-form-urlencoded"
FORM_EXTRAS = ("", "&using-graph-uri=urn:g", "&default-graph-uri=x", "&update=CLEAR+ALL")
GRAPHS = ("?default", "?graph=http://example.org/g", "?graph=rel", "", "?graph=")
STREAMS = ("http://example.org/s", "<http://example.org/s>", "", "s", "http://example.org/s\x00", "urn:x y")

NOISE = st.sampled_from(
    ["{", "}", "(", ")", "[", "]", "<", ">", '"', "'", "\\", "#", "?", "$", ":", ".", ";", ",", "!",
     "\x00", "\n", "é", "\ud7ff", "SEQ", "UNION", "SERVICE <http://127.0.0.1:9/>", "LOAD <http://x/>",
     "FILTER(", "GRAPH", "^^", "@en", "1e309", "99999-12-31T00:00:00Z", "1764170000123", "((((((((",
     "{" * 300, "!" * 200, "+1" * 1200]
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[str, ...]) -> str:
    """A seed, possibly cut, with a slice repeated, and noise inserted, a few times over."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, 3))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 40)))
        action = draw(st.sampled_from(["cut", "repeat", "noise", "text"]))
        if action == "cut":
            text = text[:start] + text[end:]
        elif action == "repeat":
            text = text[:end] + text[start:end] + text[end:]
        elif action == "noise":
            text = text[:start] + draw(NOISE) + text[start:]
        else:
            text = text[:start] + draw(st.text(max_size=8)) + text[start:]
    return text


@dataclass(frozen=True)
class Call:
    """One request: method, path, body and its content type."""

    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


@st.composite
def calls(draw: st.DrawFn) -> Call:
    """A request to any route, with a mutated payload or query."""
    kind = draw(st.sampled_from(["get-query", "post-query", "update", "form", "streams", "register",
                                 "store", "queries", "event-as-sparql"]))  # fmt: skip
    if kind == "get-query":
        return Call("GET", "/sparql?query=" + _quote(draw(mutated(PLAIN_QUERIES + EVENT_QUERIES[:2]))))
    if kind == "post-query":
        media = draw(st.sampled_from(QUERY_MEDIA))
        return Call("POST", "/sparql", draw(mutated(PLAIN_QUERIES)).encode("utf-8", "surrogatepass"), media)
    if kind == "update":
        return Call("POST", "/sparql", draw(mutated(UPDATES)).encode("utf-8", "surrogatepass"),
                    "application/sparql-update")  # fmt: skip
    if kind == "form":
        field = draw(st.sampled_from(["update", "query", "using-graph-uri", "default-graph-uri"]))
        text = draw(mutated(UPDATES if field == "update" else PLAIN_QUERIES))
        extra = draw(
            st.sampled_from(["", "&using-graph-uri=urn:g", "&default-graph-uri=x", "&update=CLEAR+ALL"])
        )
        return Call(
            "POST", "/sparql", f"{field}={_quote(text)}{extra}".encode(), "application/x-www-form-urlencoded"
        )
    if kind == "streams":
        payload = draw(mutated((NQUADS, TRIG)))
        media = draw(st.sampled_from(["application/n-quads", "application/trig", "text/turtle"]))
        return Call("POST", "/streams?stream=" + _quote(draw(st.sampled_from(STREAMS))),
                    payload.encode("utf-8", "surrogatepass"), media)  # fmt: skip
    if kind == "register":
        return Call("POST", "/queries", draw(mutated(EVENT_QUERIES)).encode("utf-8", "surrogatepass"),
                    "application/sparql-query")  # fmt: skip
    if kind == "event-as-sparql":
        return Call("POST", "/sparql", draw(mutated(EVENT_QUERIES)).encode("utf-8", "surrogatepass"),
                    "application/sparql-query")  # fmt: skip
    if kind == "store":
        method = draw(st.sampled_from(["PUT", "POST", "DELETE", "GET"]))
        graph = draw(
            st.sampled_from(["?default", "?graph=http://example.org/g", "?graph=rel", "", "?graph="])
        )
        body = (
            draw(mutated((TURTLE, TRIG))).encode("utf-8", "surrogatepass")
            if method in ("PUT", "POST")
            else None
        )
        media = draw(st.sampled_from(["text/turtle", "application/trig", "application/ld+json", "image/png"]))
        return Call(method, "/store" + graph, body, media if body is not None else None)
    query_id = draw(st.sampled_from(["0123456789abcdef", "..", "%00", "x" * 300]))
    return Call(draw(st.sampled_from(["GET", "DELETE"])), f"/queries/{query_id}")
