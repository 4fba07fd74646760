"""Plain SPARQL goes to Oxigraph untouched, also where it reads more than SPARQL 1.1 as rsep's
grammar does (LATERAL, RDF 1.2 triple terms and directional language tags, ADJUST); what
neither reads gets rsep's positioned error, a malformed event query its dialect's error, and
what only Oxigraph rejects Oxigraph's message with its line and column. Errors while
evaluating are 502 (a SERVICE call that fails) or 406 (a format that cannot carry the result),
never a 500."""

from __future__ import annotations

import gc
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app
from rsep.grammar import SparqlSyntaxError, parse_event_query, parse_query
from rsep.grammar.dialects import event_syntax
from tests.support.paths import REPO

EX = "http://example.org/"
SMART_GRID_QUERY = (REPO / "examples" / "smart-grid" / "query.rq").read_text()


def bindings(client: FlaskClient, query: str) -> list[dict[str, dict[str, object]]]:
    response = client.get("/sparql", query_string={"query": query})
    assert response.status_code == 200, response.get_data(as_text=True)
    rows: list[dict[str, dict[str, object]]] = json.loads(response.data)["results"]["bindings"]
    return rows


def update(client: FlaskClient, text: str) -> int:
    return client.post("/sparql", data=text, content_type="application/sparql-update").status_code


def test_lateral_runs_on_oxigraph(client: FlaskClient) -> None:
    assert update(client, f"INSERT DATA {{ <{EX}a> <{EX}p> 1, 2 . <{EX}b> <{EX}p> 3 }}") == 204
    query = f"""SELECT ?s ?o WHERE {{ VALUES ?s {{ <{EX}a> <{EX}b> }}
        LATERAL {{ SELECT ?s ?o WHERE {{ ?s <{EX}p> ?o }} ORDER BY DESC(?o) LIMIT 1 }} }}"""
    assert bindings(client, query) == [
        {
            "s": {"type": "uri", "value": f"{EX}a"},
            "o": {"type": "literal", "value": "2", "datatype": XSD_INT},
        },
        {
            "s": {"type": "uri", "value": f"{EX}b"},
            "o": {"type": "literal", "value": "3", "datatype": XSD_INT},
        },
    ]


def test_triple_terms_run_on_oxigraph(client: FlaskClient) -> None:
    assert bindings(client, f"SELECT ?t WHERE {{ BIND(<<( <{EX}a> <{EX}p> <{EX}b> )>> AS ?t) }}") == [
        {"t": {"type": "triple", "value": {
            "subject": {"type": "uri", "value": f"{EX}a"},
            "predicate": {"type": "uri", "value": f"{EX}p"},
            "object": {"type": "uri", "value": f"{EX}b"},
        }}}
    ]  # fmt: skip


def test_adjust_runs_on_oxigraph(client: FlaskClient) -> None:
    query = (
        f'SELECT (ADJUST("2026-01-01T10:00:00Z"^^<{XSD}dateTime>, "PT2H"^^<{XSD}dayTimeDuration>) AS ?t) {{}}'
    )
    assert bindings(client, query) == [
        {"t": {"type": "literal", "value": "2026-01-01T12:00:00+02:00", "datatype": f"{XSD}dateTime"}}
    ]


def test_a_directional_language_tag_goes_in_by_update_and_out_by_query(client: FlaskClient) -> None:
    assert update(client, f'INSERT DATA {{ <{EX}a> <{EX}label> "shalom"@he--rtl }}') == 204
    assert bindings(
        client, f'SELECT ?l WHERE {{ <{EX}a> <{EX}label> ?l FILTER(?l = "shalom"@he--rtl) }}'
    ) == [{"l": {"type": "literal", "value": "shalom", "xml:lang": "he", "its:dir": "rtl"}}]


def test_what_only_oxigraph_rejects_gets_its_message_and_position(client: FlaskClient) -> None:
    query = "SELECT * WHERE { ?s ?p ?o }\nLIMIT 99999999999999999999999"
    response = client.get("/sparql", query_string={"query": query}, headers={"Accept": "application/json"})
    error = json.loads(response.data)
    assert (response.status_code, error["parameter"], error["line"], error["column"]) == (400, "query", 2, 30)
    assert "The query limit should be a non negative integer" in error["message"]


