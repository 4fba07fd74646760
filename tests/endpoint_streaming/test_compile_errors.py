"""POST /queries: a query that parses but that the compiler rejects is a 400 at the position of
the construct at fault, as `rsep run` reports it, and nothing is registered."""

from __future__ import annotations

import pytest

from tests.support.streaming_endpoint import caught_up, service, wait_for

QUERY = """PREFIX : <http://example.org/>
SELECT *
FROM STREAM S1 <http://example.org/s>
WHERE {
  SEQ (A!; B)
  DEFINE GPM A ON S1 { ?a a :A }
  DEFINE GPM B ON S1 { ?b a :B }
}
"""


def test_post_query_the_compiler_rejects_reports_its_position(app):
    client = app.test_client()
    response = client.post("/queries", data=QUERY, content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == (
        "query:5:8: the sequence cannot start with 'A!': an optional or negated element needs an "
        "element before it to delimit the gap it talks about\n"
    )
    as_json = client.post(
        "/queries",
        data=QUERY,
        content_type="application/sparql-query",
        headers={"Accept": "application/json"},
    ).json
    assert (as_json["parameter"], as_json["line"], as_json["column"]) == ("query", 5, 8)
    assert service(app).registry.all() == []


PROV_AT = "http://www.w3.org/ns/prov#generatedAtTime"
GPM_FILTER = """PREFIX : <http://example.org/>
SELECT *
FROM STREAM S1 <http://example.org/s>
WHERE {
  SEQ (A : B)
  DEFINE GPM A ON S1 { ?x :p ?a }
  DEFINE GPM B ON S1 { ?y :q ?b FILTER_HERE }
}
"""


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("FILTER(:foo(?b))", "GPM B: the custom function <http://example.org/foo> is not supported"),
        (
            "FILTER(:foo(?b, ?a))",
            "GPM B: unsupported extension function <http://example.org/foo>, in a FILTER ",
        ),
        ("FILTER EXISTS { ?y :k ?a }", "GPM B: a FILTER with EXISTS or NOT EXISTS reads ?a, which this "),
    ],
)
def test_post_query_whose_gpm_filter_cannot_run_is_a_400_at_the_gpm(app, condition, message):
    """Refused at registration, not accepted and then failed at the first event."""
    response = app.test_client().post(
        "/queries",
        data=GPM_FILTER.replace("FILTER_HERE", condition),
        content_type="application/sparql-query",
    )
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith(f"query:7:14: {message}")
    assert service(app).registry.all() == []


def test_a_not_exists_with_its_own_variable_matches_on_the_endpoint(app):
    client = app.test_client()
    text = GPM_FILTER.replace("FILTER_HERE", "FILTER NOT EXISTS { ?y :zzz ?w }")
    response = client.post("/queries", data=text, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    query = response.json
    events = [
        ("e1", 1, ":x1 :p 1 ."),
        ("e2", 2, ":y1 :q 2 . :y1 :zzz :w1 ."),
        ("e3", 3, ":y2 :q 3 ."),
    ]
    for name, time, triples in events:
        body = f"@prefix : <http://example.org/> .\n:{name} {{ {triples} }}\n:{name} <{PROV_AT}> {time} .\n"
        posted = client.post(
            "/streams?stream=http://example.org/s", data=body, content_type="application/trig"
        )
        assert posted.status_code == 202, posted.get_data(as_text=True)
    wait_for(caught_up(app))
    summary = client.get(f"/queries/{query['id']}").json
    assert (summary["status"], summary["error"], summary["matches"]) == ("running", None, 1)
    assert _derived_from(client, query["iri"]) == ["http://example.org/e1", "http://example.org/e3"]


def _derived_from(client, query_iri: str) -> list[str]:
    """The events of the query's match graphs (rsep's match metadata)."""
    text = (
        "PREFIX prov: <http://www.w3.org/ns/prov#>\nSELECT ?e WHERE { GRAPH <urn:rsep:matches> "
        f"{{ ?g prov:wasGeneratedBy <{query_iri}> ; prov:wasDerivedFrom ?e }} }}"
    )
    response = client.post(
        "/sparql", data=text, content_type="application/sparql-query",
        headers={"Accept": "application/sparql-results+json"},
    )  # fmt: skip
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(b["e"]["value"] for b in response.json["results"]["bindings"])


WINDOWS = """PREFIX : <http://example.org/>
SELECT ?x ?y FROM NAMED WINDOW :w ON <http://example.org/s> [RANGE 10s]
WHERE {
  WINDOW :w { SEQ({?x :a ?y}, {?x :b ?y FILTER(:unknownFunction(?y))}) }
}
"""
UNKNOWN = "the custom function <http://example.org/unknownFunction> is not supported"


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        (WINDOWS, 4, 31, f"GPM P2: {UNKNOWN}"),
        (
            WINDOWS.replace(" FILTER(:unknownFunction(?y))}) }", "}) }\n  FILTER(:unknownFunction(?y))"),
            2,
            1,
            f"the window query: {UNKNOWN}",
        ),
        (
            "REGISTER STREAM <http://example.org/out> AS\nPREFIX : <http://example.org/>\n"
            "CONSTRUCT { ?x :p ?y }\nFROM STREAM <http://example.org/s> [RANGE 10s STEP 5s]\n"
            "WHERE { ?x :a ?y FILTER(:unknownFunction(?y)) }",
            3,
            1,
            f"the window query: {UNKNOWN}",
        ),
    ],
    ids=["cqels-cep-event-clause", "cqels-cep-pattern-over-the-static-data", "csparql-register-stream"],
)
def test_post_window_query_oxigraph_refuses_is_a_400_at_its_position(app, text, line, column, message):
    """Refused at registration (an event clause at its element, the query over the windows at its
    form), not accepted and then failed at the first evaluation."""
    client = app.test_client()
    response = client.post("/queries", data=text, content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == f"query:{line}:{column}: {message}\n"
    as_json = client.post(
        "/queries", data=text, content_type="application/sparql-query", headers={"Accept": "application/json"}
    ).json
    assert (as_json["parameter"], as_json["line"], as_json["column"]) == ("query", line, column)
    assert service(app).registry.all() == []


def test_a_register_query_with_a_trailing_values_posted_to_sparql_is_a_400_at_values(app):
    text = (
        "REGISTER QUERY q AS\nSELECT ?s FROM STREAM <http://example.org/s> [RANGE 10s STEP 5s]\n"
        "WHERE { ?s ?p ?o }\n   VALUES ?s { <http://example.org/a> }"
    )
    response = app.test_client().post("/sparql", data=text, content_type="application/sparql-query")
    assert response.status_code == 400
    assert response.get_data(as_text=True) == (
        "query:4:4: a trailing VALUES clause does not apply to a C-SPARQL query\n"
    )
    assert service(app).registry.all() == []


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        (
            "REGISTER STREAM <http://example.org/out> AS\nPREFIX : <http://example.org/>\n"
            "CONSTRUCT { [] :saw ?c }\nFROM STREAM <http://example.org/s> [RANGE 2s STEP 0.0004ms]\n"
            "WHERE { ?c :on ?r }",
            4,
            51,
            "STEP 0.0004ms: a duration here must be at least 1µs (windows count time in whole microseconds, "
            "and this rounds to 0)",
        ),
        (
            "REGISTER QUERY q COMPUTED EVERY 5s AS\nSELECT ?c\n"
            "FROM STREAM <http://example.org/s> [RANGE TRIPLES 2]\nWHERE { ?c ?p ?r }",
            1,
            18,
            "COMPUTED EVERY 5s needs time-based windows: the count window [RANGE TRIPLES 2] of "
            "<http://example.org/s> closes at each arrival, so the query is evaluated then, not periodically",
        ),
        (
            "SELECT ?c\nFROM STREAM <http://example.org/s> [RANGE 2s STEP 1s]\n"
            "WHERE { ?c ?p ?r FILTER(timestamp(?c, ?g) > 0) }",
            3,
            25,
            "timestamp(?c, ?g): the second argument names a stream by its IRI (<http://example.org/s>); the "
            "windows are merged into the default graph, so no GRAPH ?g binds a stream",
        ),
    ],
    ids=["zero-step-producer", "computed-every-count-window", "timestamp-variable-stream"],
)
def test_post_window_query_rsep_cannot_run_is_a_400_at_the_construct(app, text, line, column, message):
    """Refused at registration with its position, never registered and failed later (a producer whose
    STEP rounded to 0 µs used to be a 201, then a 500 on the next POST /streams)."""
    client = app.test_client()
    response = client.post(
        "/queries", data=text, content_type="application/sparql-query", headers={"Accept": "application/json"}
    )
    assert response.status_code == 400
    found = response.json
    assert (found["parameter"], found["line"], found["column"], found["message"]) == (
        "query",
        line,
        column,
        message,
    )
    assert service(app).registry.all() == []