def test_what_neither_reads_gets_our_positioned_error(client: FlaskClient) -> None:
    """`CLEAR XYZ`: Oxigraph's PEG parser says 1:10 (the end), ours where the text goes wrong."""
    response = client.post("/sparql", data={"update": "CLEAR XYZ"})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("update:1:7: unexpected character 'X'")


def test_a_malformed_event_query_gets_its_dialects_positioned_error(client: FlaskClient) -> None:
    broken = SMART_GRID_QUERY.replace("SEQ (A; B+, C)", "SEQ (A; ; C)")
    with pytest.raises(SparqlSyntaxError) as expected:
        parse_event_query(broken, source="query")
    assert expected.value.line > 10  # past WITHIN and FROM STREAM, where SPARQL 1.1 stops
    response = client.post("/sparql", data=broken, content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == f"{expected.value}\n"


PLAIN_MISTAKES = [
    # EP-SPARQL reads these (the paper's draft projection; every plain query is an EP-SPARQL query),
    # but they use no event syntax: SPARQL 1.1's error, not EP-SPARQL's stream messages
    f"SELECT ?a / ?b AS ?c WHERE {{ ?s <{EX}p> ?a ; <{EX}q> ?b }}",
    f"SELECT ?s ?a / ?b AS ?c WHERE {{ ?s <{EX}p> ?a ; <{EX}q> ?b }} ORDER BY ?s",
    f"SELECT (SUM(?a) AS ?x) ?s / 2 AS ?y WHERE {{ ?s <{EX}p> ?a }} GROUP BY ?s",
    "SELECT * WHERE { ?s ?p ?o } LIMT 3",
    "SELECT * WHERE { { ?a ?b ?c } UNION }",
    "SELECT * WHERE { ?s ?p ?o . UNION { ?a ?b ?c } }",
]
EVENT_SYNTAX = [
    # (text, the dialect whose event construct it uses, where the error is: the first occurrence
    # of this part of the text, "" for its end)
    ("SELECT * WHERE { ?s ?p ?o FILTER(timestamp(?o) > 3) }", "c-sparql", "timestamp"),
    (f"SELECT * WHERE {{ ?a <{EX}p> ?b . SEQ {{ ?c <{EX}q> ?d }} }}", "ep-sparql", "SEQ"),
    (f"SELECT * WHERE {{ ?a <{EX}p> ?b . OPTIONALSEQ {{ ?c <{EX}q> ?d }} }}", "ep-sparql", "OPTIONALSEQ"),
    (f"SELECT * WHERE {{ ?a <{EX}p> ?b OPTIONALSEQ {{ ?c <{EX}q> ?d }} }}", "ep-sparql", "OPTIONALSEQ"),
    ("SELECT * FROM STREAM <http://s> [RANGE 1s STEP 1s] WHERE { ?s ?p ?o", "c-sparql", ""),
    ("SELECT * WHERE { STREAM <http://s> { ?s ?p ?o } }", "cqels", "{ ?s"),
    ("REGISTER QUERY q AS SELECT * WHERE { ?s ?p ?o }", "c-sparql", "SELECT"),
]


@pytest.mark.parametrize("text", PLAIN_MISTAKES)
def test_plain_sparql_with_a_mistake_gets_sparql_11_s_error(client: FlaskClient, text: str) -> None:
    assert event_syntax(text) is None
    with pytest.raises(SparqlSyntaxError) as expected:
        parse_query(text, source="query")
    response = client.get("/sparql", query_string={"query": text})
    assert (response.status_code, response.get_data(as_text=True)) == (400, f"{expected.value}\n")


@pytest.mark.parametrize(("text", "dialect", "where"), EVENT_SYNTAX)
def test_event_syntax_gets_the_same_dialect_error_on_sparql_and_on_queries(
    client: FlaskClient, text: str, dialect: str, where: str
) -> None:
    assert event_syntax(text) == dialect
    with pytest.raises(SparqlSyntaxError) as expected:
        parse_event_query(text, source="query")
    assert (expected.value.line, expected.value.column) == (
        1,
        (text.index(where) if where else len(text)) + 1,
    )
    answers = [
        client.get("/sparql", query_string={"query": text}),
        client.post("/sparql", data=text, content_type="application/sparql-query"),
        client.post("/queries", data=text, content_type="application/sparql-query"),
    ]
    assert [(a.status_code, a.get_data(as_text=True)) for a in answers] == [(400, f"{expected.value}\n")] * 3


def test_a_misplaced_operator_is_named_whole_where_it_starts() -> None:
    """EP-SPARQL stops after `OPTIONAL` of `OPTIONALSEQ` (SPARQL's keyword): the hint names the
    whole operator, at its first letter."""
    for operator in ("OPTIONALSEQ", "EQUALSOPTIONAL", "SEQ", "EQUALS"):
        text = f"SELECT * WHERE {{\n  ?a <{EX}p> ?b . {operator} {{ ?c <{EX}q> ?d }} }}"
        with pytest.raises(SparqlSyntaxError) as caught:
            parse_event_query(text, source="q")
        column = len(f"  ?a <{EX}p> ?b . ") + 1
        assert str(caught.value).startswith(
            f"q:2:{column}: {operator} joins two group graph patterns, {{ P1 }} {operator} "
        )


def test_timestamp_without_a_stream_is_reported_where_it_is_written() -> None:
    with pytest.raises(SparqlSyntaxError) as caught:
        parse_event_query(
            "SELECT ?s\nWHERE { ?s ?p ?o FILTER(timestamp(?o) > 3) }", source="q", dialect="c-sparql"
        )
    assert str(caught.value) == (
        "q:2:25: timestamp() is the time of a stream triple: a C-SPARQL query reads at least one "
        "FROM STREAM <iri> [RANGE ...]"
    )


def test_an_event_query_sent_as_an_update_points_to_queries(client: FlaskClient) -> None:
    response = client.post("/sparql", data={"update": SMART_GRID_QUERY})
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("update: this is a continuous event query")


# --------------------------------------------------------------------------- evaluation errors


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    """The endpoint's application with SERVICE allowed to any host (off by default:
    tests/hardening/test_remote.py)."""
    return create_app({"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False,
                       "TESTING": True, "RSEP_ALLOW_REMOTE": ("*",)})  # fmt: skip


@pytest.fixture
def failing_service() -> Iterator[str]:
    """A SPARQL service that answers every request with a 500."""

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(500)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("form", ["SELECT *", "CONSTRUCT { ?s ?p ?o }", "ASK"])
def test_a_failing_service_call_is_502_with_oxigraph_s_message(
    client: FlaskClient, failing_service: str, form: str
) -> None:
    response = client.get(
        "/sparql", query_string={"query": f"{form} WHERE {{ SERVICE <{failing_service}> {{ ?s ?p ?o }} }}"}
    )
    assert response.status_code == 502
    assert response.get_data(as_text=True).startswith(
        f"Error 500 Internal Server Error returned by {failing_service}"
    )


def test_a_service_that_is_no_http_url_is_502_and_the_result_is_dropped_here(
    client: FlaskClient, capfd: pytest.CaptureFixture[str]
) -> None:
    """pyoxigraph's results must be dropped by the thread that made them: nothing of the failed
    request may be left for the garbage collector of another thread."""
    response = client.get(
        "/sparql", query_string={"query": "SELECT * WHERE { SERVICE <urn:x> { ?s ?p ?o } }"}
    )
    assert (response.status_code, response.get_data(as_text=True)) == (
        502, "A URI scheme must be set, found urn:x\n"
    )  # fmt: skip
    collector = threading.Thread(target=gc.collect)
    collector.start()
    collector.join()
    assert "unsendable" not in capfd.readouterr().err


def test_a_service_that_fails_silently_is_no_error(client: FlaskClient) -> None:
    assert bindings(client, "SELECT * WHERE { SERVICE SILENT <urn:x> { ?s ?p ?o } }") == [{}]


def test_a_graph_that_json_ld_cannot_carry_is_406(client: FlaskClient) -> None:
    query = f"CONSTRUCT {{ <{EX}a> <{EX}says> <<( <{EX}b> <{EX}p> <{EX}c> )>> }} WHERE {{}}"
    response = client.get("/sparql", query_string={"query": query}, headers={"Accept": "application/ld+json"})
    assert response.status_code == 406
    assert "application/ld+json" in response.get_data(as_text=True)
    turtle = client.get("/sparql", query_string={"query": query}, headers={"Accept": "application/n-triples"})
    assert turtle.get_data(as_text=True) == f"<{EX}a> <{EX}says> <<( <{EX}b> <{EX}p> <{EX}c> )>> .\n"


XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INT = f"{XSD}integer"
